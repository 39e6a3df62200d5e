package syncfuzz

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// DDLCounts are the schema changes a run made, by the outcome the design
// gives them and by kind, and what sync's log said it did about them.
type DDLCounts struct {
	Continue int `json:"continue"`
	Rederive int `json:"rederive"`
	Stop     int `json:"stop"`
	// StopsMet are the stops sync made as it must: exit 2, naming the
	// table and the column.
	StopsMet int `json:"stops_met"`
	// Refused are changes the server refused (a dependent object, values
	// a narrowing would cut); Skipped, draws with nothing to change.
	Refused int `json:"refused"`
	Skipped int `json:"skipped"`
	// Seconds is the time the fuzzer spent on them: waiting for the
	// locks, the statements, a stop awaited, undone and sync restarted.
	// (What sync spends re-deriving shows in the phases' catch-up.)
	Seconds float64 `json:"seconds"`
	// Kinds counts the changes made, by kind.
	Kinds map[string]int `json:"kinds,omitempty"`
	// Sync counts the schema changes sync's logs reported, by action. A
	// change may be reported more than once (a sync killed before it
	// recorded it meets it again), and a re-derive where a continue was
	// expected is exact too, so these are figures, not a check.
	Sync map[string]int `json:"sync_actions,omitempty"`
}

func (c *DDLCounts) made() int { return c.Continue + c.Rederive + c.Stop }

func (c *DDLCounts) String() string {
	s := fmt.Sprintf("%d schema changes (continue %d, rederive %d, stop %d; %d stops met; %d refused, %d skipped; %.1fs)",
		c.made(), c.Continue, c.Rederive, c.Stop, c.StopsMet, c.Refused, c.Skipped, c.Seconds)
	var kinds []string
	for _, k := range ddlKindNames() {
		if n := c.Kinds[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	if len(kinds) > 0 {
		s += ": " + strings.Join(kinds, ", ")
	}
	if len(c.Sync) > 0 {
		s += fmt.Sprintf("; sync's logs: continue %d, rederive %d, stop %d", c.Sync[string(goesOn)], c.Sync[string(rederives)], c.Sync[string(stops)])
	}
	return s
}

func (c *DDLCounts) count(kind string, o outcome) {
	switch o {
	case goesOn:
		c.Continue++
	case rederives:
		c.Rederive++
	case stops:
		c.Stop++
	}
	if c.Kinds == nil {
		c.Kinds = map[string]int{}
	}
	c.Kinds[kind]++
}

// ddlDraws decides which operations are schema changes and draws them,
// from a generator of its own: one draw per operation whatever happens,
// so that the schema changes of a seed sit at the same operations in a
// shorter run (--shrink), and the other operations' draws are those of
// a run without them.
type ddlDraws struct {
	rate float64
	rng  *rand.Rand
	// v makes the defaults' values from rng.
	v *values
}

func newDDLDraws(o Options, f *fuzzer) *ddlDraws {
	// The engine and the design are part of the stream: one seed over
	// several designs makes other changes in each.
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", o.Engine, o.Design.Name)
	rng := rand.New(rand.NewPCG(o.Seed, 0xdd1^h.Sum64()))
	return &ddlDraws{rate: o.DDLRate, rng: rng, v: &values{rng: rng, d: f.d, roles: f.roles}}
}

// due draws whether the next operation is a schema change.
func (d *ddlDraws) due() bool { return d.rate > 0 && d.rng.Float64() < d.rate }

// draw chooses a kind among those with something to change, weighted,
// then its target.
func (f *fuzzer) drawChange(ctx context.Context) (*change, error) {
	type option struct {
		k  *ddlKind
		ts []target
	}
	var opts []option
	total := 0
	for i := range ddlKinds {
		k := &ddlKinds[i]
		if k.on(f.o.Engine) == "" {
			continue
		}
		if ts := k.targets(f); len(ts) > 0 {
			opts = append(opts, option{k, ts})
			total += k.weight
		}
	}
	if total == 0 {
		return nil, nil
	}
	r := f.ddl.rng.IntN(total)
	for _, o := range opts {
		if r -= o.k.weight; r >= 0 {
			continue
		}
		tg := o.ts[f.ddl.rng.IntN(len(o.ts))]
		ch, err := o.k.make(ctx, f, tg)
		if ch != nil {
			ch.kind, ch.outcome, ch.table = o.k.name, o.k.on(f.o.Engine), tg.t.name
			if tg.c != nil {
				ch.column = tg.c.name
			}
		}
		return ch, err
	}
	panic("unreachable: the draw is below the total weight")
}

// schemaChange makes one drawn change between transactions. A stop is
// awaited, checked and undone here, and sync started again: the
// background sync it returns is the one running after.
func (f *fuzzer) schemaChange(ctx context.Context, c *cli, sessions []*session, bg *background, phase, op int) (*background, error) {
	start := time.Now()
	defer func() { f.res.DDL.Seconds += time.Since(start).Seconds() }()
	if err := f.settle(ctx, sessions); err != nil {
		return bg, err
	}
	s := sessions[0]
	ch, err := f.drawChange(ctx)
	if err != nil {
		return bg, fmt.Errorf("drawing a schema change: %w", err)
	}
	if ch == nil {
		f.res.DDL.Skipped++
		return bg, nil
	}
	for _, stmt := range ch.stmts {
		if err := f.execBetween(ctx, s, stmt); err != nil {
			if !serverError(err) || f.d.isLockWait(err) {
				return bg, err
			}
			// Refused as a whole (PostgreSQL's DDL is transactional, an
			// InnoDB ALTER atomic): the schema is as it was.
			f.log.statement(s.id, stmt+" -- refused")
			f.res.DDL.Refused++
			f.printf("schema change %s refused: %v", ch.kind, err)
			return bg, nil
		}
	}
	f.res.DDL.count(ch.kind, ch.outcome)
	if ch.kind == "readd_column" || ch.kind == "drop_mapped_column" {
		f.remade[ch.table+"."+ch.column] = true
	}
	f.printf("schema change %s (%s) in %.1fs: %s", ch.kind, ch.outcome, time.Since(start).Seconds(), strings.Join(ch.stmts, "; "))
	if err := f.afterDDL(ctx, ch.table, ch.column, ch.narrowTo); err != nil {
		return bg, err
	}
	if ch.outcome != stops {
		return bg, nil
	}
	return f.awaitStop(ctx, c, s, bg, ch, phase, op)
}

// afterDDL reads the schema again and brings the values up to it: fresh
// counters for integer columns made anew, and the palette of a narrowed
// column cut to what it holds.
func (f *fuzzer) afterDDL(ctx context.Context, table, col string, narrowTo int) error {
	if err := f.introspect(ctx); err != nil {
		return err
	}
	if narrowTo > 0 {
		p := f.v.palette[table][col]
		kept := p[:0]
		for _, s := range p {
			if len([]rune(s)) <= narrowTo {
				kept = append(kept, s)
			}
		}
		f.v.palette[table][col] = kept
	}
	return f.v.refresh(ctx, f.db, f.s)
}

// stopWait bounds the wait for sync to stop on a change it must stop on:
// it judges PostgreSQL's tables at the next change to them (the poke) or
// every 30 s, MySQL's at the statement; DynamoDB faults may hold up the
// round before it.
const stopWait = 3 * time.Minute

// awaitStop requires sync to stop on ch with exit 2 and a message naming
// the table and the column, then undoes ch as the fix says and starts
// sync again.
func (f *fuzzer) awaitStop(ctx context.Context, c *cli, s *session, bg *background, ch *change, phase, op int) (*background, error) {
	changed := time.Now()
	if err := f.poke(ctx, s, ch.table); err != nil {
		return bg, err
	}
	for deadline := time.Now().Add(stopWait); !bg.exited(); {
		if time.Now().After(deadline) {
			f.res.Divergence = &Divergence{Phase: phase, Op: op, Sync: fmt.Sprintf("sync went on for %s after %s (%s), on which it must stop with exit 2:\n%s",
				stopWait, strings.Join(ch.stmts, "; "), ch.kind, tail(bg.out.String(), 20))}
			return bg, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := bg.out.String()
	f.noteSync(out)
	code := -1
	var exit *exec.ExitError
	if errors.As(bg.err, &exit) {
		code = exit.ExitCode()
	}
	said := ch.stopMessage().FindString(out)
	if code != 2 || said == "" {
		f.res.Divergence = &Divergence{Phase: phase, Op: op, Sync: fmt.Sprintf("after %s (%s) sync must exit 2 naming table %s column %s (%s); it exited %d (%v):\n%s",
			strings.Join(ch.stmts, "; "), ch.kind, ch.table, ch.column, strings.Join(ch.stopKinds, " or "), code, bg.err, tail(out, 20))}
		return bg, nil
	}
	f.res.DDL.StopsMet++
	f.printf("sync stopped (exit 2) %.1fs after the change: %s…; undone: %s", time.Since(changed).Seconds(), said, strings.Join(ch.undo, "; "))
	for _, stmt := range ch.undo {
		if err := f.execBetween(ctx, s, stmt); err != nil {
			return bg, fmt.Errorf("undoing %s: %w", ch.kind, err)
		}
	}
	if err := f.afterDDL(ctx, ch.table, ch.column, 0); err != nil {
		return bg, err
	}
	return c.startSync()
}

// poke updates the first row of table to itself (or inserts one into an
// empty table) after a change sync must stop on: pgoutput shows a
// table's columns again only before its next change, and sync would
// otherwise judge the table at its next 30 s check. MySQL's log carries
// the statement, and the poke changes nothing there.
func (f *fuzzer) poke(ctx context.Context, s *session, table string) error {
	t := f.s.tables[table]
	texts := make([]string, len(t.pk))
	for i, c := range t.pk {
		texts[i] = f.d.text(c)
	}
	rows, err := f.query(ctx, s, fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT 1", strings.Join(texts, ", "),
		f.d.quote(t.name), f.qualified(t.name, t.pk)))
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		err = f.insert(ctx, s, t)
	} else {
		pk := make([]string, len(t.pk))
		for i, v := range rows[0] {
			pk[i] = f.literal(v)
		}
		err = f.exec(ctx, s, fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s", f.d.quote(t.name), f.d.quote(t.pk[0]), f.d.quote(t.pk[0]), f.where(t.pk, pk)))
	}
	if err != nil && !serverError(err) && !errors.Is(err, errNoRow) {
		return err
	}
	return nil
}

// schemaChangeLog matches a schema change sync logged, in JSON or text.
var schemaChangeLog = regexp.MustCompile(`(?:"msg":"schema change"[^\n]*"action":"|msg="schema change"[^\n]* action=)(\w+)`)

// noteSync counts the schema changes a sync's output reports.
func (f *fuzzer) noteSync(out string) {
	for _, m := range schemaChangeLog.FindAllStringSubmatch(out, -1) {
		if f.res.DDL.Sync == nil {
			f.res.DDL.Sync = map[string]int{}
		}
		f.res.DDL.Sync[m[1]]++
	}
}
