package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnOffsetCommit: v0-v5.
//
// Offsets a transactional producer commits for a group, on the group's
// coordinator. They are checked against the transaction (the producer id
// and epoch, and the group's __consumer_offsets partition must have been
// added with AddOffsetsToTxn: INVALID_TXN_STATE otherwise) and, from v3
// (KIP-447), against the group's generation and member as OffsetCommit
// checks them; then they are made durable in __transaction_state, and
// applied to the group only when the transaction commits
// (txn_coordinator.go). A stale epoch is PRODUCER_FENCED (INVALID_PRODUCER_
// EPOCH before v3), an unknown producer INVALID_PRODUCER_ID_MAPPING;
// unknown topics or partitions UNKNOWN_TOPIC_OR_PARTITION, metadata above
// 4096 bytes OFFSET_METADATA_TOO_LARGE.
//
// From v5 (transactions v2, KIP-890 part 2) the client sends no
// AddOffsetsToTxn: the commit adds the group's __consumer_offsets
// partition to the producer's transaction itself (txn_coordinator.go's
// addImplicit).
//
// Version notes: v2 leader epoch, v3 flexible, generation, member and
// instance ids, v4 only widens the errors, v5 transactions v2.

func init() { regKey(28, 0, 5, (*Gateway).handleTxnOffsetCommit) }

func (g *Gateway) handleTxnOffsetCommit(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	lk := g.lookup(ctx)
	now := time.Now().UnixMilli()
	offs := map[tp]committed{}
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		t, terr := lk.topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			epoch := int32(-1)
			if req.Version >= 2 {
				epoch = rp.LeaderEpoch
			}
			sp.ErrorCode = stageCommit(offs, t, terr, rp.Partition, rp.Offset, epoch, rp.Metadata, now)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}

	err := g.txnCommitCheck(ctx, req)
	if err == nil {
		err = g.txns.commitOffsets(ctx, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, offs, req.Version)
	}
	if err == nil {
		g.txns.unstable.note(req.Group, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offs)
	}
	if err != nil {
		if ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable) {
			g.log.Warn("transactional offset commit failed", "group", req.Group, "transactional_id", req.TransactionalID, "err", err)
		}
		code := errorCode(err)
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if resp.Topics[ti].Partitions[pi].ErrorCode == 0 {
					resp.Topics[ti].Partitions[pi].ErrorCode = code
				}
			}
		}
	}
	return resp, nil
}

// txnCommitCheck checks the group side of a TxnOffsetCommit: this gateway
// coordinates the group, and a member that names itself (v3+) is a
// current member of the current generation.
func (g *Gateway) txnCommitCheck(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) error {
	if req.Group == "" {
		return fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	}
	if b := coordinatorFor(req.Group, g.brokers(ctx)); b.NodeID != g.opts.NodeID {
		return kerr.NotCoordinator
	}
	if req.Version < 3 || req.Generation < 0 && req.MemberID == "" {
		return nil
	}
	reply := make(chan error, 1)
	err := g.groups.call(ctx, req.Group, false, func(gr *group) {
		reply <- gr.commitCheck(req.MemberID, req.InstanceID, req.Generation)
	})
	if errors.Is(err, errGroupGone) {
		return fmt.Errorf("%w: group %q has no generation %d", kerr.IllegalGeneration, req.Group, req.Generation)
	}
	if err != nil {
		return err
	}
	select {
	case err = <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
