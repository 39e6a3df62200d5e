package postgres

import (
	"testing"

	"github.com/dynafold/dynafold/source"
)

func TestAllVisible(t *testing.T) {
	txn := func(x uint32) *source.Txn { return &source.Txn{XID: x} }
	cases := []struct {
		name string
		snap string
		txns []*source.Txn
		want bool
	}{
		{"committed before xmin", "100:105:", []*source.Txn{txn(99)}, true},
		{"between xmin and xmax, not in progress", "100:105:101,103", []*source.Txn{txn(102)}, true},
		{"still in progress", "100:105:101,103", []*source.Txn{txn(102), txn(103)}, false},
		{"not yet begun for the snapshot", "100:105:", []*source.Txn{txn(105)}, false},
		{"no xid", "100:105:", []*source.Txn{txn(0)}, true},
		// 64-bit ids in the snapshot, 32-bit in the WAL: epoch 1.
		{"epoch and wraparound", "4294967396:4294967400:4294967398", []*source.Txn{txn(99), txn(101)}, true},
		{"epoch, in progress", "4294967396:4294967400:4294967398", []*source.Txn{txn(102)}, false},
		{"xmax just past a wraparound", "4294967290:4294967300:", []*source.Txn{txn(4294967295), txn(3)}, true},
		{"xmax just past a wraparound, not begun", "4294967290:4294967300:", []*source.Txn{txn(4)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := allVisible(c.snap, c.txns); got != c.want {
				t.Fatalf("allVisible(%q) = %v, want %v", c.snap, got, c.want)
			}
		})
	}
}
