package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
)

// Partial success of BatchWriteItem.
//
// The proxy forwards only some of a batch's write requests and tells the
// client the others are unprocessed. Both halves are true: the backend
// really applied exactly what was forwarded (and whatever it itself reports
// as unprocessed stays unprocessed), and the held-back requests really were
// never sent. A client that resends UnprocessedItems therefore ends with
// every item written exactly as if DynamoDB had been under pressure.

// splitBatch parses a BatchWriteItem body and returns the body to forward
// and the held-back requests by table. ok is false when the body cannot be
// split (unparseable, or fewer than two write requests), in which case the
// request is forwarded unchanged.
func splitBatch(body []byte, d *dice) (fwd []byte, held map[string][]json.RawMessage, ok bool) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, nil, false
	}
	var items map[string][]json.RawMessage
	if err := json.Unmarshal(top["RequestItems"], &items); err != nil {
		return nil, nil, false
	}
	// Walk tables in name order so the seeded choice is reproducible.
	tables := make([]string, 0, len(items))
	n := 0
	for t, reqs := range items {
		tables = append(tables, t)
		n += len(reqs)
	}
	if n < 2 {
		return nil, nil, false
	}
	sort.Strings(tables)
	keep := d.subset(n)

	forward := make(map[string][]json.RawMessage, len(items))
	held = make(map[string][]json.RawMessage)
	i := 0
	for _, t := range tables {
		for _, req := range items[t] {
			if keep[i] {
				forward[t] = append(forward[t], req)
			} else {
				held[t] = append(held[t], req)
			}
			i++
		}
	}
	rewritten, err := marshal(forward)
	if err != nil {
		return nil, nil, false
	}
	top["RequestItems"] = rewritten
	if fwd, err = marshal(top); err != nil {
		return nil, nil, false
	}
	return fwd, held, true
}

// mergeUnprocessed adds the held-back requests to a successful
// BatchWriteItem response's UnprocessedItems, keeping every other field
// (ConsumedCapacity, ItemCollectionMetrics) as the backend sent it.
func mergeUnprocessed(resp []byte, held map[string][]json.RawMessage) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(resp, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("backend response is not a JSON object")
	}
	unprocessed := map[string][]json.RawMessage{}
	if raw, ok := top["UnprocessedItems"]; ok && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &unprocessed); err != nil {
			return nil, err
		}
	}
	for t, reqs := range held {
		unprocessed[t] = append(unprocessed[t], reqs...)
	}
	merged, err := marshal(unprocessed)
	if err != nil {
		return nil, err
	}
	top["UnprocessedItems"] = merged
	return marshal(top)
}

// marshal encodes without HTML escaping, so raw requests pass through
// byte-for-byte apart from whitespace.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
