package native

import (
	"context"
	"fmt"
	"time"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Produce (0x03): RecordBatch v2 bytes, exactly as the store keeps them,
// go to the store unchanged; the store checks their CRC and the producer's
// sequence (idempotence by producer id, epoch and sequence, as in Kafka),
// stamps offsets in place and answers with the base offset and the log
// append time. acks 0 gets no response (a failure closes the connection,
// as Kafka does); 1 answers once the leader has the batch; -1 (all) once
// the flush policy and the in-sync replicas hold it.

func (s *session) handleProduce(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	m := &s.produce
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if m.Acks != 0 && m.Acks != 1 && m.Acks != -1 {
		return s.fail(wire.OpProduce, corr, fmt.Errorf("%w: acks %d, want 0, 1 or -1", ErrBadRequest, m.Acks), -1), nil
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil && t.Internal {
		err = fmt.Errorf("%w: %s is written by the gateways only", ErrInternalTopic, t.Name)
	}
	if err == nil && (m.Partition < 0 || m.Partition >= t.Partitions) {
		err = fmt.Errorf("%w: partition %d of %s (%d partitions)", ring.ErrUnknownPartition, m.Partition, t.Name, t.Partitions)
	}
	if err == nil {
		pctx := ctx
		if m.TimeoutMs > 0 {
			var cancel context.CancelFunc
			pctx, cancel = context.WithTimeout(ctx, time.Duration(m.TimeoutMs)*time.Millisecond)
			defer cancel()
		}
		req := ring.ProduceRequest{Topic: t.Name, Partition: m.Partition, Acks: ring.Acks(m.Acks), Records: m.Records}
		var res ring.ProduceResult
		res, err = s.g.opts.Backend.Produce(pctx, &req)
		if err == nil {
			if m.Acks == 0 {
				return nil, nil
			}
			pr := wire.ProduceResponse{BaseOffset: res.BaseOffset, LogAppendTime: res.LogAppendTime, LogStartOffset: res.LogStartOffset}
			return s.respond(wire.OpProduce, ok(corr), pr.Append), nil
		}
	}
	hint := int32(-1)
	if t != nil {
		hint = t.leader(m.Partition).Node
	}
	resp := s.fail(wire.OpProduce, corr, err, hint)
	if m.Acks == 0 {
		// The producer reads no answer: closing is the only way to tell
		// it something went wrong.
		resp.CloseAfter()
	}
	return resp, nil
}
