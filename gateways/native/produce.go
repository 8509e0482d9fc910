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
// partitions of one ProduceMany are appended concurrently. Answers go out
// as each request completes (Conn.Push), so they may overtake each other;
// correlation ids tie them to their requests. A partition's batches are
// still appended in the order their requests arrived on the connection:
// each append waits for the connection's previous append to the same
// partition.

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
		// last is each partition's latest append in service: the next
		// append to it waits for this channel to close.
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
	prev      chan struct{} // the previous append to the partition, or nil
	done      chan struct{}
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
	// to it, in arrival order, before the next frame is read.
	ps := &s.prods
	ps.mu.Lock()
	for i := range jobs {
		j := &jobs[i]
		if j.err != nil {
			continue
		}
		k := partKey{j.topic, j.partition}
		j.prev, j.done = ps.mu.last[k], make(chan struct{})
		ps.mu.last[k] = j.done
	}
	ps.mu.Unlock()
	acks, timeoutMs := m.Acks, m.TimeoutMs
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		defer func() { <-ps.slot }()
		abandoned := s.runProduce(ctx, jobs, acks, timeoutMs)
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

// runProduce appends every job, each after its partition's previous
// append. It reports whether the store may still hold a job's records
// (a call that returned an error may have let go of them before the
// store was done), so that the frame is not recycled.
func (s *session) runProduce(ctx context.Context, jobs []produceJob, acks int8, timeoutMs int32) (abandoned bool) {
	if timeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
		defer cancel()
	}
	run := func(j *produceJob) {
		if j.done == nil {
			return
		}
		defer s.prods.finish(j)
		if j.prev != nil {
			select {
			case <-j.prev:
			case <-ctx.Done():
				j.err = ctx.Err()
				return
			}
		}
		req := ring.ProduceRequest{Topic: j.topic, Partition: j.partition, Acks: ring.Acks(acks), Records: j.records}
		j.res, j.err = s.g.opts.Backend.Produce(ctx, &req)
	}
	var wg sync.WaitGroup
	for i := range jobs {
		if i == len(jobs)-1 {
			run(&jobs[i]) // the last on this goroutine
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(&jobs[i])
		}()
	}
	wg.Wait()
	for i := range jobs {
		if jobs[i].done != nil && jobs[i].err != nil {
			abandoned = true
		}
	}
	return abandoned
}

// finish marks j's append done and forgets it as its partition's latest.
func (ps *produces) finish(j *produceJob) {
	ps.mu.Lock()
	k := partKey{j.topic, j.partition}
	if ps.mu.last[k] == j.done {
		delete(ps.mu.last, k)
	}
	ps.mu.Unlock()
	close(j.done)
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
