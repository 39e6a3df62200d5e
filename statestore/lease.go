package statestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/retry"
)

// Lease keeps one sync writing a shared state. It is one item of the
// state table (<sync>#lease) with the holder's owner id, a record version
// number (rvn) the holder replaces at every renewal, the lease duration
// and a fencing counter, after AWS's DynamoDB Lock Client:
//
//   - Take: an absent or released item is taken at once with a put on
//     condition that it is still absent or unchanged. A held item is taken
//     only after its rvn has stayed the same for a whole lease duration,
//     judged on the taker's own clock from when it first saw that rvn (no
//     two clocks are compared), with a put on condition that the rvn is
//     still the one seen. Every take raises the fencing counter.
//   - Renew: every third of the duration, an update on condition that the
//     owner and rvn are still ours. A renewal that fails on its condition
//     means another sync took the lease.
//   - Expiry, the holder's side: the holder counts itself the holder only
//     until two thirds of a duration after it sent its last successful
//     renewal. Past that, it sends nothing more, writes included (Check).
//     A taker takes a full duration after it first saw the holder's last
//     rvn, which is no earlier than when the holder sent it: a third of a
//     duration always separates the old holder's last write from the
//     take.
//   - Fence: requests the old holder sent before it stopped may still be
//     applied by DynamoDB after the take (BatchWriteItem takes no
//     condition). The new holder waits until the fence has passed since
//     the old holder's writes stopped before it writes (Took.Wait).
type Lease struct {
	api      API
	table    string
	pk       string
	owner    string
	duration time.Duration
	fence    time.Duration
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	mu         sync.Mutex
	rvn        string
	counter    int64
	validUntil time.Time
	held       bool
}

// Lease item attributes.
const (
	attrOwner    = "owner"
	attrRVN      = "rvn"
	attrDuration = "duration_ms"
	attrReleased = "released"
)

// ErrLeaseLost is what a sync that lost its lease returns: it goes back
// to standby.
var ErrLeaseLost = fmt.Errorf("%w", ErrFenced)

// NewLease returns the lease of the sync called name in table for a
// holder identified by owner (empty: a random id). fence is how long
// requests sent by a holder that stopped may still be applied.
func NewLease(api API, table, name, owner string, duration, fence time.Duration) *Lease {
	if owner == "" {
		owner = newRVN()
	}
	return &Lease{api: api, table: table, pk: name + "#lease", owner: owner, duration: duration, fence: fence,
		now: time.Now, sleep: retry.Sleep}
}

func newRVN() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Owner is this holder's id.
func (l *Lease) Owner() string { return l.owner }

// Duration is the lease duration.
func (l *Lease) Duration() time.Duration { return l.duration }

// Counter is the fencing counter of the lease held (0 before a take).
func (l *Lease) Counter() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counter
}

// Took is a take of the lease.
type Took struct {
	// Counter is the fencing counter, raised by the take.
	Counter int64
	// Wait is how long the new holder waits before it writes, for the
	// requests of the holder before it.
	Wait time.Duration
	// From is the holder taken over from ("" for a free or released
	// lease).
	From string
}

// holder is the lease item as read.
type holder struct {
	exists   bool
	owner    string
	rvn      string
	counter  int64
	duration time.Duration
	released bool
}

func (l *Lease) read(ctx context.Context) (holder, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: &l.table, Key: key(l.pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return holder{}, fmt.Errorf("reading the lease %s in %s: %w", l.pk, l.table, err)
	}
	if out.Item == nil {
		return holder{}, nil
	}
	h := holder{exists: true, owner: str(out.Item[attrOwner]), rvn: str(out.Item[attrRVN]), counter: num(out.Item[attrFence])}
	h.duration = time.Duration(num(out.Item[attrDuration])) * time.Millisecond
	if b, ok := out.Item[attrReleased].(*types.AttributeValueMemberBOOL); ok {
		h.released = b.Value
	}
	return h, nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

func num(v types.AttributeValue) int64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	return 0
}

// TryTake makes one attempt: it takes a free or released lease, or a
// held one whose rvn has not changed since seen (with its first sighting)
// for a whole duration. It returns the take, or nil and what it saw.
func (l *Lease) TryTake(ctx context.Context, seen *Sighting) (*Took, error) {
	h, err := l.read(ctx)
	if err != nil {
		return nil, err
	}
	now := l.now()
	if h.exists && !h.released && h.owner != l.owner {
		if seen.rvn != h.rvn {
			*seen = Sighting{rvn: h.rvn, owner: h.owner, at: now}
			return nil, nil
		}
		if now.Sub(seen.at) < max(h.duration, l.duration) {
			return nil, nil
		}
	}
	rvn := newRVN()
	item := key(l.pk)
	item[attrOwner] = &types.AttributeValueMemberS{Value: l.owner}
	item[attrRVN] = &types.AttributeValueMemberS{Value: rvn}
	item[attrFence] = &types.AttributeValueMemberN{Value: strconv.FormatInt(h.counter+1, 10)}
	item[attrDuration] = &types.AttributeValueMemberN{Value: strconv.FormatInt(l.duration.Milliseconds(), 10)}
	in := &dynamodb.PutItemInput{TableName: &l.table, Item: item, ExpressionAttributeNames: map[string]string{"#pk": attrPK}}
	if h.exists {
		in.ConditionExpression = aws.String("#rvn = :rvn")
		in.ExpressionAttributeNames = map[string]string{"#rvn": attrRVN}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":rvn": &types.AttributeValueMemberS{Value: h.rvn}}
	} else {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
	}
	sent := l.now()
	_, err = l.api.PutItem(ctx, in)
	var cond *types.ConditionalCheckFailedException
	if errors.As(err, &cond) {
		*seen = Sighting{}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("taking the lease %s in %s: %w", l.pk, l.table, err)
	}
	took := &Took{Counter: h.counter + 1}
	if h.exists && !h.released && h.owner != l.owner {
		// The old holder's writes stopped two thirds of its duration
		// after it sent its last rvn, which it sent before seen.at.
		stopped := seen.at.Add(max(h.duration, l.duration) * 2 / 3)
		took.Wait = max(0, l.fence-l.now().Sub(stopped))
		took.From = h.owner
	}
	if h.owner == l.owner && !h.released {
		// Our own earlier hold (a restart with the same owner id): its
		// writes may be in flight as any holder's.
		took.Wait = l.fence
	}
	l.mu.Lock()
	l.rvn, l.counter, l.held = rvn, took.Counter, true
	l.validUntil = sent.Add(l.duration * 2 / 3)
	l.mu.Unlock()
	return took, nil
}

// Sighting is what a standby saw of the holder: its rvn and when the
// standby first saw it.
type Sighting struct {
	rvn, owner string
	at         time.Time
}

// Owner is the holder seen.
func (s Sighting) Owner() string { return s.owner }

// Take waits until it holds the lease, polling every third of the
// duration; standby is called once, with the holder, if it has to wait.
func (l *Lease) Take(ctx context.Context, standby func(holder string)) (*Took, error) {
	var seen Sighting
	told := false
	for {
		took, err := l.TryTake(ctx, &seen)
		if err != nil {
			return nil, err
		}
		if took != nil {
			return took, nil
		}
		if !told && standby != nil && seen.owner != "" {
			told = true
			standby(seen.owner)
		}
		if err := l.sleep(ctx, l.duration/3); err != nil {
			return nil, err
		}
	}
}

// Check returns nil while this sync holds the lease: taken, and renewed
// less than two thirds of a duration ago. Every write asks it first.
func (l *Lease) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || !l.now().Before(l.validUntil) {
		l.held = false
		return ErrLeaseLost
	}
	return nil
}

// Renew makes one renewal. It returns ErrLeaseLost when the lease is no
// longer this sync's: another took it, or the last renewal is too old
// (then nothing is sent). Any other error leaves the lease held until it
// expires; the caller tries again.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Check(); err != nil {
		return err
	}
	l.mu.Lock()
	old := l.rvn
	l.mu.Unlock()
	rvn := newRVN()
	sent := l.now()
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.table, Key: key(l.pk),
		UpdateExpression:         aws.String("SET #rvn = :new, #dur = :dur"),
		ConditionExpression:      aws.String("#rvn = :old AND #owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#rvn": attrRVN, "#owner": attrOwner, "#dur": attrDuration},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":new": &types.AttributeValueMemberS{Value: rvn}, ":old": &types.AttributeValueMemberS{Value: old},
			":owner": &types.AttributeValueMemberS{Value: l.owner},
			":dur":   &types.AttributeValueMemberN{Value: strconv.FormatInt(l.duration.Milliseconds(), 10)},
		},
	})
	var cond *types.ConditionalCheckFailedException
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case errors.As(err, &cond):
		l.held = false
		return ErrLeaseLost
	case err != nil:
		return fmt.Errorf("renewing the lease %s in %s: %w", l.pk, l.table, err)
	}
	l.rvn = rvn
	l.validUntil = sent.Add(l.duration * 2 / 3)
	return nil
}

// Keep renews the lease every third of the duration until ctx ends (nil)
// or the lease is lost (ErrLeaseLost). A renewal that fails otherwise is
// tried again sooner, until the lease would expire.
func (l *Lease) Keep(ctx context.Context) error {
	every := l.duration / 3
	for {
		if err := l.sleep(ctx, every); err != nil {
			return nil
		}
		// A renewal that takes longer than a third of the duration is
		// given up: the next is due.
		rctx, cancel := context.WithTimeout(ctx, l.duration/3)
		err := l.Renew(rctx)
		cancel()
		switch {
		case errors.Is(err, ErrLeaseLost):
			return err
		case err != nil && ctx.Err() == nil:
			every = l.duration / 12
		default:
			every = l.duration / 3
		}
	}
}

// Release gives the lease up, so that a standby takes it at once: the
// item is marked released on condition that it is still ours. The caller
// has stopped writing.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	rvn, held := l.rvn, l.held
	l.held = false
	l.mu.Unlock()
	if !held {
		return nil
	}
	_, err := l.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &l.table, Key: key(l.pk),
		UpdateExpression:         aws.String("SET #rel = :true"),
		ConditionExpression:      aws.String("#rvn = :rvn AND #owner = :owner"),
		ExpressionAttributeNames: map[string]string{"#rvn": attrRVN, "#owner": attrOwner, "#rel": attrReleased},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":rvn": &types.AttributeValueMemberS{Value: rvn}, ":owner": &types.AttributeValueMemberS{Value: l.owner},
			":true": &types.AttributeValueMemberBOOL{Value: true},
		},
	})
	var cond *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cond) {
		return fmt.Errorf("releasing the lease %s in %s: %w", l.pk, l.table, err)
	}
	return nil
}
