package design

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/stretchr/testify/require"
	"github.com/zclconf/go-cty/cty"

	"github.com/dynafold/dynafold/mapping"
)

// tfBlock is a parsed HCL block: its attributes evaluated, its nested
// blocks by type, in order.
type tfBlock struct {
	labels []string
	attrs  map[string]cty.Value
	blocks map[string][]*tfBlock
}

func parseTerraform(t *testing.T, src []byte) *tfBlock {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL(src, "main.tf")
	require.False(t, diags.HasErrors(), "%s\n%s", diags, src)
	return toBlock(t, f.Body.(*hclsyntax.Body), nil)
}

func toBlock(t *testing.T, body *hclsyntax.Body, labels []string) *tfBlock {
	b := &tfBlock{labels: labels, attrs: map[string]cty.Value{}, blocks: map[string][]*tfBlock{}}
	for name, a := range body.Attributes {
		v, diags := a.Expr.Value(&hcl.EvalContext{})
		require.False(t, diags.HasErrors(), "%s: %s", name, diags)
		b.attrs[name] = v
	}
	for _, sub := range body.Blocks {
		b.blocks[sub.Type] = append(b.blocks[sub.Type], toBlock(t, sub.Body, sub.Labels))
	}
	return b
}

func (b *tfBlock) str(name string) string {
	v, ok := b.attrs[name]
	if !ok {
		return ""
	}
	return v.AsString()
}

func (b *tfBlock) num(name string) int64 {
	v, ok := b.attrs[name]
	if !ok {
		return 0
	}
	n, _ := v.AsBigFloat().Int64()
	return n
}

func (b *tfBlock) list(name string) []string {
	v, ok := b.attrs[name]
	if !ok {
		return nil
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// The Terraform output parses as HCL and says, attribute by attribute,
// what the mapping says: for every design in configs/, the kitchen sink
// (provisioned, every projection, a local index, TTL, a stream) and an
// import.
func TestTerraformMatchesTheMapping(t *testing.T) {
	models := map[string]*Model{"kitchen sink": kitchenSinkModel(t)}
	for _, path := range configs(t) {
		models[path] = staticModel(t, path)
	}
	imported := staticModel(t, repoPath("configs/portfolios.yaml"))
	require.NoError(t, imported.SetImport("s3://exports/run-7/"))
	models["portfolios imported"] = imported
	for name, m := range models {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, m.WriteTerraform(&buf))
			checkTerraform(t, m, parseTerraform(t, buf.Bytes()))
		})
	}
}

func checkTerraform(t *testing.T, m *Model, root *tfBlock) {
	ts := m.Plan.Table
	require.Len(t, root.blocks["resource"], 1)
	r := root.blocks["resource"][0]
	require.Equal(t, []string{"aws_dynamodb_table", m.terraformName()}, r.labels)
	require.True(t, hclsyntax.ValidIdentifier(r.labels[1]), r.labels[1])
	require.Equal(t, ts.Name, r.str("name"))
	require.Equal(t, ts.Billing, r.str("billing_mode"))
	require.Equal(t, ts.PK.Name, r.str("hash_key"))
	require.Equal(t, nameOf(ts.SK), r.str("range_key"))
	if ts.Capacity != nil {
		require.Equal(t, ts.Capacity.Read, r.num("read_capacity"))
		require.Equal(t, ts.Capacity.Write, r.num("write_capacity"))
	} else {
		require.NotContains(t, r.attrs, "read_capacity")
		require.NotContains(t, r.attrs, "write_capacity")
	}

	// One attribute block per key attribute of the table and its indexes.
	want := map[string]string{ts.PK.Name: string(ts.PK.Type)}
	addKey := func(k *mapping.KeyAttr) {
		if k != nil {
			want[k.Name] = string(k.Type)
		}
	}
	addKey(ts.SK)
	for _, ix := range ts.Indexes {
		addKey(&ix.PK)
		addKey(ix.SK)
	}
	got := map[string]string{}
	for _, a := range r.blocks["attribute"] {
		got[a.str("name")] = a.str("type")
	}
	require.Equal(t, want, got)

	var gsis, lsis []*mapping.Index
	for _, ix := range ts.Indexes {
		if ix.Global {
			gsis = append(gsis, ix)
		} else {
			lsis = append(lsis, ix)
		}
	}
	require.Len(t, r.blocks["global_secondary_index"], len(gsis))
	for i, ix := range gsis {
		b := r.blocks["global_secondary_index"][i]
		require.Equal(t, ix.Name, b.str("name"))
		require.Equal(t, ix.PK.Name, b.str("hash_key"))
		require.Equal(t, nameOf(ix.SK), b.str("range_key"))
		require.Equal(t, ix.Projection, b.str("projection_type"))
		require.Equal(t, ix.Include, b.list("non_key_attributes"))
		if ts.Billing == "PROVISIONED" {
			c := ts.Capacity
			if ix.Capacity != nil {
				c = ix.Capacity
			}
			require.Equal(t, fmt.Sprint(c.Read, "/", c.Write), fmt.Sprint(b.num("read_capacity"), "/", b.num("write_capacity")), ix.Name)
		} else {
			require.NotContains(t, b.attrs, "read_capacity")
		}
	}
	require.Len(t, r.blocks["local_secondary_index"], len(lsis))
	for i, ix := range lsis {
		b := r.blocks["local_secondary_index"][i]
		require.Equal(t, ix.Name, b.str("name"))
		require.Equal(t, ix.SK.Name, b.str("range_key"))
		require.NotContains(t, b.attrs, "hash_key", "a local index shares the table's")
		require.Equal(t, ix.Projection, b.str("projection_type"))
		require.Equal(t, ix.Include, b.list("non_key_attributes"))
	}

	if ts.TTLAttribute == "" {
		require.Empty(t, r.blocks["ttl"])
	} else {
		require.Len(t, r.blocks["ttl"], 1)
		require.Equal(t, ts.TTLAttribute, r.blocks["ttl"][0].str("attribute_name"))
		require.True(t, r.blocks["ttl"][0].attrs["enabled"].True())
	}

	if ts.StreamViewType == "" {
		require.NotContains(t, r.attrs, "stream_enabled")
		require.NotContains(t, r.attrs, "stream_view_type")
	} else {
		require.True(t, r.attrs["stream_enabled"].True())
		require.Equal(t, ts.StreamViewType, r.str("stream_view_type"))
	}

	if m.Import == nil {
		require.Empty(t, r.blocks["import_table"])
	} else {
		require.Len(t, r.blocks["import_table"], 1)
		it := r.blocks["import_table"][0]
		require.Equal(t, "DYNAMODB_JSON", it.str("input_format"))
		require.Equal(t, "GZIP", it.str("input_compression_type"))
		require.Len(t, it.blocks["s3_bucket_source"], 1)
		src := it.blocks["s3_bucket_source"][0]
		require.Equal(t, m.Import.Bucket, src.str("bucket"))
		require.Equal(t, m.Import.KeyPrefix, src.str("key_prefix"))
	}
	require.True(t, r.blocks["lifecycle"][0].attrs["prevent_destroy"].True())
}
