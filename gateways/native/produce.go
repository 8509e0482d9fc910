package native

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Produce (0x03) and ProduceMany (0x16): RecordBatch v2 bytes, exactly as
// the store keeps them, go to the store unchanged; the store checks their
// CRC and the producer's sequence (idempotence by producer id, epoch and
// sequence, as in Kafka), stamps offsets in place and answers with the base
// offset and the log append time. acks 0 gets no response (a failure
// closes the connection, as Kafka does); 1 answers once the leader has the
// batch; -1 (all) once the flush policy and the in-sync replicas hold it.
//
// Produces are pipelined: the read goroutine checks a request, then hands
// it to a goroutine of its own and reads the next frame, so a connection
// has up to maxProducesInService requests in the store at once; the
// partitions of one ProduceMany go to the backend in one ProduceBatch
// call, which queues them to their stores and shards together, with no
// goroutine per partition. Answers go out as each request completes
// (Conn.Push), so they may overtake each other; correlation ids tie them
// to their requests. A partition's batches are still appended in the
// order their requests arrived on the connection: a request's batch waits
// for the connection's previous appends to its partitions, and
// ProduceBatch appends a partition's parts of one request in their order.

// maxProducesInService bounds a connection's produce requests in the store
// at once; the read goroutine waits for one to finish beyond it, and TCP
// pushes back on the client. A frame's bytes count against the server's
// MaxQueuedBytes only while it is read and checked; past that this bound
// is what holds a connection's produce memory.
const maxProducesInService = 8

// produces is a session's produce requests in service.
type produces struct {
	wg   sync.WaitGroup
	slot chan struct{} // one token per request in service
	mu   struct {
		sync.Mutex
		// last is, for each partition, the done channel of the latest
		// request in service that appends to it: the next append to it
		// waits for this channel to close.
		last map[partKey]chan struct{}
	}
}

type partKey struct {
	topic     string
	partition int32
}

func (ps *produces) init() {
	ps.slot = make(chan struct{}, maxProducesInService)
	ps.mu.last = map[partKey]chan struct{}{}
}

// frameBuf hands out a buffer of its own for a produce frame, which
// outlives the read goroutine's handling of it (framebuf.go).
func (ps *produces) frameBuf(n int) []byte { return getFrameBuf(n) }

// putFrame gives back a produce frame's buffer, or one it outgrew while
// being read.
func (ps *produces) putFrame(b []byte) { putFrameBuf(b) }

// produceJob is one partition's batches of a produce request.
type produceJob struct {
	id        [16]byte
	topic     string
	partition int32
	records   []byte
	hint      int32
	res       ring.ProduceResult
	err       error
	prev      chan struct{} // the previous request appending to the partition, or nil
	chained   bool          // passed the checks: appended, and in produces.mu.last
}

// handleProduce serves Produce (many false) and ProduceMany.
func (s *session) handleProduce(ctx context.Context, corr uint32, r *wire.Reader, many bool) (*gateways.Response, error) {
	op := wire.OpProduce
	m := &s.produce
	if many {
		op = wire.OpProduceMany
		if err := m.Decode(r); err != nil {
			return nil, err
		}
	} else {
		var one wire.Produce
		if err := one.Decode(r); err != nil {
			return nil, err
		}
		m.Acks, m.TimeoutMs = one.Acks, one.TimeoutMs
		m.Partitions = append(m.Partitions[:0], wire.ManyPart{TopicID: one.TopicID, Partition: one.Partition, Records: one.Records})
	}
	frame := s.frame
	s.frame = nil
	if m.Acks != 0 && m.Acks != 1 && m.Acks != -1 {
		s.prods.putFrame(frame)
		return s.fail(op, corr, fmt.Errorf("%w: acks %d, want 0, 1 or -1", ErrBadRequest, m.Acks), -1), nil
	}
	jobs := make([]produceJob, len(m.Partitions))
	for i, p := range m.Partitions {
		j := &jobs[i]
		j.id, j.partition, j.records, j.hint = p.TopicID, p.Partition, p.Records, -1
		t, err := s.topicByID(ctx, p.TopicID)
		if err == nil {
			err = s.topicErr(t, opWrite) // authz.go
		}
		if err == nil && t.Internal {
			err = fmt.Errorf("%w: %s is written by the gateways only", ErrInternalTopic, t.Name)
		}
		if err == nil && (p.Partition < 0 || p.Partition >= t.Partitions) {
			err = fmt.Errorf("%w: partition %d of %s (%d partitions)", ring.ErrUnknownPartition, p.Partition, t.Name, t.Partitions)
		}
		if t != nil {
			j.topic, j.hint = t.Name, t.leader(p.Partition).Node
		}
		j.err = err
	}
	select {
	case s.prods.slot <- struct{}{}:
	case <-ctx.Done():
		s.prods.putFrame(frame)
		return nil, ctx.Err()
	}
	// Chain each partition's append behind the connection's previous one
	// to it, in arrival order, before the next frame is read. The
	// request's partitions are appended in one call, so one channel marks
	// them all done; a partition named twice in the request is ordered by
	// ProduceBatch itself, so it does not wait for its own request.
	ps := &s.prods
	done := make(chan struct{})
	ps.mu.Lock()
	for i := range jobs {
		j := &jobs[i]
		if j.err != nil {
			continue
		}
		k := partKey{j.topic, j.partition}
		if prev := ps.mu.last[k]; prev != done {
			j.prev = prev
		}
		j.chained = true
		ps.mu.last[k] = done
	}
	ps.mu.Unlock()
	acks, timeoutMs := m.Acks, m.TimeoutMs
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		defer func() { <-ps.slot }()
		abandoned := s.runProduce(ctx, jobs, done, acks, timeoutMs)
		if !abandoned {
			ps.putFrame(frame)
		}
		resp := s.produceResponse(op, corr, acks, jobs)
		if resp == nil {
			return
		}
		_ = s.conn.Push(ctx, resp) // fails only once the connection is closing
	}()
	return nil, nil
}

// runProduce appends every job that passed its checks in one
// ProduceBatch call, once the connection's previous appends to their
// partitions are done, then closes done. It reports whether the store may
// still hold a job's records (a call that returned an error may have let
// go of them before the store was done), so that the frame is not
// recycled.
func (s *session) runProduce(ctx context.Context, jobs []produceJob, done chan struct{}, acks int8, timeoutMs int32) (abandoned bool) {
	defer s.prods.finish(jobs, done)
	if timeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
		defer cancel()
	}
	n := 0
	for i := range jobs {
		j := &jobs[i]
		if !j.chained {
			continue
		}
		if j.prev != nil {
			// A previous append that is done lets its partition through
			// even once ctx has ended: the store then answers for it.
			select {
			case <-j.prev:
			default:
				select {
				case <-j.prev:
				case <-ctx.Done():
					j.err = ctx.Err()
					abandoned = true
					continue
				}
			}
		}
		n++
	}
	if n == 0 {
		return abandoned
	}
	parts := make([]ring.ProducePart, 0, n)
	for i := range jobs {
		if j := &jobs[i]; j.chained && j.err == nil {
			parts = append(parts, ring.ProducePart{ProduceRequest: ring.ProduceRequest{Topic: j.topic, Partition: j.partition, Acks: ring.Acks(acks), Records: j.records}})
		}
	}
	s.g.opts.Backend.ProduceBatch(ctx, parts)
	p := 0
	for i := range jobs {
		if j := &jobs[i]; j.chained && j.err == nil {
			j.res, j.err = parts[p].Result, parts[p].Err
			if j.err != nil {
				abandoned = true
			}
			p++
		}
	}
	return abandoned
}

// finish marks a request's appends done and forgets it as its partitions'
// latest.
func (ps *produces) finish(jobs []produceJob, done chan struct{}) {
	ps.mu.Lock()
	for i := range jobs {
		if !jobs[i].chained {
			continue
		}
		k := partKey{jobs[i].topic, jobs[i].partition}
		if ps.mu.last[k] == done {
			delete(ps.mu.last, k)
		}
	}
	ps.mu.Unlock()
	close(done)
}

// produceResponse answers a produce request; acks 0 gets an answer only on
// failure, an Error frame that closes the connection (the only way to
// tell such a producer).
func (s *session) produceResponse(op wire.Opcode, corr uint32, acks int8, jobs []produceJob) *gateways.Response {
	if acks == 0 {
		for i := range jobs {
			if err := jobs[i].err; err != nil {
				resp := s.fail(op, corr, err, jobs[i].hint)
				resp.CloseAfter()
				return resp
			}
		}
		return nil
	}
	if op == wire.OpProduce {
		j := &jobs[0]
		if j.err != nil {
			return s.fail(op, corr, j.err, j.hint)
		}
		pr := wire.ProduceResponse{BaseOffset: j.res.BaseOffset, LogAppendTime: j.res.LogAppendTime, LogStartOffset: j.res.LogStartOffset}
		return s.respond(op, ok(corr), pr.Append)
	}
	var out wire.ProduceManyResponse
	out.Partitions = make([]wire.ManyResult, len(jobs))
	for i := range jobs {
		j, o := &jobs[i], &out.Partitions[i]
		o.TopicID, o.Partition, o.LeaderHint = j.id, j.partition, -1
		o.BaseOffset, o.LogAppendTime, o.LogStartOffset = -1, -1, -1
		if j.err != nil {
			o.Code, o.Message, o.LeaderHint = codeFor(j.err), j.err.Error(), j.hint
			if o.Code == -1 {
				s.conn.Log.Warn("produce failed", "topic", j.topic, "partition", j.partition, "err", j.err)
			}
			continue
		}
		o.BaseOffset, o.LogAppendTime, o.LogStartOffset = j.res.BaseOffset, j.res.LogAppendTime, j.res.LogStartOffset
	}
	return s.respond(op, ok(corr), out.Append)
}
