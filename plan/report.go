package plan

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/reverse"
	"github.com/dynafold/dynafold/source"
)

// Report is the result of `dynafold plan`: findings, measurements and
// estimates. Its JSON form is the --report and --output json contract.
type Report struct {
	Table     string         `json:"table"`
	Source    string         `json:"source,omitempty"`
	Status    Status         `json:"status"`
	Counts    Counts         `json:"counts"`
	Findings  []Finding      `json:"findings"`
	Sampling  *Sampling      `json:"sampling,omitempty"`
	Entities  []EntityReport `json:"entities,omitempty"`
	Totals    *TableReport   `json:"table_stats,omitempty"`
	Indexes   []IndexReport  `json:"indexes,omitempty"`
	Estimates *Estimates     `json:"estimates,omitempty"`
	Target    *TargetInfo    `json:"target,omitempty"`
	// Sync is the "sync readiness" of the source for `dynafold sync`.
	Sync *SyncReadiness `json:"sync_readiness,omitempty"`
	// Incremental says which entities migrate --incremental can narrow
	// (only when the mapping declares changes:).
	Incremental *IncrementalReadiness `json:"incremental,omitempty"`
	// Import is set by plan --sink import (see ForImport).
	Import *ImportEstimate `json:"import,omitempty"`
	// Reversible is set by plan --reversible (see AddReversible).
	Reversible *reverse.Report `json:"reversible,omitempty"`
	Limits     Limits          `json:"limits"`
	Methods    []string        `json:"methods,omitempty"`
}

// Status sums up a report for the exit code.
type Status string

// The statuses, by precedence.
const (
	// StatusOK: no errors (warnings and notes allowed).
	StatusOK Status = "ok"
	// StatusMappingErrors: the mapping has errors (exit 2).
	StatusMappingErrors Status = "mapping_errors"
	// StatusDataErrors: the data breaks a hard limit (exit 3).
	StatusDataErrors Status = "data_errors"
)

// Counts counts findings by severity.
type Counts struct {
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Notes    int `json:"notes"`
}

// Sampling says how much of the source was measured.
type Sampling struct {
	Fraction    float64 `json:"fraction"`
	RowsRead    int64   `json:"rows_read"`
	RowsSampled int64   `json:"rows_sampled"`
	Note        string  `json:"note"`
}

// SizeStats summarises item sizes in bytes.
type SizeStats struct {
	Min int64 `json:"min"`
	P50 int64 `json:"p50"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// SizeBucket counts the items whose size in bytes is in [Min, Max].
type SizeBucket struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max"`
	Items int64 `json:"items"`
}

// EntityReport is one entity's measurements. Counts are for the whole
// source (scaled when sampled).
type EntityReport struct {
	Entity        string    `json:"entity"`
	Rows          int64     `json:"rows"`
	Items         int64     `json:"items"`
	RowErrors     int64     `json:"row_errors"`
	RowsOverLimit int64     `json:"rows_over_limits"`
	Bytes         int64     `json:"bytes"`
	ItemSize      SizeStats `json:"item_size"`
	// SizeHistogram counts items by size, in powers of two (empty ranges
	// left out), for drawing; scaled when sampled.
	SizeHistogram []SizeBucket `json:"item_size_histogram,omitempty"`
	MaxPKBytes    int          `json:"max_pk_bytes"`
	MaxSKBytes    int          `json:"max_sk_bytes"`
	WriteUnits    int64        `json:"write_units"`
	IndexUnits    []UnitCount  `json:"index_write_units,omitempty"`
	// Split is set for an entity whose nested attribute splits.
	Split *SplitReport `json:"split,omitempty"`
}

// SplitReport describes an entity's split aggregates.
type SplitReport struct {
	// Items is how many items were split, Parts how many parts they make
	// (scaled when sampled), MaxParts the most parts of one item.
	Items    int64 `json:"items"`
	Parts    int64 `json:"parts"`
	MaxParts int   `json:"max_parts"`
	// MaxPartBytes is the largest part's whole size (key, Part and type
	// attribute included); LimitBytes what a part is held to: max_bytes,
	// never more than the item limit less the split margin.
	MaxPartBytes int `json:"max_part_bytes"`
	LimitBytes   int `json:"limit_bytes"`
}

// TableReport is the table as a whole.
type TableReport struct {
	Rows          int64           `json:"rows"`
	Items         int64           `json:"items"`
	Bytes         int64           `json:"bytes"`
	WriteUnits    int64           `json:"write_units"`
	ItemSize      SizeStats       `json:"item_size"`
	MaxPKBytes    int             `json:"max_pk_bytes"`
	MaxSKBytes    int             `json:"max_sk_bytes"`
	LargestItems  []LargeItem     `json:"largest_items"`
	PartitionKeys KeySpaceReport  `json:"partition_keys"`
	Duplicates    DuplicateReport `json:"duplicate_keys"`
}

// KeySpaceReport describes the values of one partition key (the table's,
// or a GSI's). For the table, bytes are item-collection sizes.
type KeySpaceReport struct {
	Distinct      int64     `json:"distinct"`
	DistinctExact bool      `json:"distinct_exact"`
	CountsExact   bool      `json:"counts_exact"`
	TopByItems    []KeyStat `json:"top_by_items"`
	TopByBytes    []KeyStat `json:"top_by_bytes"`
	// TopShare is the share of items the most frequent value holds.
	TopShare float64 `json:"top_share"`
}

// DuplicateReport counts item keys produced more than once.
type DuplicateReport struct {
	Count int64 `json:"count"`
	// Exact is false when some keys were only checked against earlier ones.
	Exact     bool  `json:"exact"`
	Unchecked int64 `json:"keys_checked_against_earlier_only"`
}

// IndexReport is one secondary index.
type IndexReport struct {
	Index         string          `json:"index"`
	Type          string          `json:"type"`
	Projection    string          `json:"projection"`
	Items         int64           `json:"items"`
	Bytes         int64           `json:"bytes"`
	WriteUnits    int64           `json:"write_units"`
	MaxPKBytes    int             `json:"max_pk_bytes"`
	PartitionKeys *KeySpaceReport `json:"partition_keys,omitempty"`
	// PartialKeyItems is items with only one of the index's two key
	// attributes: not in the index.
	PartialKeyItems int64 `json:"partial_key_items"`
	// SparseItems is items left out of the index on purpose: their
	// entity's index: entry says sparse: true.
	SparseItems int64 `json:"sparse_items,omitempty"`
}

// Stats is what Measure found; Run turns it into a Report.
type Stats struct{ a *aggregator }

// Input is what Run works on.
type Input struct {
	Plan *mapping.Plan
	// Schema is the source schema the plan was compiled against (optional:
	// its unique keys count as identifying a row).
	Schema   *mapping.Schema
	Snapshot source.Snapshot
	// Target is what the caller learned about the table (optional).
	Target *TargetInfo
	// Source identifies the source database in the report (no secrets).
	Source string
}

// Run lints the plan, measures the source and estimates the migration.
func Run(ctx context.Context, in Input, opts Options) (*Report, error) {
	opts.defaults()
	static := Lint(in.Plan, in.Schema, in.Target)
	st, err := Measure(ctx, in.Plan, in.Snapshot, opts)
	if err != nil {
		return nil, err
	}
	return assemble(in, opts, static, st), nil
}

// MappingReport is the report of a mapping that does not compile: its
// errors as findings, nothing measured.
func MappingReport(table string, fs []Finding) *Report {
	r := &Report{Table: table, Findings: fs, Limits: DefaultLimits()}
	r.finish()
	return r
}

func (r *Report) finish() {
	sortFindings(r.Findings)
	r.Counts = Counts{}
	r.Status = StatusOK
	mappingErr, dataErr := false, false
	for _, f := range r.Findings {
		switch f.Severity {
		case Error:
			r.Counts.Errors++
			if f.Origin == Mapping {
				mappingErr = true
			} else {
				dataErr = true
			}
		case Warning:
			r.Counts.Warnings++
		default:
			r.Counts.Notes++
		}
	}
	switch {
	case mappingErr:
		r.Status = StatusMappingErrors
	case dataErr:
		r.Status = StatusDataErrors
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
}

func (a *aggregator) stats() *Stats { return &Stats{a: a} }

// assemble builds the report from the static findings and the
// measurements.
func assemble(in Input, opts Options, static []Finding, st *Stats) *Report {
	a := st.a
	p := in.Plan
	tbl := p.Table
	scale := 1 / opts.Sample
	sc := func(n int64) int64 {
		if n < 0 {
			return n
		}
		return int64(math.Round(float64(n) * scale))
	}
	scKeys := func(ks []KeyStat) []KeyStat {
		for i := range ks {
			ks[i].Items, ks[i].Bytes, ks[i].WriteUnits, ks[i].Overstated = sc(ks[i].Items), sc(ks[i].Bytes), sc(ks[i].WriteUnits), sc(ks[i].Overstated)
		}
		if ks == nil {
			ks = []KeyStat{}
		}
		return ks
	}
	r := &Report{Table: tbl.Name, Source: in.Source, Target: in.Target, Limits: opts.Limits}
	r.Findings = append(r.Findings, static...)

	var read, sampled int64
	for i, ep := range p.Entities {
		e := a.ents[i]
		read += e.read
		sampled += e.rows
		er := EntityReport{
			Entity: ep.Name, Rows: sc(e.rows), Items: sc(e.items), RowErrors: sc(e.rowErrors), RowsOverLimit: sc(e.overLimit),
			Bytes: sc(e.bytes), ItemSize: sizeStats(&e.sizes), SizeHistogram: e.sizes.powersOfTwo(sc), MaxPKBytes: e.maxPK, MaxSKBytes: e.maxSK, WriteUnits: sc(e.units),
		}
		if limit := ep.SplitLimit(); limit > 0 {
			er.Split = &SplitReport{Items: sc(e.splitItems), Parts: sc(e.splitParts), MaxParts: e.maxParts, MaxPartBytes: e.maxPartBytes, LimitBytes: limit}
		}
		for j, s := range a.shapes {
			er.IndexUnits = append(er.IndexUnits, UnitCount{Index: s.ix.Name, Items: sc(e.idxItems[j]), Units: sc(e.idxUnits[j])})
		}
		r.Entities = append(r.Entities, er)
	}
	r.Sampling = &Sampling{Fraction: opts.Sample, RowsRead: read, RowsSampled: sampled, Note: samplingNote(opts.Sample)}

	t := &a.tbl
	tr := &TableReport{
		Rows: sc(sampled), Items: sc(t.items), Bytes: sc(t.bytes), WriteUnits: sc(t.units), ItemSize: sizeStats(&t.sizes),
		MaxPKBytes: t.maxPK, MaxSKBytes: t.maxSK, LargestItems: a.large.sorted(),
		PartitionKeys: keySpace(t.pk, opts.Top, scKeys, t.items),
		Duplicates:    DuplicateReport{Count: a.dup.dups, Exact: a.dup.unchecked == 0, Unchecked: a.dup.unchecked},
	}
	r.Totals = tr

	ein := EstimateInput{
		Items: tr.Items, TableBytes: tr.Bytes, TableUnits: tr.WriteUnits,
		PartitionWCU: opts.Limits.PartitionWCU, WritePrice: opts.WritePrice, MaxWCU: opts.MaxWCU,
	}
	switch {
	case in.Target != nil && in.Target.Exists && in.Target.ProvisionedWrite > 0:
		ein.ProvisionedWrite = in.Target.ProvisionedWrite
		ein.ProvisionedFrom = fmt.Sprintf("the table's provisioned write capacity (%s)", num(in.Target.ProvisionedWrite))
	case tbl.Billing == "PROVISIONED" && tbl.Capacity != nil && tbl.Capacity.Write > 0 && (in.Target == nil || !in.Target.Exists):
		ein.ProvisionedWrite = tbl.Capacity.Write
		ein.ProvisionedFrom = fmt.Sprintf("the mapping's provisioned write capacity (%s)", num(tbl.Capacity.Write))
	}
	hot := func(c *keyCounter, where string) {
		// The floor uses what the key surely holds: a heavy-hitter count
		// minus its possible overstatement.
		if top := c.top(wUnits, 1); len(top) > 0 && sc(top[0].WriteUnits-top[0].Overstated) > ein.HotUnits {
			ein.HotUnits = sc(top[0].WriteUnits - top[0].Overstated)
			ein.HotKey = fmt.Sprintf("%s %q", where, top[0].Key)
		}
	}
	hot(t.pk, tbl.PK.Name)
	for j, s := range a.shapes {
		ia := a.idx[j]
		ir := IndexReport{Index: s.ix.Name, Type: "local", Projection: s.ix.Projection, Items: sc(ia.items), Bytes: sc(ia.bytes), WriteUnits: sc(ia.units), MaxPKBytes: ia.maxPK}
		ii := IndexInput{Name: s.ix.Name, Global: s.ix.Global, Items: ir.Items, Bytes: ir.Bytes, Units: ir.WriteUnits}
		if s.ix.Global {
			ir.Type = "global"
			ks := keySpace(ia.pk, opts.Top, scKeys, ia.items)
			ir.PartitionKeys = &ks
			hot(ia.pk, s.ix.Name+" "+s.ix.PK.Name)
			// table create gives a provisioned GSI the table's capacity
			// unless the mapping sets its own.
			switch {
			case tbl.Billing != "PROVISIONED":
			case s.ix.Capacity != nil:
				ii.Capacity = s.ix.Capacity.Write
			case tbl.Capacity != nil:
				ii.Capacity = tbl.Capacity.Write
			}
		}
		for _, ep := range p.Entities {
			if n := ia.sparse[ep.Name]; n > 0 {
				ir.SparseItems += sc(n)
				a.fs.add(Note, Data, "data.sparse_index", "entities."+ep.Name+".index."+s.ix.Name, ep.Name,
					"%s left out of index %s on purpose (sparse: true), e.g. row %s",
					plural(sc(n), "item"), s.ix.Name, ia.sparseExample[ep.Name])
			}
			n := ia.half[ep.Name]
			if n == 0 {
				continue
			}
			ir.PartialKeyItems += sc(n)
			fate := "the half they have is left off them unless the table's key or another index needs it (half_key: keep keeps it)"
			if s.ix.KeepHalfKey {
				fate = "the half they have is kept (half_key: keep)"
			}
			a.fs.add(Warning, Data, "data.partial_index_key", "entities."+ep.Name+".index."+s.ix.Name, ep.Name,
				"%s items have only half of index %s's key (%s, %s), e.g. row %s: they are not in the index, and %s",
				num(sc(n)), s.ix.Name, s.ix.PK.Name, s.ix.SK.Name, ia.halfExample[ep.Name], fate)
		}
		r.Indexes = append(r.Indexes, ir)
		ein.Indexes = append(ein.Indexes, ii)
	}
	est := Estimate(ein)
	r.Estimates = &est

	Acknowledge(a.fs, p.Config.Lint)
	// Readers run concurrently: order data findings by entity, then text,
	// so that a report does not depend on which shard finished first.
	pos := map[string]int{}
	for i, ep := range p.Entities {
		pos[ep.Name] = i
	}
	sort.SliceStable(a.fs, func(i, j int) bool {
		fi, fj := a.fs[i], a.fs[j]
		if pos[fi.Entity] != pos[fj.Entity] {
			return pos[fi.Entity] < pos[fj.Entity]
		}
		return fi.Message < fj.Message
	})
	r.Findings = append(r.Findings, a.fs...)
	r.Findings = append(r.Findings, a.moreFindings()...)
	r.Findings = append(r.Findings, a.collectionFindings(scale)...)
	r.Findings = append(r.Findings, a.hotKeyFindings(sc, est.Duration.LoadSeconds)...)
	Acknowledge(r.Findings, p.Config.Lint) // collection and hot-key findings too
	r.Findings = append(r.Findings, unmatchedIgnores(r.Findings, p.Config.Lint)...)
	r.Methods = a.methods(opts)
	r.finish()
	return r
}

func sizeStats(h *histogram) SizeStats {
	return SizeStats{Min: h.min, P50: h.quantile(0.5), P99: h.quantile(0.99), Max: h.max}
}

func keySpace(c *keyCounter, n int, scKeys func([]KeyStat) []KeyStat, items int64) KeySpaceReport {
	ks := KeySpaceReport{Distinct: c.distinct(), DistinctExact: c.isExact(), CountsExact: c.isExact()}
	byItems := c.top(wItems, n)
	if len(byItems) > 0 && items > 0 {
		ks.TopShare = float64(byItems[0].Items) / float64(items)
	}
	ks.TopByItems = scKeys(byItems)
	ks.TopByBytes = scKeys(c.top(wBytes, n))
	return ks
}

func (l *largestItems) sorted() []LargeItem {
	out := append([]LargeItem(nil), l.items...)
	sort.Slice(out, func(i, j int) bool { return smaller(out[j], out[i]) })
	if out == nil {
		out = []LargeItem{}
	}
	return out
}

func samplingNote(f float64) string {
	if f >= 1 {
		return "full scan: every row was read and built as migrate would; counts are exact"
	}
	return fmt.Sprintf("sample of %g%% of rows, chosen by a hash of each row's primary key (the same rows on every run); every row is still read, only the sample is built. "+
		"Counts, bytes and write units are scaled by 1/%g; size quantiles, key lengths, largest items, distinct key counts and duplicate keys are those of the sample",
		f*100, f)
}
