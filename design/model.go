package design

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/export"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/patterns"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/sink"
)

// Model is a compiled mapping seen as a DynamoDB design.
type Model struct {
	Plan *mapping.Plan
	// Table is the CreateTable request table create sends: every artifact
	// defines the same table.
	Table *dynamodb.CreateTableInput
	// Source names the mapping file, for the artifacts' descriptions
	// (ConfigName: never an absolute path of the machine).
	Source   string
	Facets   []Facet
	Patterns []Pattern
	// Samples are nil without the source (--no-source).
	Samples *Samples
	// Measured is plan's report, when the source was measured (html).
	Measured *plan.Report
	// Import is set by SetImport (--import-from).
	Import *Import
}

// Facet is one entity as NoSQL Workbench shows it: the key templates as
// aliases and the attributes its items carry.
type Facet struct {
	Entity string
	// PK and SK are the entity's key templates; an entity that makes
	// several items (items:) shows each distinct template, joined by " | ".
	PK, SK     string
	Attributes []Attribute
}

// Attribute is a non-key attribute and its DynamoDB type ("" when the type
// depends on the source and the source was not read).
type Attribute struct {
	Name string
	Type mapping.AttrType
}

// Pattern is one access pattern with its key condition.
type Pattern struct {
	Name  string
	Index string
	// Condition is the key condition in DynamoDB's notation, as `dynafold
	// patterns` shows it; Error is set instead when it cannot be built.
	Condition string
	Error     string
	// Types are the item types the pattern expects (expect.types).
	Types []string
	// match tests an item against the key condition (nil with Error).
	match *patterns.Matcher
}

// Import is the S3 source of an ImportTable at creation: a dynafold export.
type Import struct {
	URL    string
	Bucket string
	// KeyPrefix is where the export's data files are (the export's prefix
	// and its data directory), as table import passes it.
	KeyPrefix string
}

// New describes the plan. source names the mapping file.
func New(p *mapping.Plan, source string) *Model {
	m := &Model{Plan: p, Table: sink.CreateInput(p.Table), Source: source}
	for _, ep := range p.Entities {
		m.Facets = append(m.Facets, facetOf(p.Table, ep))
	}
	for _, ap := range p.Config.Patterns {
		pt := Pattern{Name: ap.Name, Index: ap.Query.Index}
		if ap.Expect != nil {
			pt.Types = ap.Expect.Types
		}
		if c, err := patterns.Describe(p, ap.Query); err != nil {
			pt.Error = err.Error()
		} else {
			pt.Condition = c
			pt.match, _ = patterns.Match(p, ap.Query) // builds what Describe built
		}
		m.Patterns = append(m.Patterns, pt)
	}
	return m
}

// SetImport adds the import of a dynafold export at s3://bucket/prefix/
// to the table's definition. ImportTable creates no local index, so a
// table with one cannot be imported (sink.ErrImportLSI).
func (m *Model) SetImport(url string) error {
	scheme, bucket, prefix, err := export.Parse(url)
	if err != nil || scheme != "s3" {
		return fmt.Errorf("--import-from must be the s3://bucket/prefix/ an export wrote, not %q", url)
	}
	in, err := sink.ImportInput(m.Plan.Table, bucket, prefix+export.DataDir)
	if err != nil {
		return err
	}
	m.Import = &Import{URL: url, Bucket: bucket, KeyPrefix: *in.S3BucketSource.S3KeyPrefix}
	return nil
}

// facetOf lists what an entity's items carry besides the table's key.
func facetOf(t *mapping.TableSchema, ep *mapping.EntityPlan) Facet {
	f := Facet{Entity: ep.Name}
	var pks, sks []string
	seen := map[string]bool{}
	add := func(name string, typ mapping.AttrType) {
		if !seen[name] && name != t.PK.Name && (t.SK == nil || name != t.SK.Name) {
			seen[name] = true
			f.Attributes = append(f.Attributes, Attribute{Name: name, Type: typ})
		}
	}
	for i, it := range ep.Items {
		pks = appendNew(pks, it.PK.String())
		if it.SK != nil {
			sks = appendNew(sks, it.SK.String())
		}
		for _, a := range it.Attributes() {
			add(a.Name, a.Type)
		}
		for _, np := range ep.Nests() {
			if np.ItemIndex() == i {
				add(np.Name, np.Type())
			}
		}
		if it.HasTTL() {
			add(t.TTLAttribute, mapping.TypeN)
		}
	}
	if t.TypeAttribute != "" {
		add(t.TypeAttribute, mapping.TypeS)
	}
	f.PK, f.SK = strings.Join(pks, " | "), strings.Join(sks, " | ")
	return f
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// attributeTypes is every non-key attribute of the table with one type:
// a key attribute of an index has its declared type; otherwise the first
// known type among the facets, then the type the sample items show, then
// S (a source-dependent type with no source read).
func (m *Model) attributeTypes() []Attribute {
	keyTypes := map[string]mapping.AttrType{}
	for _, d := range m.Table.AttributeDefinitions {
		keyTypes[*d.AttributeName] = mapping.AttrType(d.AttributeType)
	}
	var out []Attribute
	at := map[string]int{}
	for _, f := range m.Facets {
		for _, a := range f.Attributes {
			if kt, ok := keyTypes[a.Name]; ok {
				a.Type = kt
			}
			i, ok := at[a.Name]
			switch {
			case !ok:
				at[a.Name] = len(out)
				out = append(out, a)
			case out[i].Type == "":
				out[i].Type = a.Type
			}
		}
	}
	for i := range out {
		if out[i].Type == "" {
			out[i].Type = m.Samples.typeOf(out[i].Name)
		}
		if out[i].Type == "" {
			out[i].Type = mapping.TypeS
		}
	}
	return out
}

// KeyNames are the table's key attribute names (sort key "" when none).
func (m *Model) keyNames() (pk, sk string) {
	pk = m.Plan.Table.PK.Name
	if m.Plan.Table.SK != nil {
		sk = m.Plan.Table.SK.Name
	}
	return pk, sk
}
