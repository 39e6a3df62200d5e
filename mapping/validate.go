package mapping

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dynafold/dynafold/source"
)

// validateStatic checks the parts of the file that do not depend on the
// source: version, source, target, and the shape of each entity and
// access pattern.
func validateStatic(cfg *Config, errs *Errors) *TableSchema {
	if cfg.Version != 1 {
		errs.add("version", "unsupported mapping version %d (this dynafold reads version: 1)", cfg.Version)
	}
	switch cfg.Source.Driver {
	case "postgres", "mysql":
	case "":
		// The DSN's form names the driver (postgres://, mysql://,
		// user:pw@tcp(…)); a DSN given on the command line or in the
		// environment is checked when it is parsed.
		if dsn := cfg.Source.DSN; dsn != "" && source.InferDriver(dsn) == "" {
			errs.add("source.driver", "missing the source driver: the DSN's form does not name one (postgres://…, mysql://… or user:password@tcp(host:port)/db do); set driver: postgres or mysql")
		}
	default:
		if looksSecret(cfg.Source.Driver) {
			errs.add("source.driver", "unknown driver %s (postgres or mysql; a DSN goes in source.dsn)", notShown)
			break
		}
		errs.add("source.driver", "unknown driver %q (postgres or mysql)", cfg.Source.Driver)
	}
	ts := tableSchema(&cfg.Target, errs)
	if len(cfg.Entities) == 0 {
		errs.add("entities", "no entities: map at least one table")
	}
	if cfg.Defaults != nil {
		checkPolicy("defaults.on_error", cfg.Defaults.OnError, errs)
	}
	for i, p := range cfg.Patterns {
		validatePattern(fmt.Sprintf("access_patterns[%d]", i), p, ts, errs)
	}
	return ts
}

// validEntityShape checks what must hold before an entity can be compiled.
func validEntityShape(name string, e *Entity, errs *Errors) bool {
	path := "entities." + name
	before := len(*errs)
	switch {
	case e.From == "" && e.Query == "":
		errs.add(path, "set from: (a table) or query: (a read-only SELECT)")
	case e.From != "" && e.Query != "":
		errs.add(path, "set only one of from: and query:")
	case e.Query != "" && len(e.PrimaryKey) == 0:
		errs.add(path+".primary_key", "an entity read from a query must declare the columns that identify a row, used for paging and checkpoints")
	}
	if e.Query != "" {
		q := strings.ToLower(strings.TrimSpace(e.Query))
		if !strings.HasPrefix(q, "select") && !strings.HasPrefix(q, "with") {
			errs.add(path+".query", "must be a SELECT (or WITH … SELECT) statement")
		}
		if strings.Contains(strings.TrimRight(strings.TrimSpace(e.Query), ";"), ";") {
			errs.add(path+".query", "must be a single statement")
		}
	}
	checkPolicy(path+".on_error", e.OnError, errs)
	if strings.ContainsAny(name, " \t") || name == "" {
		errs.add(path, "entity names are single words")
	}
	return len(*errs) == before
}

func checkPolicy(path, p string, errs *Errors) {
	switch Policy(p) {
	case "", PolicyFail, PolicySkip, PolicyReject:
	default:
		errs.add(path, "unknown policy %q (fail, skip or reject)", p)
	}
}

// parseOffset reads a TTL offset: a Go duration ("168h", "90m") or whole
// days ("7d"). Empty is zero.
func parseOffset(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid offset %q: days must be a whole number, e.g. 7d", s)
		}
		// The range of the hour form (a time.Duration), so that n*86400
		// cannot wrap around to a date in the past.
		if maxDays := int64(math.MaxInt64 / (24 * time.Hour)); n > maxDays || n < -maxDays {
			return 0, fmt.Errorf("invalid offset %q: at most %dd", s, maxDays)
		}
		return n * 86400, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid offset %q: use a duration such as 7d, 168h or 30m", s)
	}
	return int64(d / time.Second), nil
}

func validatePattern(path string, p *AccessPattern, ts *TableSchema, errs *Errors) {
	if p == nil {
		errs.add(path, "empty access pattern")
		return
	}
	if p.Name == "" {
		errs.add(path+".name", "every access pattern needs a name")
	}
	q := p.Query
	if q.PK == "" {
		errs.add(path+".query.pk", "a query needs the partition key value")
	}
	if q.Index != "" && ts.Index(q.Index) == nil {
		errs.add(path+".query.index", "index %q is not declared under target.indexes", q.Index)
	}
	conds := 0
	for _, c := range []*string{q.SKEquals, q.SKBeginsWith, q.SKLess, q.SKLessEq, q.SKGreater, q.SKGreaterEq} {
		if c != nil {
			conds++
		}
	}
	if q.SKBetween != nil {
		conds++
		if len(q.SKBetween) != 2 {
			errs.add(path+".query.sk_between", "between takes two values: [low, high]")
		}
	}
	if conds > 1 {
		errs.add(path+".query", "a query takes at most one sort-key condition")
	}
	if q.Limit < 0 {
		errs.add(path+".query.limit", "limit must be positive")
	}
	if q.ShardRange < 0 || (q.ShardRange > 0 && !strings.Contains(q.PK, "${shard}")) {
		errs.add(path+".query.shards", "shards: N expands ${shard} in pk over 0..N-1; pk has no ${shard}")
	}
	validateCounts(path+".expect", p.Expect, errs)
	validatePatternMeaning(path, p, errs)
}

// validateCounts checks that a pattern's count expectations can all hold.
func validateCounts(path string, e *PatternCheck, errs *Errors) {
	if e == nil {
		return
	}
	for _, c := range []struct {
		key string
		n   *int
	}{{"count", e.Count}, {"min_count", e.MinCount}, {"max_count", e.MaxCount}} {
		if c.n != nil && *c.n < 0 {
			errs.add(path+"."+c.key, "a count cannot be negative, not %d", *c.n)
		}
	}
	if e.MinCount != nil && e.MaxCount != nil && *e.MinCount > *e.MaxCount {
		errs.add(path, "min_count %d is more than max_count %d: no count meets both", *e.MinCount, *e.MaxCount)
	}
}

// patternWarnings finds access patterns the declared keys cannot serve.
func patternWarnings(cfg *Config, ts *TableSchema) []*Error {
	var out []*Error
	for i, p := range cfg.Patterns {
		if p == nil {
			continue
		}
		path := fmt.Sprintf("access_patterns[%d]", i)
		q := p.Query
		hasSKCond := q.SKEquals != nil || q.SKBeginsWith != nil || q.SKLess != nil || q.SKLessEq != nil ||
			q.SKGreater != nil || q.SKGreaterEq != nil || q.SKBetween != nil
		sk := ts.SK
		where := "the table"
		if q.Index != "" {
			ix := ts.Index(q.Index)
			if ix == nil {
				continue
			}
			sk, where = ix.SK, "index "+ix.Name
		}
		if hasSKCond && sk == nil {
			out = append(out, &Error{Path: path + ".query", Msg: fmt.Sprintf("pattern %q has a sort-key condition but %s has no sort key", p.Name, where)})
		}
		if q.SKBeginsWith != nil && sk != nil && sk.Type == TypeN {
			out = append(out, &Error{Path: path + ".query.sk_begins_with", Msg: fmt.Sprintf("pattern %q uses begins_with on %s, whose sort key is a Number", p.Name, where)})
		}
	}
	return out
}
