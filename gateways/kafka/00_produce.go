package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// Produce: v3-v13.
//
// Each partition's records must be exactly one RecordBatch v2 (Kafka's rule
// for v3+; INVALID_RECORD otherwise). The store, which holds each
// partition's effective configs, refuses one larger than max.message.bytes
// (MESSAGE_TOO_LARGE); the gateway does not check it again with a value of
// its own. The batch goes to the store as it
// came: compressed batches stay compressed, and the store patches only the
// base offset in. Partitions of one request go to the backend in one
// ProduceBatch call, which queues them to their shards together;
// requests on one connection are served one after the other, so a
// producer's pipelined requests to a partition land in order. The store
// checks idempotent producers' sequences: a duplicate of a recent batch is
// acknowledged with its original offset, a gap gets
// OUT_OF_ORDER_SEQUENCE_NUMBER and a fenced epoch INVALID_PRODUCER_EPOCH.
// A batch refused for a retriable reason holds back its producer's later
// sequences in the partition until it is written (produce_seq.go), so a
// pipelined later batch cannot leave a gap.
//
// acks: 0 sends no response (and, as Kafka does, closes the connection if
// any partition failed, the only signal such a producer gets); 1 and -1
// answer once the store acknowledges under its flush policy, -1 waiting for
// durability where the policy distinguishes them. -1 is bounded by the
// request's timeout (REQUEST_TIMED_OUT). Transactional batches are
// appended like idempotent ones; the store opens the producer's
// transaction in the partition with the first (txn_coordinator.go). A
// control batch from a client is INVALID_RECORD: markers are the
// coordinator's. A record without a key for a compacted topic is
// INVALID_RECORD too, refused by the store (which knows the partition's
// effective cleanup.policy); the answer names each such record in
// record_errors with Kafka's messages. A transactional batch must be
// for a partition added to the producer's open transaction (KIP-890's
// verification, txn_coordinator.go's verifyProduce); otherwise nothing is
// written and the answer is TRANSACTION_ABORTABLE (INVALID_TXN_STATE
// before v11). From v12 (transactions v2, KIP-890 part 2, which the
// gateway advertises as the finalized feature transaction.version 2) a
// transactional batch adds its partition to the producer's transaction
// itself, opening one if needed (txn_coordinator.go's addImplicit), and
// clients send no AddPartitionsToTxn. The internal topic
// __consumer_offsets cannot be produced to (INVALID_TOPIC_EXCEPTION).
//
// Version notes: v5 log start offset, v8 per-record errors and error
// message, v9 flexible, v13 topics named by id.

func init() { regKey(0, 3, 13, (*Gateway).handleProduce) }

func (g *Gateway) handleProduce(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)

	var reqErr error
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		reqErr = kerr.InvalidRequiredAcks
	}
	if req.Acks == -1 && req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}

	// One ProducePart per partition that passed the gateway's checks; rps
	// holds their response slots, filled once the slices stop growing.
	var parts []ring.ProducePart
	// One snapshot serves the whole request: no lock, no copy per topic.
	var md *Metadata
	if reqErr == nil {
		md, reqErr = g.cluster.Metadata(ctx)
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			t    *Topic
			terr = reqErr
		)
		if terr == nil {
			var ok bool
			if req.Version >= 13 {
				if t, ok = md.TopicByID(rt.TopicID); !ok {
					terr = ErrUnknownTopicID
				}
			} else if t, ok = md.Topic(rt.Topic); !ok {
				terr = fmt.Errorf("%w: %s", ErrUnknownTopic, rt.Topic)
			}
			if terr == nil && t.Internal {
				terr = errInternalTopic(t.Name)
			}
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = p.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			err := terr
			if err == nil {
				err = g.checkBatch(t, p.Partition, p.Records)
			}
			if err == nil {
				err = g.seqs.check(tp{t.Name, p.Partition}, p.Records) // produce_seq.go
			}
			if err == nil {
				err = g.checkSchemaIDs(ctx, t, p.Records) // schema_validation.go
			}
			if err == nil {
				err = g.verifyTxnBatch(ctx, req.TransactionID, t.Name, p.Partition, p.Records, req.Version)
				if err != nil {
					err = produceVerifyError(err, req.Version)
				}
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				if req.Version >= 8 {
					sp.ErrorMessage = errorMessage(err)
				}
				name := rt.Topic // a topic this gateway does not know yet
				if t != nil {
					name = t.Name
				}
				g.seqs.refused(tp{name, p.Partition}, p.Records, err)
			} else {
				if parts == nil {
					parts = make([]ring.ProducePart, 0, len(rt.Partitions))
				}
				parts = append(parts, ring.ProducePart{ProduceRequest: ring.ProduceRequest{
					Topic: t.Name, Partition: p.Partition, Acks: ring.Acks(req.Acks), Records: p.Records,
				}})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}

	// One call carries every partition: the backend sends each store (and
	// each shard) its share at once, with no goroutine per partition.
	if len(parts) > 0 {
		g.backend.ProduceBatch(ctx, parts)
	}
	// abandoned: a part that failed may have been let go by the backend
	// before it was done with the records (a ctx ending while the shard
	// still has it), so the frame holding them must not be recycled.
	abandoned := false
	j := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			if sp.ErrorCode != 0 {
				continue
			}
			pt := &parts[j]
			j++
			if err := pt.Err; err != nil {
				abandoned = true
				g.seqs.refused(tp{pt.Topic, sp.Partition}, pt.Records, err)
				sp.ErrorCode = errorCode(err)
				if req.Version >= 8 {
					sp.ErrorMessage = errorMessage(err)
					if errors.Is(err, ring.ErrCompactedNoKey) {
						// The store refused the batch before touching it.
						sp.ErrorMessage, sp.ErrorRecords = noKeyRecordErrors(pt.Topic, sp.Partition, pt.Records)
					}
				}
				if ErrorFor(err) == kerr.UnknownServerError {
					g.log.Warn("produce failed", "topic", pt.Topic, "partition", sp.Partition, "err", err)
				}
				continue
			}
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = pt.Result.BaseOffset, pt.Result.LogAppendTime, pt.Result.LogStartOffset
			g.seqs.written(tp{pt.Topic, sp.Partition}, pt.Records)
		}
	}

	rc.frameDone = !abandoned
	if req.Acks == 0 {
		rc.noResponse = true
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				if sp.ErrorCode != 0 {
					rc.closeAfter = true
				}
			}
		}
	}
	return resp, nil
}

// checkBatch applies the checks that need the topic: the partition exists,
// one batch, not a control batch.
func (g *Gateway) checkBatch(t *Topic, partition int32, records []byte) error {
	if partition < 0 || partition >= t.Partitions {
		return fmt.Errorf("%w: %s has %d partitions", kerr.UnknownTopicOrPartition, t.Name, t.Partitions)
	}
	if len(records) < 61 {
		return fmt.Errorf("%w: %d bytes cannot hold a record batch", ring.ErrCorruptBatch, len(records))
	}
	if n := 12 + int64(int32(binary.BigEndian.Uint32(records[8:]))); n != int64(len(records)) {
		if n < int64(len(records)) {
			return errMultipleBatches
		}
		return fmt.Errorf("%w: batch length says %d bytes, request carries %d", ring.ErrCorruptBatch, n, len(records))
	}
	if attrs := binary.BigEndian.Uint16(records[21:]); attrs&0x20 != 0 {
		return fmt.Errorf("%w: control batches are written by the transaction coordinator only", kerr.InvalidRecord)
	}
	return nil
}

// noKeyRecordErrors builds Kafka's answer to a batch a compacted partition
// refused for its records without a key (LogValidator's): one record error
// per such record, and a message showing the first three.
func noKeyRecordErrors(topic string, partition int32, batch []byte) (*string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	msg := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", topic, partition)
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	_ = walkRecordFields(batch, func(i int, key, _ []byte) error {
		if key == nil {
			re := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			re.RelativeOffset, re.ErrorMessage = int32(i), &msg
			errs = append(errs, re)
		}
		return nil
	})
	shown := make([]string, 0, 3)
	for _, re := range errs[:min(len(errs), 3)] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", re.RelativeOffset, msg))
	}
	all := fmt.Sprintf("One or more records have been rejected due to %d record errors in total, "+
		"and only showing the first three errors at most: [%s]", len(errs), strings.Join(shown, ", "))
	return &all, errs
}

// verifyTxnBatch applies KIP-890's verification to a transactional data
// batch of a request naming its transactional id; other batches pass, as
// in Kafka. From v12 (transactions v2) the batch adds its partition to
// the producer's transaction instead.
func (g *Gateway) verifyTxnBatch(ctx context.Context, id *string, topic string, partition int32, batch []byte, version int16) error {
	if id == nil || len(batch) < 61 {
		return nil
	}
	if attrs := binary.BigEndian.Uint16(batch[21:]); attrs&0x10 == 0 || attrs&0x20 != 0 {
		return nil
	}
	pid, epoch := int64(binary.BigEndian.Uint64(batch[43:])), int16(binary.BigEndian.Uint16(batch[51:]))
	if version >= 12 {
		return g.txns.addImplicit(ctx, *id, pid, epoch, tp{topic, partition})
	}
	return g.txns.verifyProduce(ctx, *id, pid, epoch, tp{topic, partition})
}
