package mysql

import (
	"fmt"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/dynafold/dynafold/source"
)

// A binlog position in text: "binlog.000012:4711", the binlog file and the
// byte offset just past an event, followed by ";gtid=<set>" when the
// server has GTIDs (MariaDB's domain-server-seq list, MySQL's uuid:n set).
// The GTID set, when present, is where streaming restarts and how two
// positions are ordered; the file and offset give the distance in bytes.
type binlogPos struct {
	file string
	pos  uint32
	gtid string
}

const gtidSep = ";gtid="

func (p binlogPos) String() string {
	s := p.file + ":" + strconv.FormatUint(uint64(p.pos), 10)
	if p.gtid != "" {
		s += gtidSep + p.gtid
	}
	return s
}

func (p binlogPos) position() source.Position { return source.Position(p.String()) }

func parsePos(s source.Position) (binlogPos, error) {
	var p binlogPos
	text := string(s)
	if i := strings.Index(text, gtidSep); i >= 0 {
		p.gtid = text[i+len(gtidSep):]
		text = text[:i]
	}
	i := strings.LastIndexByte(text, ':')
	if i <= 0 {
		return p, fmt.Errorf("binlog position %q is not file:offset", s)
	}
	n, err := strconv.ParseUint(text[i+1:], 10, 32)
	if err != nil {
		return p, fmt.Errorf("binlog position %q: bad offset: %w", s, err)
	}
	p.file, p.pos = text[:i], uint32(n)
	return p, nil
}

// fileSeq is the numeric suffix of a binlog file name (binlog.000012 → 12),
// which orders files; -1 when there is none.
func fileSeq(name string) int64 {
	i := strings.LastIndexByte(name, '.')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func cmp[T int64 | uint32](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparePos orders positions by their GTID sets when both have one and
// one contains the other, otherwise by file and offset.
func comparePos(flavor string, a, b binlogPos) int {
	if a.gtid != "" && b.gtid != "" {
		x, errx := gomysql.ParseGTIDSet(flavor, a.gtid)
		y, erry := gomysql.ParseGTIDSet(flavor, b.gtid)
		if errx == nil && erry == nil {
			switch xy, yx := x.Contain(y), y.Contain(x); {
			case xy && yx:
				return 0
			case xy:
				return 1
			case yx:
				return -1
			}
		}
	}
	if c := cmp(fileSeq(a.file), fileSeq(b.file)); c != 0 {
		return c
	}
	return cmp(a.pos, b.pos)
}

// distance is the bytes of binlog from a to b. Within one file it is
// exact; across files it uses the files' sizes as SHOW BINARY LOGS last
// reported them (sizes, by file number), and max_binlog_size (the size at
// which the server rotates) for a file it has no size for.
func distance(a, b binlogPos, sizes map[int64]int64, maxFile int64) int64 {
	fa, fb := fileSeq(a.file), fileSeq(b.file)
	switch {
	case fa == fb:
		if b.pos <= a.pos {
			return 0
		}
		return int64(b.pos - a.pos)
	case fa > fb || fa < 0:
		return 0
	}
	size := func(f int64) int64 {
		if n, ok := sizes[f]; ok {
			return n
		}
		return maxFile
	}
	d := max(size(fa)-int64(a.pos), 0)
	for f := fa + 1; f < fb; f++ {
		d += size(f)
	}
	return d + int64(b.pos)
}

// Compare implements source.ChangeSource: positions are ordered by GTID set
// where both have one, otherwise by binlog file number and offset.
func (c *Changes) Compare(a, b source.Position) int {
	x, _ := parsePos(a)
	y, _ := parsePos(b)
	return comparePos(c.flavor(), x, y)
}

// Distance implements source.ChangeSource (see distance for what is exact).
// It runs no query: file sizes are read at Check and at each rotation.
func (c *Changes) Distance(from, to source.Position) int64 {
	x, errx := parsePos(from)
	y, erry := parsePos(to)
	if errx != nil || erry != nil {
		return 0
	}
	var sizes map[int64]int64
	if p := c.fileSizes.Load(); p != nil {
		sizes = *p
	}
	return distance(x, y, sizes, c.maxBinlogSize.Load())
}
