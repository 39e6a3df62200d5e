package patterns

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/verify"
)

// projection is the compared attributes of one item, or the attributes a
// row should give; an absent attribute is absent from the map.
type projection map[string]types.AttributeValue

// answerDiff is how the two answers of one comparison differ.
type answerDiff struct {
	// onlySQL and onlyItems are positions in the SQL's rows and in the
	// items with no counterpart; pairs are counterparts that differ in
	// some attributes.
	onlySQL, onlyItems []int
	pairs              [][2]int // {row, item}
	// order is the first position where the answers, equal as multisets,
	// differ in order (ordered: patterns), -1 when they do not.
	order int
}

func (d *answerDiff) empty() bool {
	return len(d.onlySQL) == 0 && len(d.onlyItems) == 0 && len(d.pairs) == 0 && d.order < 0
}

// diffAnswers compares what the SQL should give (want, one projection per
// row) with what DynamoDB gave (got): as multisets, then, when ordered,
// in order. Values compare as DynamoDB values (verify.Equal: 1.50 is 1.5).
// Unmatched rows and items that agree on some but not all attributes are
// paired, so that the report can say which attributes differ.
func diffAnswers(want, got []projection, ordered bool) *answerDiff {
	d := &answerDiff{order: -1}
	byKey := map[string][]int{}
	for j, g := range got {
		k := canonical(g)
		byKey[k] = append(byKey[k], j)
	}
	matched := make([]bool, len(got))
	for i, w := range want {
		k := canonical(w)
		if js := byKey[k]; len(js) > 0 {
			matched[js[0]] = true
			byKey[k] = js[1:]
			continue
		}
		d.onlySQL = append(d.onlySQL, i)
	}
	for j := range got {
		if !matched[j] {
			d.onlyItems = append(d.onlyItems, j)
		}
	}
	d.pair(want, got)
	if ordered && len(d.onlySQL) == 0 && len(d.onlyItems) == 0 {
		for i := range want {
			if canonical(want[i]) != canonical(got[i]) {
				d.order = i
				break
			}
		}
	}
	return d
}

// pair moves unmatched rows and items that share at least one equal
// attribute, most shared first, into pairs.
func (d *answerDiff) pair(want, got []projection) {
	type cand struct{ i, j, same int }
	var cands []cand
	for _, i := range d.onlySQL {
		for _, j := range d.onlyItems {
			if s := sameAttributes(want[i], got[j]); s > 0 && s < max(len(want[i]), len(got[j])) {
				cands = append(cands, cand{i, j, s})
			}
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].same > cands[b].same })
	usedI, usedJ := map[int]bool{}, map[int]bool{}
	for _, c := range cands {
		if usedI[c.i] || usedJ[c.j] {
			continue
		}
		usedI[c.i], usedJ[c.j] = true, true
		d.pairs = append(d.pairs, [2]int{c.i, c.j})
	}
	sort.Slice(d.pairs, func(a, b int) bool { return d.pairs[a][0] < d.pairs[b][0] })
	keep := func(xs []int, used map[int]bool) []int {
		var out []int
		for _, x := range xs {
			if !used[x] {
				out = append(out, x)
			}
		}
		return out
	}
	d.onlySQL, d.onlyItems = keep(d.onlySQL, usedI), keep(d.onlyItems, usedJ)
}

func sameAttributes(a, b projection) int {
	n := 0
	for k, av := range a {
		if bv, ok := b[k]; ok && verify.Equal(av, bv) {
			n++
		}
	}
	return n
}

// canonical is a projection as text that two Equal projections share:
// sorted attribute names, numbers in canonical form, sets sorted.
func canonical(p projection) string {
	var sb strings.Builder
	writeCanonical(&sb, &types.AttributeValueMemberM{Value: p})
	return sb.String()
}

func writeCanonical(sb *strings.Builder, av types.AttributeValue) {
	switch x := av.(type) {
	case *types.AttributeValueMemberN:
		n, err := mapping.NormalizeNumber(x.Value)
		if err != nil {
			n = x.Value
		}
		sb.WriteString("N:" + n)
	case *types.AttributeValueMemberNS:
		ns := make([]string, len(x.Value))
		for i, v := range x.Value {
			if n, err := mapping.NormalizeNumber(v); err == nil {
				v = n
			}
			ns[i] = v
		}
		writeSet(sb, "NS", ns)
	case *types.AttributeValueMemberSS:
		writeSet(sb, "SS", x.Value)
	case *types.AttributeValueMemberBS:
		bs := make([]string, len(x.Value))
		for i, b := range x.Value {
			bs[i] = string(b)
		}
		writeSet(sb, "BS", bs)
	case *types.AttributeValueMemberL:
		sb.WriteString("L[")
		for _, e := range x.Value {
			writeCanonical(sb, e)
			sb.WriteByte(',')
		}
		sb.WriteByte(']')
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(x.Value))
		for k := range x.Value {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sb.WriteString("M{")
		for _, k := range keys {
			sb.WriteString(quote(k) + ":")
			writeCanonical(sb, x.Value[k])
			sb.WriteByte(',')
		}
		sb.WriteByte('}')
	default:
		sb.WriteString(verify.Value{AV: av}.Text())
	}
}

func writeSet(sb *strings.Builder, kind string, elems []string) {
	s := append([]string(nil), elems...)
	sort.Strings(s)
	sb.WriteString(kind + "<")
	for i, e := range s {
		if i > 0 && e == s[i-1] {
			continue
		}
		sb.WriteString(quote(e) + ",")
	}
	sb.WriteByte('>')
}

func quote(s string) string { return verify.Value{AV: &types.AttributeValueMemberS{Value: s}}.Text() }
