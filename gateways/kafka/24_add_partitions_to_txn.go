package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn: v0-v5.
//
// Adds partitions to a transactional id's transaction, opening it, on the
// id's coordinator (txn_coordinator.go); the new state is durable before
// the answer. An unknown topic or partition gets
// UNKNOWN_TOPIC_OR_PARTITION and the request's other partitions
// OPERATION_NOT_ATTEMPTED, as in Kafka. A stale epoch is PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v2), another producer id
// INVALID_PRODUCER_ID_MAPPING, a transaction being completed
// CONCURRENT_TRANSACTIONS.
//
// Version notes: v3 flexible; v4+ is the batched broker form (KIP-890),
// several transactional ids per request, each possibly VerifyOnly: then
// nothing is added, and a partition not in the open transaction gets
// INVALID_TXN_STATE. v5 only widens the errors.

func init() { regKey(24, 0, 5, (*Gateway).handleAddPartitionsToTxn) }

// txnTopics is a request's topics and partitions, for one transaction.
type txnTopics = []struct {
	topic string
	parts []int32
}

func (g *Gateway) handleAddPartitionsToTxn(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version <= 3 {
		var topics txnTopics
		for _, t := range req.Topics {
			topics = append(topics, struct {
				topic string
				parts []int32
			}{t.Topic, t.Partitions})
		}
		errs := g.addPartitionsToTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics, req.Version)
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for _, p := range t.parts {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, errorCode(errs[tp{t.topic, p}])
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, tx := range req.Transactions {
		var topics txnTopics
		for _, t := range tx.Topics {
			topics = append(topics, struct {
				topic string
				parts []int32
			}{t.Topic, t.Partitions})
		}
		errs := g.addPartitionsToTxn(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly, topics, req.Version)
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.topic
			for _, p := range t.parts {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, errorCode(errs[tp{t.topic, p}])
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// addPartitionsToTxn serves one transaction of the request and returns
// each partition's error (nil: added, or verified).
func (g *Gateway) addPartitionsToTxn(ctx context.Context, id string, pid int64, epoch int16, verify bool, topics txnTopics, version int16) map[tp]error {
	errs := map[tp]error{}
	var parts []tp
	lk := g.lookup(ctx)
	bad := false
	for _, t := range topics {
		topic, terr := lk.topic(t.topic)
		for _, p := range t.parts {
			k := tp{t.topic, p}
			parts = append(parts, k)
			err := terr
			if err == nil {
				err = checkPartition(topic, p, -1)
			}
			if err == nil && (t.topic == offsetsTopic || t.topic == txnStateTopic) {
				err = errInternalTopic(t.topic)
			}
			if err != nil {
				errs[k], bad = err, true
			}
		}
	}
	var err error
	switch {
	case bad:
		// Kafka adds nothing when one partition is bad.
		for _, k := range parts {
			if errs[k] == nil {
				errs[k] = kerr.OperationNotAttempted
			}
		}
		return errs
	case verify:
		var perPart map[tp]error
		perPart, err = g.txns.verifyPartitions(ctx, id, pid, epoch, parts, version)
		if err == nil {
			return perPart
		}
	default:
		err = g.txns.addPartitions(ctx, id, pid, epoch, parts, version, 2)
	}
	if err != nil {
		if ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable) {
			g.log.Warn("adding partitions to a transaction", "transactional_id", id, "err", err)
		}
		for _, k := range parts {
			errs[k] = err
		}
	}
	return errs
}
