package export

import (
	"unsafe"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// waitlist is what a file keeps of its items until it is durable. Not the
// items themselves: an item points into its builder's slab and arena (its
// key and encoded body share 16 KiB blocks with other items), so holding
// it keeps all of that alive, and every held pointer is one more for the
// garbage collector to scan while the file fills. What an acknowledgement
// needs is each item's key (kept in one pointer-free buffer) and Origin.
// Items of split aggregates are kept whole: the pipeline's split gates
// hold on to them after their acknowledgement.
type waitlist struct {
	keys  []byte
	items []waiting
	// runs says where to acknowledge: the first n items go to the first
	// run's Results, and so on.
	runs []ackRun
}

type waiting struct {
	origin any
	whole  *mapping.Item // split aggregates only
	end    uint32        // the key is keys[previous end:end]
	part   int32
	pkLen  int32
}

type ackRun struct {
	res sink.Results
	n   int
}

// ackChunk is how many items one call to Results.Acked gets.
const ackChunk = 256

// reserve gives an empty waitlist room for about n items of keyBytes
// bytes of keys, the size of the previous file, so that it does not grow
// by copying.
func (w *waitlist) reserve(n, keyBytes int) {
	w.items = make([]waiting, 0, n+n/8)
	w.keys = make([]byte, 0, keyBytes+keyBytes/8)
}

func (w *waitlist) add(batch []*mapping.Item, res sink.Results) {
	for _, it := range batch {
		w.keys = append(w.keys, it.Key...)
		wt := waiting{origin: it.Origin, end: uint32(len(w.keys)), part: int32(it.Part), pkLen: int32(it.PKLen)}
		if sink.InSplit(it) {
			wt.whole = it
		}
		w.items = append(w.items, wt)
	}
	if k := len(w.runs) - 1; k >= 0 && w.runs[k].res == res {
		w.runs[k].n += len(batch)
	} else {
		w.runs = append(w.runs, ackRun{res: res, n: len(batch)})
	}
}

func (w *waitlist) len() int { return len(w.items) }

// ack acknowledges every item to its Results, then hands each to track.
// The items it makes live only for the call: their keys point into the
// waitlist's buffer, which is never written again, and track must copy a
// key it keeps.
func (w *waitlist) ack(track func(*mapping.Item)) {
	var slab [ackChunk]mapping.Item
	ptrs := make([]*mapping.Item, 0, ackChunk)
	at, start := 0, uint32(0)
	for _, r := range w.runs {
		for done := 0; done < r.n; {
			ptrs = ptrs[:0]
			for j := 0; j < ackChunk && done < r.n; j, done = j+1, done+1 {
				wt := &w.items[at]
				at++
				if wt.whole != nil {
					ptrs = append(ptrs, wt.whole)
				} else {
					slab[j] = mapping.Item{Key: unsafe.String(&w.keys[start], int(wt.end-start)), PKLen: int(wt.pkLen), Part: int(wt.part), Origin: wt.origin}
					ptrs = append(ptrs, &slab[j])
				}
				start = wt.end
			}
			r.res.Acked(ptrs)
			for _, it := range ptrs {
				track(it)
			}
		}
	}
	*w = waitlist{}
}
