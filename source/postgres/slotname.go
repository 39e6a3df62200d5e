package postgres

import (
	"fmt"
	"strings"
)

// MaxSlotName is the longest replication slot name PostgreSQL accepts, in
// bytes (NAMEDATALEN - 1).
const MaxSlotName = 63

// FoldSlotName folds name to the characters PostgreSQL accepts in a
// replication slot name (ReplicationSlotValidateName: a-z, 0-9 and _):
// letters are lower-cased and every other character becomes one _. The
// replication protocol's CREATE_REPLICATION_SLOT and START_REPLICATION
// take the name unquoted and lower-case it themselves, while the queries
// of pg_replication_slots compare it as given: a name with an upper-case
// letter was created as one name and looked up as another, and one with
// a '-' was a syntax error. The publication takes the same name, so it is
// folded with it.
func FoldSlotName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, name)
}

// SlotName returns the slot (and publication) name for a name the
// operator gave: folded by FoldSlotName, and refused when it is empty or,
// folded, longer than MaxSlotName bytes (cut short, two names could end up
// one slot).
func SlotName(name string) (string, error) {
	folded := FoldSlotName(name)
	switch {
	case folded == "":
		return "", fmt.Errorf("a replication slot name cannot be empty")
	case len(folded) > MaxSlotName:
		return "", fmt.Errorf("replication slot name %q is %d characters; PostgreSQL allows at most %d", name, len(folded), MaxSlotName)
	}
	return folded, nil
}
