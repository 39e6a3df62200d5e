package sink

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/retry"
)

// GetAPI is the part of the DynamoDB client GetItems reads with.
type GetAPI interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// GetExhaustedError is GetItems giving up: Left keys were still not read
// when the policy's attempts ran out. Err is the last request's error,
// ErrUnprocessed when DynamoDB answered but left keys unprocessed.
type GetExhaustedError struct {
	*retry.ExhaustedError
	Left int
}

// Unprocessed reports whether the last request was answered, only with
// keys left unprocessed.
func (e *GetExhaustedError) Unprocessed() bool { return errors.Is(e.Err, ErrUnprocessed) }

// GetItems reads keys (at most 100, one BatchGetItem) from table with
// consistent reads, sending the unprocessed keys again under policy
// (a table or partition over its read capacity, or a response over
// 16 MB), and passes each item returned to each. A key DynamoDB neither
// returned nor left unprocessed is not in the table. A request DynamoDB
// refuses ends it with "reading table T: …"; attempts that run out end it
// with a *GetExhaustedError. keys are only read, by the SDK during each
// attempt (it serializes every attempt from them; no pooled buffer
// crosses a retry), and the unprocessed keys that replace them are the
// SDK's own values.
func GetItems(ctx context.Context, api GetAPI, table string, keys []map[string]types.AttributeValue, policy retry.Policy, each func(map[string]types.AttributeValue)) error {
	err := retry.Do(ctx, policy, RetryClass, func(ctx context.Context) (bool, error) {
		out, err := api.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{table: {Keys: keys, ConsistentRead: aws.Bool(true)}},
		})
		if err != nil {
			if !Retryable(err) {
				return false, retry.Final(fmt.Errorf("reading table %s: %w", table, err))
			}
			return false, err
		}
		for _, item := range out.Responses[table] {
			each(item)
		}
		left := out.UnprocessedKeys[table].Keys
		progress := len(left) < len(keys)
		if keys = left; len(keys) == 0 {
			return false, nil
		}
		return progress, ErrUnprocessed
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		return &GetExhaustedError{ExhaustedError: ex, Left: len(keys)}
	}
	return err
}
