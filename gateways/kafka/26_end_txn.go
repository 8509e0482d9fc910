package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn: v0-v5.
//
// Commits or aborts a transactional id's transaction on its coordinator:
// the decision is made durable in __transaction_state, then markers go to
// every partition of the transaction and its offsets to their groups
// (txn_coordinator.go). The answer waits for the markers; if one cannot
// be written now the answer is still a success (the decision stands) and
// the coordinator retries in the background, answering the producer's
// next request CONCURRENT_TRANSACTIONS until it is done. A stale epoch is
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2), another producer id
// INVALID_PRODUCER_ID_MAPPING, a commit of an aborted (or empty)
// transaction INVALID_TXN_STATE; a retry of a completed EndTxn succeeds.
//
// Version notes: v2 PRODUCER_FENCED, v3 flexible, v4 only widens the
// errors, v5 is transactions v2 (KIP-890 part 2): the epoch is bumped by
// every EndTxn and the answer carries the producer id and epoch to go on
// with (a new producer id once the epoch is used up); a retry at the
// epoch just below succeeds, and an abort with nothing open bumps the
// epoch too.

func init() { regKey(26, 0, 5, (*Gateway).handleEndTxn) }

func (g *Gateway) handleEndTxn(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	pid, epoch, err := g.txns.endTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version)
	if err != nil && (ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable)) {
		g.log.Warn("ending a transaction", "transactional_id", req.TransactionalID, "commit", req.Commit, "err", err)
	}
	resp.ErrorCode = errorCode(err)
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	return resp, nil
}
