package reverse

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

func TestPlainAttributesAndDerivedAncestorCopies(t *testing.T) {
	r := analyze(t, header+portfolioEntities, portfolioTables...)
	require.True(t, r.Reversible, r.Summary())

	p := entity(t, r, "portfolio")
	require.Equal(t, `_type = "portfolio"`, p.RecognizedBy)
	id := column(t, p.Columns, "id")
	require.Equal(t, Owned, id.Status)
	require.Equal(t, "attribute PortfolioID", id.Owner, "a plain attribute is preferred to a key part")
	require.Equal(t, []string{`key PK "${id}"`}, id.Also)
	require.Equal(t, &Source{Attribute: "PortfolioID", Type: "N"}, id.Source)

	db := entity(t, r, "database")
	require.Len(t, db.Columns, 2, "the ancestor's columns are not the entity's")
	require.Contains(t, db.Derived, Derived{Holder: "attribute PortfolioID", Source: "server.portfolio_id",
		Why: "a pre-joined copy of servers.portfolio_id, which entity server writes back"})
}

func TestKeyParts(t *testing.T) {
	tables := []*source.Table{table("orders", []string{"user_id", "id"},
		col("user_id", value.String, "text"), col("id", value.Int, "integer"), col("placed_at", value.Timestamp, "timestamp(3) with time zone"),
		nullable(col("region", value.String, "text")), nullable(col("note", value.String, "text")))}
	for _, tc := range []struct {
		name, key string
		// owned and irreversible columns, by name.
		owned, lost, unmapped []string
		reason                string
	}{
		{name: "prefix and one column", key: `{pk: "USER#${user_id}", sk: "ORDER#${id}#${placed_at|iso}#${region}#${note}"}`,
			owned: []string{"user_id", "id", "placed_at"}, lost: []string{"region", "note"}, reason: `can contain "#"`},
		{name: "fixed width and numbers cut both ways", key: `{pk: "USER#${user_id}", sk: "${placed_at|iso}${id}#${region}!${note}"}`,
			owned: []string{"user_id", "id", "placed_at"}, lost: []string{"region", "note"}},
		{name: "one free text part is cut from both ends", key: `{pk: "${user_id}#${id}", sk: "${id|pad:9}#${note}#${placed_at|iso}"}`,
			owned: []string{"user_id", "id", "placed_at", "note"}, unmapped: []string{"region"}},
		{name: "two free text parts", key: `{pk: "U#${user_id}#O#${id}", sk: "${id|pad:9}#${note}#${placed_at|iso}#${region}"}`,
			owned: []string{"user_id", "id"}, lost: []string{"note", "placed_at", "region"}, reason: `the text of ${note} can contain "#", which also separates it from ${placed_at|iso}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, header+`
entities:
  order:
    from: orders
    key: `+tc.key, tables...)
			e := entity(t, r, "order")
			for _, c := range tc.owned {
				require.Equal(t, Owned, column(t, e.Columns, c).Status, c)
			}
			for _, c := range tc.lost {
				got := column(t, e.Columns, c)
				require.Equal(t, Irreversible, got.Status, c)
				require.Contains(t, got.Reason, "cannot be cut apart", c)
				require.Contains(t, got.Reason, tc.reason)
			}
			if tc.name == "one free text part is cut from both ends" {
				require.Equal(t, &Source{Attribute: "SK", Type: "S", Template: "${id|pad:9}#${note}#${placed_at|iso}", Part: 1}, column(t, e.Columns, "note").Source)
			}
			for _, c := range tc.unmapped {
				require.Equal(t, Unmapped, column(t, e.Columns, c).Status, c)
			}
		})
	}
}

func TestLossyTransformsAreRefusedUnlessTheRawValueIsKept(t *testing.T) {
	servers := table("servers", nil, col("id", value.String, "text"), col("portfolio_id", value.Int, "integer"), col("seen", value.Timestamp, "timestamp"))
	lossy := header + `
entities:
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER#${id|lower}#${seen|date}"}
`
	r := analyze(t, lossy, servers)
	require.False(t, r.Reversible)
	e := entity(t, r, "server")
	id := column(t, e.Columns, "id")
	require.Equal(t, Irreversible, id.Status)
	require.Equal(t, `only key SK "SERVER#${id|lower}#${seen|date}" holds it, and |lower folds the case of the text`, id.Reason)
	require.Equal(t, "keep the raw value in an attribute, e.g. attributes: {ID: id}", id.Fix)
	require.Equal(t, "entities.server.key.sk", id.Path)
	require.Contains(t, column(t, e.Columns, "seen").Reason, "|date keeps the calendar date and drops the time of day")

	fs := r.Failures()
	require.Len(t, fs, 2)
	require.Equal(t, "server", fs[0].Entity)
	require.Equal(t, "id", fs[0].Column)

	kept := analyze(t, lossy+`    attributes: {ServerID: id, Seen: seen}`, servers)
	require.True(t, kept.Reversible, kept.Summary())
	e = entity(t, kept, "server")
	require.Equal(t, "attribute ServerID", column(t, e.Columns, "id").Owner)
	require.Equal(t, []string{secondsOrMillis("kept to milliseconds", 6)}, column(t, e.Columns, "seen").Caveats)
	require.Contains(t, e.Derived, Derived{Holder: `key SK "SERVER#${id|lower}#${seen|date}"`, Source: "id",
		Why: "|lower folds the case of the text; the column comes back from attribute ServerID"})
}

func secondsOrMillis(prefix string, p int) string {
	if prefix == "kept to milliseconds" {
		return millisCaveat(p)
	}
	return secondsCaveat(p)
}

func TestTransformsAndConversions(t *testing.T) {
	tb := table("things", nil,
		col("id", value.Int, "bigint"),
		col("code", value.String, "varchar(10)"),
		col("uid", value.String, "uuid"),
		col("day", value.Date, "date"),
		col("at", value.Timestamp, "timestamp(0) without time zone"),
		col("at6", value.Timestamp, "timestamp with time zone"),
		col("flag", value.Int, "integer"),
		col("tags", value.List, "text[]"),
		col("doc", value.JSON, "json"),
		col("body", value.String, "text"),
		col("amount", value.Decimal, "numeric(12,2)"),
	)
	for _, tc := range []struct {
		name, attr string
		col        string
		status     Status
		text       string // in the reason or the caveats
	}{
		{"pad on a number", `K: "${id|pad:12}"`, "id", Owned, ""},
		{"pad on text", `K: "${code|pad:12}"`, "code", Irreversible, "leading zeros"},
		{"lower on a uuid", `K: "${uid|lower}"`, "uid", Owned, ""},
		{"shard", `K: "${id|shard:4}"`, "id", Irreversible, "hash bucket"},
		{"date of a date", `K: "${day|date}"`, "day", Owned, ""},
		{"epoch of whole seconds", `K: "${at|epoch}"`, "at", Owned, ""},
		{"epoch of microseconds", `K: "${at6|epoch}"`, "at6", Owned, "kept to whole seconds: the column keeps 6 fractional digits"},
		{"iso of microseconds", `K: "${at6|iso}"`, "at6", Owned, "kept to milliseconds: the column keeps 6 fractional digits"},
		{"timestamp as N", `K: {from: at6, type: N}`, "at6", Owned, "kept to whole seconds"},
		{"text as N", `K: {from: code, type: N}`, "code", Irreversible, "loses its own form"},
		{"number as BOOL", `K: {from: flag, type: BOOL}`, "flag", Irreversible, "0 or 1"},
		{"array as a set", `K: {from: tags, type: SS}`, "tags", Irreversible, "store it as L"},
		{"array as a list", `K: tags`, "tags", Owned, ""},
		{"json", `K: doc`, "doc", Owned, "spacing"},
		{"text as M", `K: {from: body, type: M}`, "body", Irreversible, "formatting"},
		{"decimal as N", `K: amount`, "amount", Owned, ""},
		{"decimal as text", `K: {from: amount, type: S}`, "amount", Owned, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := analyze(t, header+thingMapping(tc.col, tc.attr), tb)
			c := column(t, entity(t, r, "thing").Columns, tc.col)
			require.Equal(t, tc.status, c.Status, "%+v", c)
			text := c.Reason
			for _, cv := range c.Caveats {
				text += " " + cv
			}
			require.Contains(t, text, tc.text)
			if tc.text == "" {
				require.Empty(t, c.Caveats)
				require.Empty(t, c.Reason)
			}
		})
	}
}

// thingMapping maps every column of things plainly except under, which
// only attr holds.
func thingMapping(under, attr string) string {
	m := `
entities:
  thing:
    from: things
    key: {pk: "T#${id}", sk: X}
    attributes:
`
	if under == "id" {
		m = `
entities:
  thing:
    from: things
    key: {pk: "T#${code}", sk: "${day}#${uid}"}
    attributes:
`
	}
	for _, c := range []string{"id", "code", "uid", "day", "at", "at6", "flag", "tags", "doc", "body", "amount"} {
		if c != under {
			m += "      A_" + c + ": " + c + "\n"
		}
	}
	return m + "      " + attr + "\n"
}

func TestUnmappedColumns(t *testing.T) {
	tb := table("users", nil,
		col("id", value.Int, "integer"),
		nullable(col("nick", value.String, "text")),
		defaulted(col("created_at", value.Timestamp, "timestamp with time zone")),
		col("email", value.String, "text"))
	r := analyze(t, header+`
entities:
  user:
    from: users
    key: {pk: "USER#${id}", sk: PROFILE}
`, tb)
	e := entity(t, r, "user")
	require.Equal(t, Owned, column(t, e.Columns, "id").Status)
	require.Equal(t, Unmapped, column(t, e.Columns, "nick").Status)
	require.Contains(t, column(t, e.Columns, "nick").Reason, "an insert leaves it NULL")
	require.Equal(t, Unmapped, column(t, e.Columns, "created_at").Status)
	require.Contains(t, column(t, e.Columns, "created_at").Reason, "its default")
	email := column(t, e.Columns, "email")
	require.Equal(t, Irreversible, email.Status)
	require.Equal(t, "no item holds it, and it is NOT NULL without a default: an insert would fail", email.Reason)
	require.Equal(t, "keep the raw value in an attribute, e.g. attributes: {Email: email}; or give the column a default", email.Fix)

	// A primary-key column must come back, default or not.
	tb = table("users", nil, defaulted(col("id", value.Int, "integer")), col("email", value.String, "text"))
	r = analyze(t, header+`
entities:
  user:
    from: users
    key: {pk: "USER#${email}", sk: PROFILE}
`, tb)
	id := column(t, entity(t, r, "user").Columns, "id")
	require.Equal(t, Irreversible, id.Status)
	require.Contains(t, id.Reason, "fail-back could not find the row")
}

func TestQueryEntitiesAreRefused(t *testing.T) {
	r := analyze(t, header+`
entities:
  best:
    query: SELECT class_id, MAX(total) AS best FROM results GROUP BY class_id
    primary_key: [class_id]
    key: {pk: "CLASS#${class_id}", sk: BEST}
    attributes: {Best: best}
`, &source.Table{Columns: []source.Column{col("class_id", value.Int, ""), col("best", value.Int, "")}})
	require.False(t, r.Reversible)
	e := entity(t, r, "best")
	require.Len(t, e.Problems, 1)
	require.Equal(t, "entities.best.query", e.Problems[0].Path)
	require.Contains(t, e.Problems[0].Reason, "computed by a query")
	require.Contains(t, e.Problems[0].Fix, "leave the entity out")
	fs := r.Failures()
	require.Len(t, fs, 1)
	require.Equal(t, Failure{Entity: "best", Path: "entities.best.query", Line: e.Line, Reason: e.Problems[0].Reason, Fix: e.Problems[0].Fix}, fs[0])
	require.Positive(t, e.Line)
}

var raceTables = []*source.Table{
	table("race_results", []string{"race_id", "racer_id"}, col("race_id", value.Int, "integer"), col("racer_id", value.Int, "integer"), col("total", value.Int, "integer")),
	table("race_readings", []string{"race_id", "racer_id", "second"}, col("race_id", value.Int, "integer"), col("racer_id", value.Int, "integer"),
		col("second", value.Int, "integer"), col("cadence", value.Int, "integer"), nullable(col("output", value.Decimal, "numeric"))),
}

func raceMapping(elements, overflow string) string {
	return header + `
entities:
  result:
    from: race_results
    key: {pk: "racer-${racer_id}", sk: "race-${race_id}"}
    attributes: {Total: total}
    nest:
      Readings:
        from: race_readings
        on: {race_id: race_id, racer_id: racer_id}
        order_by: [second]
        attributes: ` + elements + `
        max_bytes: 14000
        overflow: ` + overflow + "\n"
}

func TestNestedChildRows(t *testing.T) {
	r := analyze(t, raceMapping("{s: second, c: cadence, o: output}", "reject"), raceTables...)
	require.True(t, r.Reversible, r.Summary())
	n := entity(t, r, "result").Nested[0]
	require.Equal(t, "race_readings", n.Table)
	require.Equal(t, "the parent's column race_id (nest on:)", column(t, n.Columns, "race_id").Owner)
	require.Equal(t, "attribute s of each element", column(t, n.Columns, "second").Owner)
	require.Equal(t, &Source{Attribute: "s", Type: "N"}, column(t, n.Columns, "second").Source)
	require.Nil(t, column(t, n.Columns, "race_id").Source, "a pairing column is the parent's")
	require.Equal(t, Owned, column(t, n.Columns, "output").Status)

	// The order alone does not give the ordering column back.
	r = analyze(t, raceMapping("{c: cadence, o: output}", "reject"), raceTables...)
	require.False(t, r.Reversible)
	n = entity(t, r, "result").Nested[0]
	second := column(t, n.Columns, "second")
	require.Equal(t, Irreversible, second.Status)
	require.Contains(t, second.Reason, "orders the nested elements")
	fs := r.Failures()
	require.Len(t, fs, 1)
	require.Equal(t, "Readings.second", fs[0].Column)

	// A NOT NULL child column no element holds.
	r = analyze(t, raceMapping("{s: second, o: output}", "reject"), raceTables...)
	require.Equal(t, Irreversible, column(t, entity(t, r, "result").Nested[0].Columns, "cadence").Status)
}

func TestSplitAndGzipAggregatesReverse(t *testing.T) {
	for _, overflow := range []string{"split", "gzip"} {
		t.Run(overflow, func(t *testing.T) {
			r := analyze(t, raceMapping("{s: second, c: cadence, o: output}", overflow), raceTables...)
			require.True(t, r.Reversible, r.Summary())
			e := entity(t, r, "result")
			require.Equal(t, overflow, e.Nested[0].Overflow)
			if overflow == "split" {
				require.Contains(t, e.Nested[0].Notes[0], "reassembles the elements from the parts")
				require.Contains(t, e.Derived, Derived{Holder: "attribute Parts", Why: "the part count of a split item"})
			} else {
				require.Contains(t, e.Nested[0].Notes[0], "unzips it")
			}
		})
	}
}

func TestMembershipItems(t *testing.T) {
	tables := []*source.Table{
		table("users", nil, col("id", value.Int, "integer"), col("name", value.String, "text")),
		table("user_groups", []string{"user_id", "group_id"}, col("user_id", value.Int, "integer"), col("group_id", value.String, "text"),
			defaulted(col("granted_at", value.Timestamp, "timestamp with time zone"))),
	}
	r := analyze(t, `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  indexes:
    Inverted: {type: global, pk: SK, sk: PK}
  type_attribute: _type
entities:
  user:
    from: users
    key: {pk: "user:${id}", sk: "metadata:user"}
    attributes: {Name: name}
  membership:
    from: user_groups
    join:
      user: {from: users, on: {id: user_id}}
    key: {pk: "user:${user_id}", sk: "group:${group_id}"}
    attributes: {GrantedAt: granted_at, UserName: user.name}
`, tables...)
	require.True(t, r.Reversible, r.Summary())
	e := entity(t, r, "membership")
	require.Equal(t, `key PK "user:${user_id}"`, column(t, e.Columns, "user_id").Owner)
	require.Equal(t, `key SK "group:${group_id}"`, column(t, e.Columns, "group_id").Owner)
	require.Equal(t, &Source{Attribute: "SK", Type: "S", Template: "group:${group_id}"}, column(t, e.Columns, "group_id").Source)
	require.Contains(t, column(t, e.Columns, "granted_at").Caveats[0], "kept to milliseconds")
	require.Equal(t, "a pre-joined copy of users.name, which entity user writes back", e.Derived[0].Why)

	// A membership keyed by an ancestor's column equal to its own by the
	// join still gives its column back.
	r = analyze(t, `
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  membership:
    from: user_groups
    join:
      user: {from: users, on: {id: user_id}}
    key: {pk: "user:${user.id}", sk: "group:${group_id}"}
`, tables...)
	require.True(t, r.Reversible, r.Summary())
	require.Equal(t, `key PK "user:${user.id}"`, column(t, entity(t, r, "membership").Columns, "user_id").Owner)
}

func TestItemsOfEntitiesMustBeToldApart(t *testing.T) {
	tables := []*source.Table{
		table("a", nil, col("id", value.Int, "integer")),
		table("b", nil, col("id", value.Int, "integer")),
	}
	m := `
version: 1
source: {driver: postgres}
target: {table: things, key: {pk: PK, sk: SK}%s}
entities:
  a: {from: a, key: {pk: "X#${id}", sk: "A"}}
  b: {from: b, key: {pk: "X#${id}", sk: "%s"}}
`
	r := analyze(t, sprintf(m, "", "B"), tables...)
	require.True(t, r.Reversible, r.Summary())
	require.Equal(t, `PK "X#", SK "A"`, entity(t, r, "a").RecognizedBy[len("key prefixes "):])

	r = analyze(t, sprintf(m, "", "A"), tables...)
	require.False(t, r.Reversible)
	require.Contains(t, entity(t, r, "a").Problems[0].Reason, "cannot be told from entity b's")
	require.Contains(t, entity(t, r, "a").Problems[0].Fix, "type_attribute")

	r = analyze(t, sprintf(m, ", type_attribute: _type", "A"), tables...)
	require.True(t, r.Reversible, r.Summary())
}

func TestConditionalHoldersDoNotOwn(t *testing.T) {
	tb := table("emps", nil, col("id", value.Int, "integer"), nullable(col("boss", value.Int, "integer")), col("dept", value.String, "text"))
	r := analyze(t, `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: G1PK, sk: G1SK}
  type_attribute: _type
entities:
  emp:
    from: emps
    key: {pk: "EMP#${id}", sk: EMP}
    index:
      GSI1: {pk: "DEPT#${dept}", sk: "BOSS#${boss}"}
`, tb)
	e := entity(t, r, "emp")
	dept := column(t, e.Columns, "dept")
	require.Equal(t, Irreversible, dept.Status)
	require.Contains(t, dept.Reason, "the other half of index GSI1's key (half_key: drop)")
	require.Equal(t, Owned, column(t, e.Columns, "boss").Status, "its own NULL is what leaves it out")
}

func TestHalfKeyKeepOwns(t *testing.T) {
	tb := table("emps", nil, col("id", value.Int, "integer"), nullable(col("boss", value.Int, "integer")), col("dept", value.String, "text"))
	r := analyze(t, `
version: 1
source: {driver: postgres}
target:
  table: things
  key: {pk: PK, sk: SK}
  indexes:
    GSI1: {type: global, pk: G1PK, sk: G1SK, half_key: keep}
  type_attribute: _type
entities:
  emp:
    from: emps
    key: {pk: "EMP#${id}", sk: EMP}
    index:
      GSI1: {pk: "DEPT#${dept}", sk: "BOSS#${boss}"}
`, tb)
	require.True(t, r.Reversible, r.Summary())
	require.Equal(t, `attribute G1PK "DEPT#${dept}"`, column(t, entity(t, r, "emp").Columns, "dept").Owner)
}

func TestNotes(t *testing.T) {
	tb := table("notes", nil, col("id", value.Int, "integer"), col("tenant", value.Int, "integer"),
		nullable(col("deleted_at", value.Timestamp, "timestamp")), defaulted(col("updated_at", value.Timestamp, "timestamp")), col("body", value.String, "text"))
	r := analyze(t, strings.Replace(header, "type_attribute: _type", "type_attribute: _type\n  ttl_attribute: Expires", 1)+`
changes:
  notes: {column: updated_at, deleted: deleted_at}
entities:
  note:
    from: notes
    where: "tenant = 1"
    key: {pk: "T#${tenant}", sk: "NOTE#${id}"}
    attributes: {Body: body}
    ttl: {from: updated_at, offset: 7d}
`, tb)
	e := entity(t, r, "note")
	require.True(t, e.Reversible)
	require.Len(t, e.Notes, 3)
	require.Contains(t, e.Notes[0], "soft deletes in deleted_at")
	require.Contains(t, e.Notes[1], "where: filters")
	require.Contains(t, e.Notes[2], "TTL service")
	upd := column(t, e.Columns, "updated_at")
	require.Equal(t, "TTL attribute Expires", upd.Owner, "the TTL gives its column back")
	require.Contains(t, upd.Caveats[0], "whole seconds")
	require.Contains(t, upd.Caveats[1], "plus 604800s")
}

// A failure carries the line of the entry its path names.
func TestFailureLines(t *testing.T) {
	tb := table("things", nil, col("id", value.Int, "integer"), col("code", value.String, "text"))
	r := analyze(t, header+`
entities:
  thing:
    from: things
    key: {pk: "T#${id}", sk: X}
    attributes:
      Other: id
      Code: {from: code, type: N}
`, tb)
	fs := r.Failures()
	require.Len(t, fs, 1)
	require.Equal(t, "entities.thing.attributes.Code", fs[0].Path)
	require.Equal(t, 17, fs[0].Line, "the line of Code: in the file")
	require.Equal(t, 12, entity(t, r, "thing").Line, "the line of thing:")
}
