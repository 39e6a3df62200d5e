package ddbnoop

// Item sizes follow DynamoDB's published rules
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
//
//   - an item is the sum over its attributes of the UTF-8 length of the name
//     plus the size of the value;
//   - S: UTF-8 bytes; B: raw (base64-decoded) bytes;
//   - N: 1 byte per two significant digits (rounded up) plus 1 byte, leading
//     and trailing zeros trimmed. DynamoDB's real encoding is base-100 and can
//     differ from this by a byte depending on where the decimal point falls;
//     AWS itself documents the rule as approximate;
//   - BOOL and NULL: 1 byte;
//   - SS, NS, BS: the sum of the element sizes;
//   - L and M: 3 bytes plus, per element, 1 byte plus the element's size (and
//     for M the UTF-8 length of the element's name).
//
// A write costs ceil(size/1024) write units, at least 1.

const (
	// maxItemSize is DynamoDB's 400 KB item limit.
	maxItemSize = 400 * 1024
	// maxNumberDigits is DynamoDB's precision limit for N.
	maxNumberDigits = 38
	// maxAttrDepth is DynamoDB's nesting limit for L and M.
	maxAttrDepth = 32
)

// avType is an AttributeValue's data type.
type avType uint8

const (
	avNone avType = iota
	avS
	avN
	avB
	avBOOL
	avNULL
	avSS
	avNS
	avBS
	avL
	avM
)

// String returns the type's wire name, for error messages.
func (t avType) String() string {
	switch t {
	case avS:
		return "S"
	case avN:
		return "N"
	case avB:
		return "B"
	case avBOOL:
		return "BOOL"
	case avNULL:
		return "NULL"
	case avSS:
		return "SS"
	case avNS:
		return "NS"
	case avBS:
		return "BS"
	case avL:
		return "L"
	case avM:
		return "M"
	}
	return "?"
}

// writeUnits converts an item size to write capacity units.
func writeUnits(size int) int {
	if size <= 1024 {
		return 1
	}
	return (size + 1023) / 1024
}

// attrValue reads one AttributeValue ({"S":"..."}, {"M":{...}}, ...) and
// returns its type, its raw scalar contents (for S, N and B; key attributes
// are always scalars) and its size. Errors are errSyntax or *apiError.
func (s *scanner) attrValue(depth int) (typ avType, raw []byte, size int, err error) {
	if depth > maxAttrDepth {
		return avNone, nil, 0, validationError("Nesting Levels have exceeded supported limits")
	}
	if !s.consume('{') {
		return avNone, nil, 0, errSyntax
	}
	members := 0
	for first := true; ; first = false {
		name, _, ok, err := s.member(first)
		if err != nil {
			return avNone, nil, 0, err
		}
		if !ok {
			break
		}
		members++
		var esc bool
		switch string(name) {
		case "S":
			typ = avS
			if raw, esc, err = s.str(); err == nil {
				size, err = decodedLen(raw, esc)
			}
		case "N":
			typ = avN
			if raw, esc, err = s.str(); err == nil {
				size, err = numberSize(raw, esc)
			}
		case "B":
			typ = avB
			if raw, esc, err = s.str(); err == nil {
				size, err = base64Size(raw, esc)
			}
		case "BOOL", "NULL":
			typ = avBOOL
			if name[0] == 'N' {
				typ = avNULL
			}
			size = 1
			err = s.skipValue(depth)
		case "SS", "NS", "BS":
			typ = avSS
			if name[0] == 'N' {
				typ = avNS
			} else if name[0] == 'B' {
				typ = avBS
			}
			size, err = s.scalarSet(typ)
		case "L":
			typ = avL
			size, err = s.list(depth)
		case "M":
			typ = avM
			size, err = s.mapValue(depth)
		default:
			return avNone, nil, 0, validationError("Supplied AttributeValue has an unsupported data type: " + string(name))
		}
		if err != nil {
			return avNone, nil, 0, err
		}
	}
	if members != 1 {
		return avNone, nil, 0, validationError("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return typ, raw, size, nil
}

// scalarSet sizes SS, NS and BS: the sum of the element sizes.
func (s *scanner) scalarSet(typ avType) (int, error) {
	if !s.consume('[') {
		return 0, errSyntax
	}
	size := 0
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil {
			return 0, err
		}
		if !ok {
			return size, nil
		}
		raw, esc, err := s.str()
		if err != nil {
			return 0, err
		}
		var n int
		switch typ {
		case avNS:
			n, err = numberSize(raw, esc)
		case avBS:
			n, err = base64Size(raw, esc)
		default:
			n, err = decodedLen(raw, esc)
		}
		if err != nil {
			return 0, err
		}
		size += n
	}
}

// list sizes L: 3 bytes overhead plus 1 byte and the size of each element.
func (s *scanner) list(depth int) (int, error) {
	if !s.consume('[') {
		return 0, errSyntax
	}
	size := 3
	for first := true; ; first = false {
		ok, err := s.element(first)
		if err != nil {
			return 0, err
		}
		if !ok {
			return size, nil
		}
		_, _, n, err := s.attrValue(depth + 1)
		if err != nil {
			return 0, err
		}
		size += 1 + n
	}
}

// mapValue sizes M: like L, plus each element's name.
func (s *scanner) mapValue(depth int) (int, error) {
	if !s.consume('{') {
		return 0, errSyntax
	}
	size := 3
	for first := true; ; first = false {
		name, esc, ok, err := s.member(first)
		if err != nil {
			return 0, err
		}
		if !ok {
			return size, nil
		}
		nameLen, err := decodedLen(name, esc)
		if err != nil {
			return 0, err
		}
		_, _, n, err := s.attrValue(depth + 1)
		if err != nil {
			return 0, err
		}
		size += 1 + nameLen + n
	}
}

// numberSize validates a DynamoDB number and returns its approximate stored
// size: ceil(significant digits / 2) + 1.
func numberSize(raw []byte, escaped bool) (int, error) {
	if escaped {
		// A number never needs escaping; an escaped one is garbage.
		return 0, validationError("The parameter cannot be converted to a numeric value")
	}
	i := 0
	if i < len(raw) && (raw[i] == '-' || raw[i] == '+') {
		i++
	}
	// Count mantissa digits, trimming leading zeros as we go and trailing
	// zeros by remembering the last non-zero digit.
	digits, sig, lastNonZero := 0, 0, 0
	sawDot := false
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == '.' && !sawDot {
			sawDot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		if c != '0' || sig > 0 {
			sig++
			if c != '0' {
				lastNonZero = sig
			}
		}
	}
	if digits == 0 {
		return 0, validationError("The parameter cannot be converted to a numeric value: " + string(raw))
	}
	if i < len(raw) { // exponent
		if raw[i] != 'e' && raw[i] != 'E' {
			return 0, validationError("The parameter cannot be converted to a numeric value: " + string(raw))
		}
		i++
		if i < len(raw) && (raw[i] == '-' || raw[i] == '+') {
			i++
		}
		if i == len(raw) {
			return 0, validationError("The parameter cannot be converted to a numeric value: " + string(raw))
		}
		for ; i < len(raw); i++ {
			if raw[i] < '0' || raw[i] > '9' {
				return 0, validationError("The parameter cannot be converted to a numeric value: " + string(raw))
			}
		}
	}
	sig = lastNonZero
	if sig > maxNumberDigits {
		return 0, validationError("Attempting to store more than 38 significant digits in a Number")
	}
	return (sig+1)/2 + 1, nil
}

// base64Size returns the decoded length of base64 text without decoding it.
func base64Size(raw []byte, escaped bool) (int, error) {
	n, err := decodedLen(raw, escaped) // escapes in base64 can only be \/ or \u00XX
	if err != nil {
		return 0, err
	}
	if !escaped {
		for n > 0 && raw[n-1] == '=' {
			n--
		}
	} else if len(raw) > 0 && raw[len(raw)-1] == '=' {
		n--
		if len(raw) > 1 && raw[len(raw)-2] == '=' {
			n--
		}
	}
	return n * 6 / 8, nil
}
