package ddbnoop

import "strconv"

// appendBatchResponse renders the BatchWriteItem response by hand: the
// unprocessed requests are copied verbatim from the request body, which is
// both cheap and exactly the shape the SDK sent.
func (s *Server) appendBatchResponse(out []byte, b *batch) []byte {
	out = append(out, `{"UnprocessedItems":{`...)
	firstTable := true
	for ti := range b.tables {
		open := false
		for i := range b.reqs {
			r := &b.reqs[i]
			if r.table != ti || r.admitted {
				continue
			}
			if !open {
				if !firstTable {
					out = append(out, ',')
				}
				firstTable = false
				out = append(out, '"')
				out = append(out, b.tables[ti].name...)
				out = append(out, `":[`...)
				open = true
			} else {
				out = append(out, ',')
			}
			out = append(out, b.body[r.start:r.end]...)
		}
		if open {
			out = append(out, ']')
		}
	}
	out = append(out, '}')
	if b.rcc != rccNone {
		out = append(out, `,"ConsumedCapacity":[`...)
		for ti := range b.tables {
			if ti > 0 {
				out = append(out, ',')
			}
			out = appendConsumed(out, b, ti)
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

// appendConsumed renders one table's ConsumedCapacity. A write to a GSI
// costs the same units again, as if every GSI projected ALL attributes.
func appendConsumed(out []byte, b *batch, ti int) []byte {
	t := b.tables[ti].t
	var tableUnits, total int64
	for i := range b.reqs {
		r := &b.reqs[i]
		if r.table == ti && r.admitted {
			tableUnits += int64(r.wcu)
			total += int64(r.wcu * (1 + popcount(r.gsis)))
		}
	}
	out = append(out, `{"TableName":"`...)
	out = append(out, b.tables[ti].name...)
	out = append(out, `","CapacityUnits":`...)
	out = strconv.AppendInt(out, total, 10)
	if b.rcc == rccIndexes {
		out = append(out, `,"Table":{"CapacityUnits":`...)
		out = strconv.AppendInt(out, tableUnits, 10)
		out = append(out, '}')
		if len(t.gsis) > 0 {
			out = append(out, `,"GlobalSecondaryIndexes":{`...)
			for g := range t.gsis {
				var units int64
				for i := range b.reqs {
					r := &b.reqs[i]
					if r.table == ti && r.admitted && r.gsis&(1<<g) != 0 {
						units += int64(r.wcu)
					}
				}
				if g > 0 {
					out = append(out, ',')
				}
				out = append(out, '"')
				out = append(out, t.gsis[g].input.IndexName...)
				out = append(out, `":{"CapacityUnits":`...)
				out = strconv.AppendInt(out, units, 10)
				out = append(out, '}')
			}
			out = append(out, '}')
		}
	}
	return append(out, '}')
}
