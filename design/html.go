package design

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/plan"
)

// The HTML page: one self-contained file (inline CSS and SVG, no script,
// no network) that draws the design as DynamoDB people do: the table's
// items grouped by partition key, each index as its own view of the same
// items, one colour per entity, item sizes and hot keys from plan's
// measurements, and the access patterns.

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
	// long keys may wrap; shorter ones stay on one line, so that a wide
	// item's attributes wrap before its key does.
	"long": func(key string) bool { return utf8.RuneCountInString(key) > longKey },
}).Parse(pageHTML))

// longKey is the length in characters past which a key wraps in its cell.
const longKey = 36

// palette is the number of entity colours in page.html (c0 … c11).
const palette = 12

// maxCellText bounds a value shown in a cell; the rest is elided.
const maxCellText = 60

type page struct {
	Table    string
	Source   string
	Keys     string
	Billing  string
	TTL      string
	Stream   string
	Import   string
	Samples  string
	Sampled  []sampledCollection
	Entities []pageEntity
	Views    []gridView
	Patterns []pagePattern
	Measured bool
	Measure  string
	Hot      []hotChart
}

// sampledCollection is a collection the samples looked for, and how many
// sample items are in it.
type sampledCollection struct {
	Name  string
	Items string
}

// pagePattern is an access pattern with the number of sample items its
// query returns (-1: the source was not read).
type pagePattern struct {
	Pattern
	SampleItems int
}

type pageEntity struct {
	Name   string
	Color  int
	PK, SK string
	Attrs  []Attribute
	Items  int
	Sizes  *sizeChart
}

type gridView struct {
	// ID is the view's element id: "view-table" or "view-index-NAME".
	ID     string
	Title  string
	Detail string
	PK, SK string
	Groups []group
	Items  int
}

type group struct {
	PK   string
	Rows []gridRow
}

type gridRow struct {
	SK     string
	Entity string
	Color  int
	Cells  []cell
	// Key is the item's table key, "PK / SK", in every view: what a
	// reader (or a test) finds the item by.
	Key string
}

type cell struct {
	Name, Value, Type string
}

type sizeChart struct {
	Summary string
	Bars    []bar
	From    string
	To      string
}

type bar struct {
	X, Y, W, H int
	Title      string
}

type hotChart struct {
	Title string
	Keys  []hotKey
}

type hotKey struct {
	Key   string
	Items string
	Width int
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 240, 70
	hotW           = 220
)

// WriteHTML writes the page.
func (m *Model) WriteHTML(w io.Writer) error {
	if err := pageTemplate.Execute(w, m.page()); err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

func (m *Model) page() *page {
	t := m.Plan.Table
	pg := &page{Table: t.Name, Source: m.Source, Billing: billingText(m.Table)}
	for _, p := range m.Patterns {
		pg.Patterns = append(pg.Patterns, pagePattern{Pattern: p, SampleItems: m.sampleItemsOf(p)})
	}
	pg.Keys = keyText(t.PK, t.SK)
	if t.TTLAttribute != "" {
		pg.TTL = t.TTLAttribute
	}
	pg.Stream = t.StreamViewType
	if m.Import != nil {
		pg.Import = fmt.Sprintf("created by ImportTable from %s (only when the table is created)", m.Import.URL)
	}
	color := map[string]int{}
	for i, f := range m.Facets {
		color[f.Entity] = i % palette
		pg.Entities = append(pg.Entities, pageEntity{Name: f.Entity, Color: i % palette, PK: f.PK, SK: f.SK, Attrs: f.Attributes})
	}
	if m.Samples == nil {
		pg.Samples = "no sample items: the source was not read (--no-source)"
	} else {
		pg.Samples = fmt.Sprintf("%d sample items, built as migrate builds them from the first %d rows of each entity", len(m.Samples.Items), m.Samples.PerEntity)
		if len(m.Samples.Collections) > 0 {
			pg.Samples += fmt.Sprintf(" and from up to %d rows per entity of each collection below", m.Samples.PerEntity)
		}
		if n := len(m.Samples.Rejected); n > 0 {
			pg.Samples += fmt.Sprintf(" (%d rows could not become items and are left out)", n)
		}
		if note := m.Samples.CappedNote(); note != "" {
			pg.Samples += "; " + note
		}
		for _, c := range m.Samples.Collections {
			pg.Sampled = append(pg.Sampled, sampledCollection{Name: c.Name, Items: plural(c.Items, "sample item")})
		}
		for i := range m.Samples.Items {
			for j := range pg.Entities {
				if pg.Entities[j].Name == m.Samples.Items[i].Entity.Name {
					pg.Entities[j].Items++
				}
			}
		}
		pg.Views = m.views(color)
	}
	m.measurements(pg)
	return pg
}

func keyText(pk mapping.KeyAttr, sk *mapping.KeyAttr) string {
	s := fmt.Sprintf("partition key %s (%s)", pk.Name, pk.Type)
	if sk != nil {
		s += fmt.Sprintf(", sort key %s (%s)", sk.Name, sk.Type)
	}
	return s
}

// views are the table and each index, as grids of the sample items.
func (m *Model) views(color map[string]int) []gridView {
	t := m.Plan.Table
	items := m.Samples.Items
	pk, sk := m.keyNames()
	table := gridView{ID: "view-table", Title: "Table " + t.Name, Detail: keyText(t.PK, t.SK), PK: pk, SK: sk}
	table.fill(items, nil, color, pk, sk)
	out := []gridView{table}
	for _, ix := range t.Indexes {
		kind := "global"
		if !ix.Global {
			kind = "local"
		}
		v := gridView{ID: "view-index-" + ix.Name, Title: "Index " + ix.Name, Detail: fmt.Sprintf("%s secondary index: %s; projection %s", kind, keyText(ix.PK, ix.SK), strings.ToLower(ix.Projection)), PK: ix.PK.Name}
		if ix.SK != nil {
			v.SK = ix.SK.Name
		}
		if ix.Projection == "INCLUDE" {
			v.Detail += " (" + strings.Join(ix.Include, ", ") + ")"
		}
		var in []mapping.Item
		for _, it := range items {
			a := it.Attributes()
			if a[v.PK] != nil && (v.SK == "" || a[v.SK] != nil) {
				in = append(in, it)
			}
		}
		sortItems(in, v.PK, v.SK)
		v.fill(in, projection(t, ix), color, pk, sk)
		out = append(out, v)
	}
	return out
}

// projection is the set of attributes an index holds (nil: all).
func projection(t *mapping.TableSchema, ix *mapping.Index) map[string]bool {
	if ix.Projection == "ALL" {
		return nil
	}
	keep := map[string]bool{t.PK.Name: true, ix.PK.Name: true}
	if t.SK != nil {
		keep[t.SK.Name] = true
	}
	if ix.SK != nil {
		keep[ix.SK.Name] = true
	}
	for _, n := range ix.Include {
		keep[n] = true
	}
	return keep
}

// fill groups items (already in the view's key order) by partition key;
// tablePK and tableSK name the table's key attributes.
func (v *gridView) fill(items []mapping.Item, keep map[string]bool, color map[string]int, tablePK, tableSK string) {
	v.Items = len(items)
	for _, it := range items {
		a := it.Attributes()
		pk := mapping.KeyText(a[v.PK])
		if n := len(v.Groups); n == 0 || v.Groups[n-1].PK != pk {
			v.Groups = append(v.Groups, group{PK: pk})
		}
		r := gridRow{Entity: it.Entity.Name, Color: color[it.Entity.Name], Key: tableKeyText(a, tablePK, tableSK)}
		if v.SK != "" {
			r.SK = mapping.KeyText(a[v.SK])
		}
		for _, name := range attributeOrder(it) {
			if name == v.PK || name == v.SK || keep != nil && !keep[name] {
				continue
			}
			r.Cells = append(r.Cells, cell{Name: name, Value: cellText(a[name]), Type: string(typeName(a[name]))})
		}
		g := &v.Groups[len(v.Groups)-1]
		g.Rows = append(g.Rows, r)
	}
}

// tableKeyText is an item's table key as "PK / SK", the patterns
// report's form.
func tableKeyText(a map[string]types.AttributeValue, pk, sk string) string {
	if sk == "" {
		return mapping.KeyText(a[pk])
	}
	return mapping.KeyText(a[pk]) + " / " + mapping.KeyText(a[sk])
}

// sampleItemsOf counts the sample items a pattern's query returns (-1
// without samples, 0 when its query cannot be built).
func (m *Model) sampleItemsOf(p Pattern) int {
	if m.Samples == nil {
		return -1
	}
	n := 0
	for i := range m.Samples.Items {
		if p.match != nil && p.match.Holds(m.Samples.Items[i].Attributes()) {
			n++
		}
	}
	return n
}

// attributeOrder is the item's attributes in the order its facet lists
// them, keys first, then any others by name.
func attributeOrder(it mapping.Item) []string {
	a := it.Attributes()
	var names []string
	seen := map[string]bool{}
	t := it.Entity
	for _, ip := range t.Items {
		for _, at := range ip.Attributes() {
			if _, ok := a[at.Name]; ok && !seen[at.Name] {
				seen[at.Name] = true
				names = append(names, at.Name)
			}
		}
	}
	var rest []string
	for n := range a {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// cellText shows a value in a cell: scalars as themselves, binary in
// base64, documents as compact JSON, all cut to maxCellText.
func cellText(av types.AttributeValue) string {
	var s string
	switch v := av.(type) {
	case *types.AttributeValueMemberS, *types.AttributeValueMemberN, *types.AttributeValueMemberB:
		s = mapping.KeyText(av) // as every report shows a key
	case *types.AttributeValueMemberBOOL:
		s = fmt.Sprint(v.Value)
	default:
		b, _ := json.Marshal(mapping.PlainJSON(av)) // plain values always marshal
		s = string(b)
	}
	if r := []rune(s); len(r) > maxCellText {
		s = string(r[:maxCellText-1]) + "…"
	}
	return s
}

// measurements adds plan's item sizes and hot keys.
func (m *Model) measurements(pg *page) {
	r := m.Measured
	if r == nil {
		pg.Measure = "not measured: the source was not read (--no-source)"
		return
	}
	pg.Measured = true
	pg.Measure = "measured by plan over " + render.Thousands(r.Totals.Rows) + " rows: " + r.Sampling.Note
	for i := range pg.Entities {
		for _, er := range r.Entities {
			if er.Entity == pg.Entities[i].Name && er.Items > 0 {
				pg.Entities[i].Sizes = sizeChartOf(er)
			}
		}
	}
	pg.Hot = append(pg.Hot, hotChartOf("Table "+r.Table+": partition keys by items", r.Totals.PartitionKeys.TopByItems))
	for _, ix := range r.Indexes {
		if ix.PartitionKeys != nil {
			pg.Hot = append(pg.Hot, hotChartOf("Index "+ix.Index+": partition keys by items", ix.PartitionKeys.TopByItems))
		}
	}
}

// sizeChartOf draws an entity's item-size histogram: one bar per power of
// two between the smallest and the largest item, empty ranges included.
func sizeChartOf(er plan.EntityReport) *sizeChart {
	h := er.SizeHistogram
	s := er.ItemSize
	c := &sizeChart{Summary: fmt.Sprintf("%s items; p50 %s, p99 %s, max %s", render.Thousands(er.Items), render.Bytes(s.P50), render.Bytes(s.P99), render.Bytes(s.Max))}
	if len(h) == 0 {
		return c
	}
	var buckets []plan.SizeBucket
	for lo := h[0].Min; ; {
		hi := max(lo*2-1, 1)
		b := plan.SizeBucket{Min: lo, Max: hi}
		for _, x := range h {
			if x.Min == lo {
				b.Items = x.Items
			}
		}
		buckets = append(buckets, b)
		if hi >= h[len(h)-1].Max {
			break
		}
		lo = hi + 1
	}
	var most int64
	for _, b := range buckets {
		most = max(most, b.Items)
	}
	w := chartW / len(buckets)
	for i, b := range buckets {
		hgt := 0
		if most > 0 {
			hgt = int(int64(chartH-2) * b.Items / most)
		}
		if b.Items > 0 {
			hgt = max(hgt, 1)
		}
		c.Bars = append(c.Bars, bar{X: i * w, Y: chartH - hgt, W: max(w-2, 1), H: hgt,
			Title: fmt.Sprintf("%s to %s: %s items", render.Bytes(b.Min), render.Bytes(b.Max), render.Thousands(b.Items))})
	}
	c.From, c.To = render.Bytes(buckets[0].Min), render.Bytes(buckets[len(buckets)-1].Max)
	return c
}

func hotChartOf(title string, keys []plan.KeyStat) hotChart {
	c := hotChart{Title: title}
	var most int64
	for _, k := range keys {
		most = max(most, k.Items)
	}
	for _, k := range keys {
		w := 0
		if most > 0 {
			w = max(int(int64(hotW)*k.Items/most), 1)
		}
		c.Keys = append(c.Keys, hotKey{Key: k.Key, Items: render.Thousands(k.Items), Width: w})
	}
	return c
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// billingText describes the table's billing mode and capacity.
func billingText(in *dynamodb.CreateTableInput) string {
	if in.ProvisionedThroughput == nil {
		return "on demand (PAY_PER_REQUEST)"
	}
	return fmt.Sprintf("provisioned: %d read, %d write units", aws.ToInt64(in.ProvisionedThroughput.ReadCapacityUnits), aws.ToInt64(in.ProvisionedThroughput.WriteCapacityUnits))
}
