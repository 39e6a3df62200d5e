package verify

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// readUnits adds up the read capacity the sweep's requests consumed, as
// DynamoDB reports it in each answer (ReturnConsumedCapacity TOTAL), so
// that a report says what its sweep cost. Sweep workers add concurrently.
type readUnits struct {
	mu    sync.Mutex
	total float64
}

func (u *readUnits) add(cc *types.ConsumedCapacity) {
	if cc == nil || cc.CapacityUnits == nil {
		return
	}
	u.mu.Lock()
	u.total += *cc.CapacityUnits
	u.mu.Unlock()
}

func (u *readUnits) load() float64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.total
}
