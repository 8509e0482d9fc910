package kafka

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID: v0-v5.
//
// Serves idempotent producers: every call gets a fresh producer id with
// epoch 0, as Kafka does for a request without a transactional id (also
// when a v3+ producer names its old id and epoch to recover from an error:
// a new id starts its sequences from 0, which is what the producer wants).
// Ids are reserved in blocks (Options.ProducerIDs, by default a counter kept
// in __producer_ids, see producer_ids.go), so an id is never handed out
// twice, across gateways and restarts. The sequence checks live in the
// store, with each partition.
//
// With a transactional id the request goes to the id's transaction
// coordinator (txn_coordinator.go), on the gateway the id hashes to
// (NOT_COORDINATOR elsewhere): a new id gets a producer id with epoch 0,
// a known one the next epoch of its producer id, after the transaction
// the previous producer left open is aborted (fencing it) or a prepared
// one completed. The timeout must be within transaction.max.timeout.ms
// (15 minutes): INVALID_TRANSACTION_TIMEOUT otherwise.
//
// Version notes: v1 throttle, v2 flexible, v3 producer id and epoch (a
// mismatch is INVALID_PRODUCER_EPOCH, PRODUCER_FENCED from v4), v5 only
// widens the errors.

func init() { regKey(22, 0, 5, (*Gateway).handleInitProducerID) }

func (g *Gateway) handleInitProducerID(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		id := *req.TransactionalID
		timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
		pid, epoch, err := g.txns.initProducer(ctx, id, timeout, req.ProducerID, req.ProducerEpoch, req.Version)
		if err != nil {
			if ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable) {
				g.log.Warn("initializing a transactional producer", "transactional_id", id, "err", err)
			}
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		return resp, nil
	}
	id, err := g.pids.next(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		g.log.Warn("allocating a producer id", "err", err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// producerIDBlock is how many ids the gateway reserves at once.
const producerIDBlock = 1000

// producerIDs hands out ids from blocks reserved from the allocator.
type producerIDs struct {
	alloc ProducerIDAllocator
	mu    struct {
		sync.Mutex
		free []int64
	}
}

func (p *producerIDs) next(ctx context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.mu.free) == 0 {
		ids, err := p.alloc.AllocateProducerIDs(ctx, producerIDBlock)
		if err != nil {
			return 0, err
		}
		p.mu.free = ids
	}
	id := p.mu.free[0]
	p.mu.free = p.mu.free[1:]
	return id, nil
}
