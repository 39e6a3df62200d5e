package design

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/ddbjson"
)

// The NoSQL Workbench data model, in the fields AWS's own generator
// (aws-samples/aws-dynamodb-examples, scripts/nosqlworkbenchscript) and
// Workbench's exported models write. The format has no field for local
// secondary indexes, TTL or access patterns: the description lists the
// access patterns as text.

type wbModel struct {
	ModelName     string     `json:"ModelName"`
	ModelMetadata wbMetadata `json:"ModelMetadata"`
	DataModel     []wbTable  `json:"DataModel"`
}

type wbMetadata struct {
	Author           string `json:"Author"`
	DateCreated      string `json:"DateCreated"`
	DateLastModified string `json:"DateLastModified"`
	Description      string `json:"Description"`
	AWSService       string `json:"AWSService"`
	Version          string `json:"Version"`
}

type wbTable struct {
	TableName                   string            `json:"TableName"`
	KeyAttributes               wbKeys            `json:"KeyAttributes"`
	NonKeyAttributes            []wbAttribute     `json:"NonKeyAttributes"`
	TableFacets                 []wbFacet         `json:"TableFacets"`
	GlobalSecondaryIndexes      []wbIndex         `json:"GlobalSecondaryIndexes"`
	TableData                   []json.RawMessage `json:"TableData"`
	DataAccess                  wbDataAccess      `json:"DataAccess"`
	BillingMode                 string            `json:"BillingMode"`
	ProvisionedCapacitySettings *wbCapacity       `json:"ProvisionedCapacitySettings,omitempty"`
}

type wbKeys struct {
	PartitionKey wbAttribute  `json:"PartitionKey"`
	SortKey      *wbAttribute `json:"SortKey,omitempty"`
}

type wbAttribute struct {
	AttributeName string `json:"AttributeName"`
	AttributeType string `json:"AttributeType"`
}

type wbFacet struct {
	FacetName         string            `json:"FacetName"`
	KeyAttributeAlias wbAlias           `json:"KeyAttributeAlias"`
	TableData         []json.RawMessage `json:"TableData"`
	NonKeyAttributes  []string          `json:"NonKeyAttributes"`
	DataAccess        wbDataAccess      `json:"DataAccess"`
}

type wbAlias struct {
	PartitionKeyAlias string `json:"PartitionKeyAlias"`
	SortKeyAlias      string `json:"SortKeyAlias,omitempty"`
}

type wbIndex struct {
	IndexName     string       `json:"IndexName"`
	KeyAttributes wbKeys       `json:"KeyAttributes"`
	Projection    wbProjection `json:"Projection"`
}

type wbProjection struct {
	ProjectionType   string   `json:"ProjectionType"`
	NonKeyAttributes []string `json:"NonKeyAttributes,omitempty"`
}

type wbDataAccess struct {
	MySQL struct{} `json:"MySql"`
}

type wbCapacity struct {
	ProvisionedThroughput wbThroughput `json:"ProvisionedThroughput"`
}

type wbThroughput struct {
	ReadCapacityUnits  int64 `json:"ReadCapacityUnits"`
	WriteCapacityUnits int64 `json:"WriteCapacityUnits"`
}

// WriteWorkbench writes the model as a NoSQL Workbench data model (JSON).
// now dates it.
func (m *Model) WriteWorkbench(w io.Writer, now time.Time) error {
	t := m.Table
	attrType := map[string]string{}
	for _, d := range t.AttributeDefinitions {
		attrType[*d.AttributeName] = string(d.AttributeType)
	}
	keys := func(ks []types.KeySchemaElement) wbKeys {
		k := wbKeys{PartitionKey: wbAttribute{*ks[0].AttributeName, attrType[*ks[0].AttributeName]}}
		if len(ks) > 1 {
			k.SortKey = &wbAttribute{*ks[1].AttributeName, attrType[*ks[1].AttributeName]}
		}
		return k
	}
	tbl := wbTable{
		TableName:              *t.TableName,
		KeyAttributes:          keys(t.KeySchema),
		NonKeyAttributes:       []wbAttribute{},
		TableFacets:            []wbFacet{},
		GlobalSecondaryIndexes: []wbIndex{},
		TableData:              []json.RawMessage{},
		BillingMode:            string(t.BillingMode),
	}
	for _, a := range m.attributeTypes() {
		tbl.NonKeyAttributes = append(tbl.NonKeyAttributes, wbAttribute{a.Name, string(a.Type)})
	}
	for _, f := range m.Facets {
		wf := wbFacet{FacetName: f.Entity, KeyAttributeAlias: wbAlias{f.PK, f.SK}, TableData: []json.RawMessage{}, NonKeyAttributes: []string{}}
		for _, a := range f.Attributes {
			wf.NonKeyAttributes = append(wf.NonKeyAttributes, a.Name)
		}
		tbl.TableFacets = append(tbl.TableFacets, wf)
	}
	for _, g := range t.GlobalSecondaryIndexes {
		tbl.GlobalSecondaryIndexes = append(tbl.GlobalSecondaryIndexes, wbIndex{IndexName: *g.IndexName, KeyAttributes: keys(g.KeySchema), Projection: wbProjection{string(g.Projection.ProjectionType), g.Projection.NonKeyAttributes}})
	}
	if t.ProvisionedThroughput != nil {
		tbl.ProvisionedCapacitySettings = &wbCapacity{wbThroughput{aws.ToInt64(t.ProvisionedThroughput.ReadCapacityUnits), aws.ToInt64(t.ProvisionedThroughput.WriteCapacityUnits)}}
	}
	if m.Samples != nil {
		for i := range m.Samples.Items {
			item, err := ddbjson.Canonical(ddbjson.AppendItem(nil, m.Samples.Items[i].Attributes()))
			if err != nil {
				return fmt.Errorf("encoding sample item %s: %w", m.Samples.Items[i].KeyText(), err)
			}
			tbl.TableData = append(tbl.TableData, item)
		}
	}
	wm := wbModel{
		ModelName: *t.TableName,
		ModelMetadata: wbMetadata{
			Author:           "dynafold",
			DateCreated:      now.Format("Jan 2, 2006, 3:04 PM"),
			DateLastModified: now.Format("Jan 2, 2006, 3:04 PM"),
			Description:      m.workbenchDescription(),
			AWSService:       "Amazon DynamoDB",
			Version:          "3.0",
		},
		DataModel: []wbTable{tbl},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(wm)
}

// workbenchDescription says where the model comes from and carries what
// the format has no field for: local indexes, TTL, the stream and access
// patterns.
func (m *Model) workbenchDescription() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Single-table design of %s, generated by dynafold design workbench", m.Source)
	if m.Samples != nil {
		fmt.Fprintf(&b, "; sample items built from the first %d source rows of each entity, as migrate builds them", m.Samples.PerEntity)
		if len(m.Samples.Collections) > 0 {
			names := make([]string, len(m.Samples.Collections))
			for i, c := range m.Samples.Collections {
				names[i] = c.Name
			}
			fmt.Fprintf(&b, ", and from up to %d rows per entity of each of: %s", m.Samples.PerEntity, strings.Join(names, ", "))
		}
	} else {
		b.WriteString("; no sample items (--no-source)")
	}
	b.WriteString(".")
	for _, l := range m.Table.LocalSecondaryIndexes {
		fmt.Fprintf(&b, " Local index %s (sort key %s, projection %s).", *l.IndexName, *l.KeySchema[1].AttributeName, l.Projection.ProjectionType)
	}
	if ttl := m.Plan.Table.TTLAttribute; ttl != "" {
		fmt.Fprintf(&b, " TTL on %s.", ttl)
	}
	if s := m.Plan.Table.StreamViewType; s != "" {
		fmt.Fprintf(&b, " Stream: %s.", s)
	}
	if len(m.Patterns) > 0 {
		b.WriteString(" Access patterns:")
		for i, p := range m.Patterns {
			cond := p.Condition
			if p.Error != "" {
				cond = "(" + p.Error + ")"
			}
			fmt.Fprintf(&b, " %d. %s: %s.", i+1, p.Name, cond)
		}
	}
	return b.String()
}
