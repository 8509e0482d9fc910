package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddOffsetsToTxn: v0-v4.
//
// Adds a group's __consumer_offsets partition to a transaction, on the
// transaction's coordinator, so that the group's coordinator accepts the
// TxnOffsetCommit that follows (txn_coordinator.go). Errors as
// AddPartitionsToTxn's; an empty group is INVALID_GROUP_ID.
//
// Version notes: v2 PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before), v3
// flexible, v4 only widens the errors.

func init() { regKey(25, 0, 4, (*Gateway).handleAddOffsetsToTxn) }

func (g *Gateway) handleAddOffsetsToTxn(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	var err error
	if req.Group == "" {
		err = fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	} else {
		var t Topic
		t, err = g.cluster.Topic(ctx, offsetsTopic)
		if err != nil {
			err = fmt.Errorf("%w: %s: %v", kerr.CoordinatorNotAvailable, offsetsTopic, err)
		} else {
			part := tp{offsetsTopic, javaHashPartition(req.Group, t.Partitions)}
			err = g.txns.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []tp{part}, req.Version, 2)
		}
	}
	if err != nil && (ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable)) {
		g.log.Warn("adding offsets to a transaction", "transactional_id", req.TransactionalID, "group", req.Group, "err", err)
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
