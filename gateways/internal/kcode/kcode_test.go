package kcode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore/ring"
)

func TestLookupPrecedence(t *testing.T) {
	errOwn := errors.New("own")
	table := Table(Row{Err: errOwn, Code: kerr.InvalidTxnState})
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{nil, nil},
		{errors.New("unknown"), kerr.UnknownServerError},
		{fmt.Errorf("%w: bad", kerr.InvalidTopicException), kerr.InvalidTopicException},
		// A store error beats the gateway's own and a context error it
		// also wraps; the gateway's own beats a context error.
		{fmt.Errorf("%w: %w", errOwn, ring.ErrNotLeader), kerr.NotLeaderForPartition},
		{fmt.Errorf("%w: %w", context.Canceled, errOwn), kerr.InvalidTxnState},
		{fmt.Errorf("%w: %w", ring.ErrColdTier, ring.ErrCorruptBatch), kerr.KafkaStorageError},
		{fmt.Errorf("create: %w", controller.ErrStaleRequest), kerr.InvalidUpdateVersion},
		{context.DeadlineExceeded, kerr.RequestTimedOut},
	} {
		if got := Lookup(table, tc.err); got != tc.want {
			t.Errorf("Lookup(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
