package plan

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/reverse"
)

// What cannot reverse is a mapping error naming the entity, the column,
// the key path and the file's line; the section is in every output form.
func TestAddReversible(t *testing.T) {
	rr := &reverse.Report{Entities: []*reverse.Entity{{
		Entity: "server", Table: "servers", Path: "entities.server", Line: 12,
		Columns: []reverse.Column{
			{Column: "portfolio_id", Status: reverse.Owned, Owner: "attribute PortfolioID"},
			{Column: "id", Status: reverse.Irreversible, Path: "entities.server.key.sk", Reason: "only key SK holds it, and |lower folds the case of the text", Fix: "keep the raw value in an attribute, e.g. attributes: {ID: id}"},
		},
	}}}
	r := MappingReport("portfolios", nil)
	require.Equal(t, StatusOK, r.Status)
	r.AddReversible(rr, "configs/portfolios.yaml")
	require.Equal(t, StatusMappingErrors, r.Status)
	require.Equal(t, 1, r.Counts.Errors)
	f := r.Findings[0]
	require.Equal(t, "reverse.irreversible", f.Check)
	require.Equal(t, "entities.server.key.sk", f.Path)
	require.Equal(t, "server", f.Entity)
	require.Equal(t, "entity server column id cannot be rebuilt from the items: only key SK holds it, and |lower folds the case of the text. "+
		"Fix: keep the raw value in an attribute, e.g. attributes: {ID: id} (configs/portfolios.yaml:12)", f.Message)

	var text, md, js bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	require.Contains(t, text.String(), "REVERSIBILITY (fail-back)\n  not reversible: 1 of 1 entities")
	require.Contains(t, text.String(), "id            IRREVERSIBLE")
	require.NoError(t, r.WriteMarkdown(&md))
	require.Contains(t, md.String(), "### Reversibility")
	require.Contains(t, md.String(), "| `id` |  | **irreversible** |")
	require.NoError(t, r.WriteJSON(&js))
	var back struct {
		Reversible *reverse.Report `json:"reversible"`
	}
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Equal(t, rr, back.Reversible)
}
