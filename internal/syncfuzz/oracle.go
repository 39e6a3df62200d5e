package syncfuzz

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// Divergence is what the oracle found wrong at a check.
type Divergence struct {
	// Phase and Op say when: after Op operations, at the end of Phase.
	Phase int `json:"phase"`
	Op    int `json:"op"`
	// Missing are items a fresh migrate writes that the synced table
	// lacks; Extra the synced table's items a fresh migrate does not
	// write; Different the items both have, with other attributes (the
	// synced one shown). At most 12 of each; the counts are whole.
	Missing        []string `json:"missing,omitempty"`
	Extra          []string `json:"extra,omitempty"`
	Different      []string `json:"different,omitempty"`
	MissingCount   int      `json:"missing_count"`
	ExtraCount     int      `json:"extra_count"`
	DifferentCount int      `json:"different_count"`
	// Resurrected are extra items whose key an earlier check saw deleted.
	Resurrected []string `json:"resurrected,omitempty"`
	// Verify is verify's output when it did not exit 0.
	Verify string `json:"verify,omitempty"`
	// Sync is what sync printed last when it failed or ended.
	Sync string `json:"sync,omitempty"`
	// Statements are the last statements the fuzzer ran.
	Statements string `json:"last_statements,omitempty"`
}

func (d *Divergence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "after %d operations (phase %d): %d missing, %d extra, %d different items", d.Op, d.Phase, d.MissingCount, d.ExtraCount, d.DifferentCount)
	if len(d.Resurrected) > 0 {
		fmt.Fprintf(&b, ", %d resurrected", len(d.Resurrected))
	}
	b.WriteString("\n")
	for _, l := range d.Missing {
		b.WriteString("  - " + l + "\n")
	}
	for _, l := range d.Extra {
		b.WriteString("  + " + l + "\n")
	}
	for _, l := range d.Different {
		b.WriteString("  ~ " + l + "\n")
	}
	for _, l := range d.Resurrected {
		b.WriteString("  resurrected: " + l + "\n")
	}
	if d.Verify != "" {
		b.WriteString("verify:\n" + d.Verify + "\n")
	}
	if d.Sync != "" {
		b.WriteString("sync:\n" + d.Sync + "\n")
	}
	if d.Statements != "" {
		b.WriteString("last statements ([session] statement):\n" + d.Statements)
	}
	return b.String()
}

func (d *Divergence) empty() bool {
	return d.MissingCount+d.ExtraCount+d.DifferentCount == 0 && len(d.Resurrected) == 0 && d.Verify == "" && d.Sync == ""
}

// oracle compares the synced table with a fresh migrate of the source.
type oracle struct {
	client *dynamodb.Client
	pk, sk string
	// gone holds the keys of items an earlier check saw deleted.
	gone map[string]bool
	last map[string]string
}

func newOracle(ctx context.Context, endpoint string, schema *mapping.TableSchema) (*oracle, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("fuzz", "fuzz", "")))
	if err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	o := &oracle{client: client, pk: schema.PK.Name, gone: map[string]bool{}}
	if schema.SK != nil {
		o.sk = schema.SK.Name
	}
	return o, nil
}

// scan reads a whole table: item key → item, both as sorted JSON.
func (o *oracle) scan(ctx context.Context, table string) (map[string]string, error) {
	items := map[string]string{}
	var start map[string]types.AttributeValue
	for {
		out, err := o.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: start})
		if err != nil {
			return nil, fmt.Errorf("scanning %s: %w", table, err)
		}
		for _, it := range out.Items {
			key := map[string]types.AttributeValue{o.pk: it[o.pk]}
			if o.sk != "" {
				key[o.sk] = it[o.sk]
			}
			k, err := mapping.ItemJSON(key)
			if err != nil {
				return nil, err
			}
			line, err := mapping.ItemJSON(it)
			if err != nil {
				return nil, err
			}
			items[k] = line
		}
		if len(out.LastEvaluatedKey) == 0 {
			return items, nil
		}
		start = out.LastEvaluatedKey
	}
}

func (o *oracle) deleteTable(ctx context.Context, table string) {
	_, _ = o.client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
}

// compare holds got (the synced table) to want (a fresh migrate), and
// remembers which keys disappeared for the next checks.
func (o *oracle) compare(want, got map[string]string) *Divergence {
	d := &Divergence{}
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			d.MissingCount++
			if len(d.Missing) < 12 {
				d.Missing = append(d.Missing, want[k])
			}
		case g != want[k]:
			d.DifferentCount++
			if len(d.Different) < 12 {
				d.Different = append(d.Different, g+"\n    want "+want[k])
			}
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; ok {
			continue
		}
		d.ExtraCount++
		if len(d.Extra) < 12 {
			d.Extra = append(d.Extra, got[k])
		}
		if o.gone[k] && len(d.Resurrected) < 12 {
			d.Resurrected = append(d.Resurrected, k)
		}
	}
	for k := range o.last {
		if _, ok := want[k]; !ok {
			o.gone[k] = true
		}
	}
	for k := range want {
		delete(o.gone, k) // the source made it again
	}
	o.last = want
	return d
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
