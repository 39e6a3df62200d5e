package export

import (
	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/mapping"
)

// AppendItemLine appends one line of ImportTable's DYNAMODB_JSON input
// format, {"Item":{...}} and a newline, to buf. The item is DynamoDB JSON
// exactly as the writer sends it to BatchWriteItem: the body the builder
// encoded once when there is one, otherwise the shared encoder's output
// from the attributes (package ddbjson), so an export and a migrate write
// the same bytes for the same item.
func AppendItemLine(buf []byte, it *mapping.Item) []byte {
	buf = append(buf, `{"Item":`...)
	if it.Body != nil {
		buf = append(buf, it.Body...)
	} else {
		buf = ddbjson.AppendItem(buf, it.Attrs)
	}
	return append(buf, "}\n"...)
}
