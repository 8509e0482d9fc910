package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Record is a record to produce, and after its ack, where it landed.
type Record struct {
	Topic string
	// Partition to write to; -1 picks one: by the key's murmur2 hash (as
	// Kafka's Java clients do, so both protocols put a key in the same
	// partition), or round robin without a key.
	Partition int32
	Key       []byte
	Value     []byte
	Headers   []wire.Header
	Timestamp time.Time // zero: now
	Offset    int64     // set once acknowledged
	// Opaque is the caller's, carried untouched to the done callback.
	Opaque any
}

// Compression codecs for ProducerOptions.
const (
	CompressionNone   = wire.CompressionNone
	CompressionGzip   = wire.CompressionGzip
	CompressionSnappy = wire.CompressionSnappy
	CompressionLZ4    = wire.CompressionLZ4
	CompressionZstd   = wire.CompressionZstd
)

// ProducerOptions configure a Producer.
type ProducerOptions struct {
	// Acks: 1 (leader), -1 (all, the default) or 0 (no answer; no retries).
	Acks int8
	// AcksSet must be true for Acks 0 to mean 0 rather than the default.
	AcksSet bool
	// Linger is how long a partition's batch waits for more records;
	// default 5ms.
	Linger time.Duration
	// BatchBytes sends a batch once its records reach this size; default
	// 1 MiB.
	BatchBytes int
	// Compression is one of the Compression* codecs.
	Compression int16
	// NotIdempotent turns idempotence off. By default each batch carries a
	// producer id, epoch and sequence, so a retry after a lost answer is
	// acknowledged as the duplicate it is rather than written twice.
	NotIdempotent bool
	// Retries bounds the resends of a batch after a retriable error;
	// default 10.
	Retries int
	// Timeout bounds one produce request at the gateway; default 30s.
	Timeout time.Duration
	// MaxBufferedBytes bounds the record bytes queued and in flight;
	// Produce blocks while they are over it. Default 32 MiB.
	MaxBufferedBytes int
	// Connections is how many connections the producer spreads its
	// partitions over (the Client's and more of its own); default 4. A
	// gateway serves a connection's requests one after another, so
	// partitions on separate connections are appended in parallel.
	Connections int
}

// Producer batches records per partition and sends them to the gateway.
// At most one batch per partition is in flight, so a partition's records
// land in the order they were produced. Safe for concurrent use.
type Producer struct {
	cl   *Client
	opts ProducerOptions

	mu struct {
		sync.Mutex
		parts       map[tpKey]*partBuf
		outstanding int
		buffered    int           // bytes of the outstanding records
		room        chan struct{} // closed when buffered drops under the bound
		idle        chan struct{} // closed when outstanding drops to 0
		rr          uint32
		closed      bool
	}
	wg sync.WaitGroup

	// conns[0] is the Client's; the others are dialed when first used
	// and closed by Close.
	conns struct {
		sync.Mutex
		c []*conn
	}
}

type tpKey struct {
	id [16]byte
	p  int32
}

type pending struct {
	rec  *Record
	done func(*Record, error)
}

// partBuf is one partition's open batch and its producer state.
type partBuf struct {
	key tpKey
	b   wire.BatchBuilder
	// recs is the open batch's records, openBytes their size; full holds
	// the batches that reached BatchBytes while one was in flight, to go
	// next in order.
	recs      []pending
	openBytes int
	full      [][]pending
	inflight  bool
	timer     *time.Timer
	pid       int64
	epoch     int16
	seq       int32
}

// NewProducer returns a Producer that sends over cl.
func NewProducer(cl *Client, opts ProducerOptions) *Producer {
	if !opts.AcksSet && opts.Acks == 0 {
		opts.Acks = -1
	}
	if opts.Linger <= 0 {
		opts.Linger = 5 * time.Millisecond
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 1 << 20
	}
	if opts.Retries <= 0 {
		opts.Retries = 10
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.MaxBufferedBytes <= 0 {
		opts.MaxBufferedBytes = 32 << 20
	}
	if opts.Connections <= 0 {
		opts.Connections = 4
	}
	p := &Producer{cl: cl, opts: opts}
	p.conns.c = make([]*conn, opts.Connections)
	p.conns.c[0] = cl.c
	p.mu.parts = map[tpKey]*partBuf{}
	return p
}

// newProducerID picks a producer id for a partition's idempotent state.
// Until the protocol allocates ids, native producers draw them at random
// from [2^62, 2^63), a range Kafka's allocator (counting up from 0) never
// reaches, so the chance of two producers sharing one is negligible.
func newProducerID() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>2) | 1<<62
}

// Produce queues r; done (may be nil) is called once r is acknowledged or
// has failed, from the producer's goroutine, and must not call back into
// the Producer. Produce blocks while MaxBufferedBytes are queued.
func (p *Producer) Produce(ctx context.Context, r *Record, done func(*Record, error)) {
	fail := func(err error) {
		if done != nil {
			done(r, err)
		}
	}
	t, err := p.cl.Topic(ctx, r.Topic)
	if err != nil {
		fail(err)
		return
	}
	part := r.Partition
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mu.buffered >= p.opts.MaxBufferedBytes && !p.mu.closed {
		if p.mu.room == nil {
			p.mu.room = make(chan struct{})
		}
		room := p.mu.room
		p.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			p.mu.Lock()
			fail(ctx.Err())
			return
		}
		p.mu.Lock()
	}
	if p.mu.closed {
		fail(ErrClosed)
		return
	}
	if part < 0 {
		if r.Key != nil {
			part = int32(murmur2(r.Key)&0x7fffffff) % t.Partitions
		} else {
			p.mu.rr++
			part = int32(p.mu.rr % uint32(t.Partitions))
		}
	}
	if part >= t.Partitions {
		fail(fmt.Errorf("topic %s has %d partitions: %w", t.Name, t.Partitions, &Error{Code: 3, LeaderHint: -1}))
		return
	}
	r.Partition = part
	key := tpKey{t.ID, part}
	pb := p.mu.parts[key]
	if pb == nil {
		pb = &partBuf{key: key}
		pb.b.Compression = p.opts.Compression
		if !p.opts.NotIdempotent && p.opts.Acks != 0 {
			pb.pid = newProducerID()
		}
		p.mu.parts[key] = pb
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = time.Now()
	}
	size := recordSize(r)
	if len(pb.recs) > 0 && pb.openBytes+size > p.opts.BatchBytes {
		pb.full = append(pb.full, pb.recs)
		pb.recs, pb.openBytes = nil, 0
	}
	pb.recs = append(pb.recs, pending{rec: r, done: done})
	pb.openBytes += size
	p.mu.outstanding++
	p.mu.buffered += size
	if len(pb.full) > 0 || pb.openBytes >= p.opts.BatchBytes {
		p.sendLocked(pb)
	} else if pb.timer == nil && !pb.inflight {
		pb.timer = time.AfterFunc(p.opts.Linger, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			pb.timer = nil
			p.sendLocked(pb)
		})
	}
}

// sendLocked starts pb's batch unless one is in flight (its completion
// sends the next).
func (p *Producer) sendLocked(pb *partBuf) {
	if pb.inflight || len(pb.recs)+len(pb.full) == 0 {
		return
	}
	var recs []pending
	if len(pb.full) > 0 {
		recs, pb.full = pb.full[0], pb.full[1:]
	} else {
		if pb.timer != nil {
			pb.timer.Stop()
			pb.timer = nil
		}
		recs, pb.recs, pb.openBytes = pb.recs, nil, 0
	}
	// The batch is built as it is sent, so it carries the sequence that
	// follows the last acknowledged one, whatever failed before.
	pb.b.Reset()
	for _, pr := range recs {
		pb.b.Add(pr.rec.Timestamp.UnixMilli(), pr.rec.Key, pr.rec.Value, pr.rec.Headers)
	}
	pb.b.ProducerID, pb.b.ProducerEpoch, pb.b.BaseSequence = pb.pid, pb.epoch, pb.seq
	if pb.pid == 0 {
		pb.b.ProducerID = -1
	}
	batch, err := pb.b.AppendBatch(nil)
	if err != nil {
		p.finishLocked(recs, -1, err)
		return
	}
	pb.inflight = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		base, err := p.send(pb.key, batch)
		p.mu.Lock()
		defer p.mu.Unlock()
		pb.inflight = false
		if err == nil {
			pb.seq += int32(len(recs))
		} else if pb.pid != 0 {
			// The partition's sequence is unknown after a failure: a
			// fresh producer id starts it again at 0.
			pb.pid, pb.epoch, pb.seq = newProducerID(), 0, 0
		}
		p.finishLocked(recs, base, err)
		p.sendLocked(pb)
	}()
}

func (p *Producer) finishLocked(recs []pending, base int64, err error) {
	for i, pr := range recs {
		// Counted before done, which may reuse the record.
		p.mu.buffered -= recordSize(pr.rec)
		if err == nil {
			pr.rec.Offset = base + int64(i)
		}
		if pr.done != nil {
			pr.done(pr.rec, err)
		}
	}
	p.mu.outstanding -= len(recs)
	if p.mu.buffered < p.opts.MaxBufferedBytes && p.mu.room != nil {
		close(p.mu.room)
		p.mu.room = nil
	}
	if p.mu.outstanding == 0 && p.mu.idle != nil {
		close(p.mu.idle)
		p.mu.idle = nil
	}
}

// send writes one batch, retrying retriable errors; with idempotence a
// resend carries the same sequence, so it cannot duplicate.
func (p *Producer) send(key tpKey, batch []byte) (int64, error) {
	c := p.conn(key.p)
	req := wire.Produce{TopicID: key.id, Partition: key.p, Acks: p.opts.Acks, TimeoutMs: int32(p.opts.Timeout / time.Millisecond), Records: batch}
	if p.opts.Acks == 0 {
		_, _, err := c.send(wire.OpProduce, true, req.Append)
		return -1, err
	}
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout+5*time.Second)
		r, err := c.roundTrip(ctx, wire.OpProduce, req.Append)
		cancel()
		if err == nil {
			var out wire.ProduceResponse
			if err := out.Decode(&r); err != nil {
				return -1, err
			}
			return out.BaseOffset, nil
		}
		if attempt >= p.opts.Retries || !(retriable(err) || errors.Is(err, context.DeadlineExceeded)) {
			return -1, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// conn is partition's connection: one of the producer's, dialed on first
// use; the Client's when dialing fails, so a producer works as long as its
// Client does.
func (p *Producer) conn(partition int32) *conn {
	p.conns.Lock()
	defer p.conns.Unlock()
	i := int(partition) % len(p.conns.c)
	if c := p.conns.c[i]; c != nil && !c.dead() {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
	defer cancel()
	c, _, err := dialHandshake(ctx, p.cl.addr, p.cl.opts)
	if err != nil {
		return p.cl.c
	}
	if old := p.conns.c[i]; old != nil && old != p.cl.c {
		_ = old.close()
	}
	p.conns.c[i] = c
	return c
}

// Flush sends every queued record now and waits until all are
// acknowledged or failed, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	for _, pb := range p.mu.parts {
		p.sendLocked(pb)
	}
	if p.mu.outstanding == 0 {
		p.mu.Unlock()
		return nil
	}
	if p.mu.idle == nil {
		p.mu.idle = make(chan struct{})
	}
	idle := p.mu.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ProduceSync produces records and waits for all of them; it returns the
// first error.
func (p *Producer) ProduceSync(ctx context.Context, recs ...*Record) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	wg.Add(len(recs))
	for _, r := range recs {
		p.Produce(ctx, r, func(_ *Record, err error) {
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	if err := p.Flush(ctx); err != nil {
		return err
	}
	wg.Wait()
	return first
}

// Close flushes (bounded by ctx) and stops the producer; it does not close
// the Client.
func (p *Producer) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	p.mu.Lock()
	p.mu.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	p.conns.Lock()
	for _, c := range p.conns.c {
		if c != nil && c != p.cl.c {
			_ = c.close()
		}
	}
	p.conns.Unlock()
	return err
}

// recordSize is what a record counts against MaxBufferedBytes.
func recordSize(r *Record) int { return len(r.Key) + len(r.Value) + 32 }

// murmur2 is Kafka's partitioner hash (the Java client's Utils.murmur2).
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
