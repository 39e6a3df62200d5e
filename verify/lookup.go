package verify

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
)

// maxAttempts bounds consecutive BatchGetItem attempts that return nothing
// (every key unprocessed, or throttled after the SDK's own retries): about
// a minute of backing off.
const maxAttempts = 12

// lookup reads a batch of expected items from the target with one
// BatchGetItem (consistent reads, unprocessed keys sent again with
// backoff) and classifies each.
func (c *comparer) lookup(ctx context.Context, batch []lookupItem) error {
	// keys are built for this lookup alone; GetItems' retries read them
	// (or the SDK's unprocessed keys) and nothing else.
	pending := make(map[string]*lookupItem, len(batch))
	keys := make([]map[string]types.AttributeValue, 0, len(batch))
	for i := range batch {
		li := &batch[i]
		pending[li.item.Key] = li
		keys = append(keys, c.keys.key(li.item.Attrs))
	}
	policy := retry.Policy{Attempts: maxAttempts, Backoff: *c.opts.Backoff, Sleep: c.opts.Sleep}
	err := sink.GetItems(ctx, c.in.Target, c.table, keys, policy, func(item map[string]types.AttributeValue) {
		k, ok := c.keys.text(item)
		li := pending[k]
		if !ok || li == nil {
			return
		}
		delete(pending, k)
		c.classify(li, item)
	})
	var ex *sink.GetExhaustedError
	switch {
	case errors.As(err, &ex) && ex.Unprocessed():
		return fmt.Errorf("reading table %s: %d keys still unprocessed after %d attempts", c.table, ex.Left, ex.Attempts)
	case ex != nil:
		return fmt.Errorf("reading table %s: %w", c.table, ex.ExhaustedError)
	case err != nil:
		return err
	}
	// What DynamoDB neither returned nor left unprocessed is not there.
	for _, li := range pending {
		c.missing(li)
	}
	return nil
}

// classify compares an expected item with the target's.
func (c *comparer) classify(li *lookupItem, got map[string]types.AttributeValue) {
	want := li.item.Attrs
	if EqualItems(got, want) {
		c.tally.found(ClassUnchanged, li.ent, nil)
		return
	}
	var f *Finding
	if k := c.keys.reportKey(want); c.tally.wants(ClassUpdate, k) {
		f = c.finding(li, k, Diff(got, want))
	}
	c.tally.found(ClassUpdate, li.ent, f)
}

// missing records an expected item the target does not have.
func (c *comparer) missing(li *lookupItem) {
	var f *Finding
	if k := c.keys.reportKey(li.item.Attrs); c.tally.wants(ClassCreate, k) {
		f = c.finding(li, k, Diff(nil, li.item.Attrs))
	}
	c.tally.found(ClassCreate, li.ent, f)
}

func (c *comparer) finding(li *lookupItem, k Key, changes []Change) *Finding {
	ep := c.in.Plan.Entities[li.ent]
	return &Finding{Entity: ep.Name, Type: li.item.Type, Key: k, Changes: changes}
}
