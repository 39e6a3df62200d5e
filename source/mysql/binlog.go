package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/source"
)

// Changes is MySQL's or MariaDB's change log for live sync: the binary
// log, read as a replica would (COM_BINLOG_DUMP) under a server_id of
// dynafold's own. Nothing is created on the server: unlike a PostgreSQL
// slot, the binlog is not retained for dynafold, so the operator's binlog
// retention must cover the time sync may be stopped or behind.
type Changes struct {
	src      *Source
	serverID uint32
	// maxBinlogSize is the server's max_binlog_size, for Distance across
	// files.
	maxBinlogSize atomic.Int64
	// fileSizes are the binlog files' sizes by file number, as SHOW BINARY
	// LOGS last reported them, for Distance across files.
	fileSizes atomic.Pointer[map[int64]int64]
	// heartbeat is the table Heartbeat writes ("": none); heartbeatMade
	// is set once it is known to exist.
	heartbeat     string
	heartbeatMade bool
}

var (
	_ source.ChangeSource = (*Changes)(nil)
	_ source.Heartbeater  = (*Changes)(nil)
)

// NewChanges reads src's binlog as replica serverID.
func (s *Source) NewChanges(serverID uint32) *Changes {
	c := &Changes{src: s, serverID: serverID}
	c.maxBinlogSize.Store(1 << 30) // the servers' default, until read
	return c
}

// DefaultServerID derives dynafold's replica server_id from the table
// name: 2^31 plus the name's FNV-1a hash modulo 2^31-1, so that it is
// stable for one table, differs between tables, and stays out of the low
// range where real servers and replicas are numbered.
func DefaultServerID(table string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(table))
	return 1<<31 + h.Sum32()%(1<<31-1)
}

// ServerID returns the server_id the binlog is read under.
func (c *Changes) ServerID() uint32 { return c.serverID }

func (c *Changes) flavor() string {
	if c.src.mariadb {
		return "mariadb"
	}
	return "mysql"
}

// variables reads server variables by name; absent ones are "".
func (c *Changes) variables(ctx context.Context, names ...string) (map[string]string, error) {
	out := make(map[string]string, len(names))
	quoted := make([]string, len(names))
	for i, n := range names {
		out[n] = ""
		quoted[i] = "'" + n + "'"
	}
	rows, err := c.src.db.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ("+strings.Join(quoted, ", ")+")")
	if err != nil {
		return nil, c.src.dsn.RedactError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[strings.ToLower(k)] = v
	}
	return out, c.src.dsn.RedactError(rows.Err())
}

// Check implements the prerequisite checks of live sync: a binary log in
// row format with full row images, a server_id of dynafold's own, and the
// replication privileges. Retention is not a problem but a warning
// (Retention).
func (c *Changes) Check(ctx context.Context, needs []source.TableNeed) ([]source.Problem, error) {
	v, err := c.variables(ctx, "log_bin", "binlog_format", "binlog_row_image", "server_id", "max_binlog_size")
	if err != nil {
		return nil, fmt.Errorf("checking binlog settings: %w", err)
	}
	if n, err := strconv.ParseInt(v["max_binlog_size"], 10, 64); err == nil && n > 0 {
		c.maxBinlogSize.Store(n)
	}
	c.readFileSizes(ctx)
	var probs []source.Problem
	cnf := "in the server's option file ([mysqld] section) and restart; Amazon RDS and Aurora: in the DB parameter group"
	if !strings.EqualFold(v["log_bin"], "ON") && v["log_bin"] != "1" {
		probs = append(probs, source.Problem{
			What: "the binary log is off (log_bin): live sync reads the binlog",
			Fix:  "start the server with log_bin=binlog and server_id=1 " + cnf + " (Amazon RDS: enable automated backups)",
		})
	}
	if !strings.EqualFold(v["binlog_format"], "ROW") {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("binlog_format is %s; live sync needs row-based events", v["binlog_format"]),
			Fix:  "SET GLOBAL binlog_format = 'ROW'; and binlog_format=ROW " + cnf + " (sessions keep the format they started with: reconnect the application)",
		})
	}
	if !strings.EqualFold(v["binlog_row_image"], "FULL") {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("binlog_row_image is %s; live sync needs full before- and after-images of changed rows", v["binlog_row_image"]),
			Fix:  "SET GLOBAL binlog_row_image = 'FULL'; and binlog_row_image=FULL " + cnf,
		})
	}
	if v["server_id"] == strconv.FormatUint(uint64(c.serverID), 10) {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("the source's own server_id is %s, the server_id dynafold would read the binlog as", v["server_id"]),
			Fix:  "pass --server-id with a number no server or replica of this source uses",
		})
	}
	if cfg, err := mysql.ParseDSN(c.src.dsn.Secret()); err == nil && cfg.Net != "tcp" {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("the DSN connects by %s; the binlog is read over TCP", cfg.Net),
			Fix:  "give the source DSN a host and port: user:password@tcp(host:3306)/database",
		})
	}
	grants, err := c.grants(ctx)
	if err != nil {
		return nil, fmt.Errorf("checking privileges (SHOW GRANTS): %w", err)
	}
	var missing []string
	for _, p := range []struct{ name, alt string }{
		{"REPLICATION SLAVE", "REPLICATION REPLICA"},
		{"REPLICATION CLIENT", "BINLOG MONITOR"}, // MariaDB 10.5 renamed it
	} {
		if !grants.has(p.name) && !grants.has(p.alt) {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		probs = append(probs, source.Problem{
			What: fmt.Sprintf("user %s lacks %s, needed to read the binlog", grants.user, strings.Join(missing, " and ")),
			Fix:  fmt.Sprintf("GRANT %s ON *.* TO %s;", strings.Join(missing, ", "), grants.user),
		})
	}
	return probs, nil
}

// grantSet is what SHOW GRANTS says the current user may do on *.*.
type grantSet struct {
	user  string
	all   bool
	privs map[string]bool
}

func (g grantSet) has(p string) bool { return g.all || g.privs[p] }

func (c *Changes) grants(ctx context.Context) (grantSet, error) {
	g := grantSet{privs: map[string]bool{}}
	if err := c.src.db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&g.user); err != nil {
		return g, c.src.dsn.RedactError(err)
	}
	if at := strings.LastIndexByte(g.user, '@'); at >= 0 {
		g.user = "'" + g.user[:at] + "'@'" + g.user[at+1:] + "'"
	}
	rows, err := c.src.db.QueryContext(ctx, "SHOW GRANTS")
	if err != nil {
		return g, c.src.dsn.RedactError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return g, err
		}
		privs, on, ok := strings.Cut(strings.TrimPrefix(line, "GRANT "), " ON ")
		if !ok || !strings.HasPrefix(strings.TrimSpace(on), "*.*") {
			continue // grants on one database or table do not include replication
		}
		for _, p := range strings.Split(privs, ",") {
			p = strings.ToUpper(strings.TrimSpace(p))
			switch p {
			case "ALL PRIVILEGES", "ALL", "SUPER":
				g.all = true
			}
			g.privs[p] = true
		}
	}
	return g, c.src.dsn.RedactError(rows.Err())
}

// Retention describes how long the server keeps binlogs, for a warning:
// sync must not be stopped or behind for longer, or the changes it has
// not read are gone.
func (c *Changes) Retention(ctx context.Context) (string, error) {
	v, err := c.variables(ctx, "binlog_expire_logs_seconds", "expire_logs_days")
	if err != nil {
		return "", fmt.Errorf("reading binlog retention: %w", err)
	}
	secs, _ := strconv.ParseFloat(v["binlog_expire_logs_seconds"], 64)
	days, _ := strconv.ParseFloat(v["expire_logs_days"], 64)
	switch {
	case secs > 0:
		return fmt.Sprintf("binlogs are purged after %s (binlog_expire_logs_seconds = %.0f): the initial load, and any stop of sync, must be shorter, or sync has to start over", render.Seconds(secs), secs), nil
	case days > 0:
		return fmt.Sprintf("binlogs are purged after %s (expire_logs_days = %g): the initial load, and any stop of sync, must be shorter, or sync has to start over", render.Seconds(days*86400), days), nil
	}
	return "binlogs are never purged automatically (binlog_expire_logs_seconds = 0): keep them while sync runs, and purge only files before the sync checkpoint's position", nil
}

// Head implements source.ChangeSource: the end of the binlog, with the GTID
// set where the server has GTIDs.
func (c *Changes) Head(ctx context.Context) (source.Position, error) {
	p, err := c.head(ctx)
	if err != nil {
		return "", err
	}
	return p.position(), nil
}

func (c *Changes) head(ctx context.Context) (binlogPos, error) {
	var p binlogPos
	// MySQL 8.4 renamed SHOW MASTER STATUS; MariaDB and older MySQL keep it.
	status, err := c.row(ctx, "SHOW MASTER STATUS")
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && myErr.Number == erParseError {
		status, err = c.row(ctx, "SHOW BINARY LOG STATUS")
	}
	if err != nil {
		return p, fmt.Errorf("reading the binlog position: %w", err)
	}
	if status == nil {
		return p, errors.New("reading the binlog position: the binary log is off (log_bin)")
	}
	p.file = status["File"]
	n, err := strconv.ParseUint(status["Position"], 10, 32)
	if err != nil {
		return p, fmt.Errorf("reading the binlog position: bad Position %q", status["Position"])
	}
	p.pos = uint32(n)
	if c.src.mariadb {
		if err := c.src.db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_pos").Scan(&p.gtid); err != nil {
			return p, fmt.Errorf("reading gtid_binlog_pos: %w", c.src.dsn.RedactError(err))
		}
	} else if v, err := c.variables(ctx, "gtid_mode"); err == nil && strings.EqualFold(v["gtid_mode"], "ON") {
		p.gtid = strings.ReplaceAll(status["Executed_Gtid_Set"], "\n", "")
	}
	return p, nil
}

// MySQL's error number for a statement it does not know.
const erParseError = 1064 // ER_PARSE_ERROR

// row runs a statement and returns its first row by column name (nil when
// there is none).
func (c *Changes) row(ctx context.Context, stmt string) (map[string]string, error) {
	rows, err := c.src.db.QueryContext(ctx, stmt)
	if err != nil {
		return nil, c.src.dsn.RedactError(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		return nil, c.src.dsn.RedactError(rows.Err())
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := rows.Scan(dest...); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(cols))
	for i, col := range cols {
		out[col] = vals[i].String
	}
	return out, nil
}

// Prepare implements source.ChangeSource. There is no slot on MySQL: a new
// sync records the binlog's current end (Created), waits until the
// transactions before it are visible (settle), and the initial load then
// follows; a sync with a checkpoint goes on from its position if the
// server still has that binlog file, and otherwise records the current end
// again (Created), which tells the engine that changes were lost.
func (c *Changes) Prepare(ctx context.Context, _ []source.TableNeed, resume source.Position) (source.StreamStart, error) {
	if resume != "" {
		p, err := parsePos(resume)
		if err != nil {
			return source.StreamStart{}, err
		}
		kept, err := c.hasFile(ctx, p.file)
		if err != nil {
			return source.StreamStart{}, err
		}
		if kept {
			return source.StreamStart{From: resume}, nil
		}
	}
	p, err := c.head(ctx)
	if err != nil {
		return source.StreamStart{}, err
	}
	if err := c.settle(ctx, p); err != nil {
		return source.StreamStart{}, err
	}
	return source.StreamStart{From: p.position(), Created: true}, nil
}

// binaryLogs lists the server's binlog files with their sizes.
func (c *Changes) binaryLogs(ctx context.Context) (map[string]int64, error) {
	rows, err := c.src.db.QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return nil, fmt.Errorf("listing binlog files: %w", c.src.dsn.RedactError(err))
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	dest := make([]any, len(cols))
	var file string
	var size int64
	dest[0], dest[1] = &file, &size
	for i := 2; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	out := map[string]int64{}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out[file] = size
	}
	return out, c.src.dsn.RedactError(rows.Err())
}

// hasFile reports whether the server still has the named binlog file.
func (c *Changes) hasFile(ctx context.Context, name string) (bool, error) {
	logs, err := c.binaryLogs(ctx)
	if err != nil {
		return false, err
	}
	_, ok := logs[name]
	return ok, nil
}

// readFileSizes refreshes the file sizes Distance uses; without them (no
// privilege, a failure) it estimates.
func (c *Changes) readFileSizes(ctx context.Context) {
	logs, err := c.binaryLogs(ctx)
	if err != nil {
		return
	}
	sizes := make(map[int64]int64, len(logs))
	for f, n := range logs {
		sizes[fileSeq(f)] = n
	}
	c.fileSizes.Store(&sizes)
}

// Cleanup implements source.ChangeSource: dynafold creates nothing on a
// MySQL or MariaDB server, so there is nothing to remove.
func (c *Changes) Cleanup(context.Context) ([]string, error) { return nil, nil }

// Close implements source.ChangeSource; streams close themselves.
func (c *Changes) Close() error { return nil }
