package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
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
	// Linger is how long a record waits for more to share its request
	// when no request is out on its connection (one that is out gathers
	// the records that arrive meanwhile); default 5ms. LingerSet makes a
	// Linger of 0 mean none.
	Linger    time.Duration
	LingerSet bool
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
	// partitions over (the Client's and more of its own); default 4. Each
	// has one request out at a time, carrying all its partitions'
	// batches.
	Connections int
}

// Producer batches records per partition and sends them to the gateway.
// The partitions are spread over a few connections; on each, one request
// at a time carries a batch for every partition that has records
// (ProduceMany), so while a request is out the next one gathers what
// arrives for all the connection's partitions, and a busier producer sends
// bigger requests rather than more of them. At most one batch per
// partition is in flight, so a partition's records land in the order they
// were produced. Safe for concurrent use.
type Producer struct {
	cl   *Client
	opts ProducerOptions

	mu struct {
		sync.Mutex
		parts       map[tpKey]*partBuf
		sinks       []*sink
		outstanding int
		buffered    int           // bytes of the outstanding records
		room        chan struct{} // closed when buffered drops under the bound
		idle        chan struct{} // closed when outstanding drops to 0
		rr          uint32
		closed      bool
	}
	wg   sync.WaitGroup
	last atomic.Pointer[lastTopic] // the topic last produced to

	// pid is the producer id idempotent batches carry, from the cluster's
	// allocator (InitProducerID); zero until the first send needs it.
	pid struct {
		sync.Mutex
		id    int64
		renew atomic.Bool // a partition used up the id's epochs
	}
}

// lastTopic is a Producer's copy of its last topic's lookup, good while
// the Client's Forget count is gen.
type lastTopic struct {
	t   TopicInfo
	gen uint64
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
	key  tpKey
	sink *sink
	b    wire.BatchBuilder
	// recs is the open batch's records, openBytes their size; full holds
	// the batches that reached BatchBytes, to go next in order.
	recs      []pending
	openBytes int
	full      [][]pending
	queued    bool   // in sink.queue
	out       []byte // the last batch built, reused for the next
	// pid, epoch and seq are the partition's idempotent state: epoch -1
	// until the first batch takes the producer's id.
	pid   int64
	epoch int16
	seq   int32
}

func (pb *partBuf) empty() bool { return len(pb.recs)+len(pb.full) == 0 }

// sink is one of the producer's connections and the partitions on it that
// have records to send.
type sink struct {
	c        *conn // dialed on first use; nil until then
	queue    []*partBuf
	inflight bool
	// timer runs the linger of the oldest queued record; nil when none
	// runs (it fired, or nothing waits).
	timer *time.Timer
}

// NewProducer returns a Producer that sends over cl.
func NewProducer(cl *Client, opts ProducerOptions) *Producer {
	if !opts.AcksSet && opts.Acks == 0 {
		opts.Acks = -1
	}
	if opts.Linger < 0 {
		opts.Linger = 0
	} else if opts.Linger == 0 && !opts.LingerSet {
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
	p.mu.parts = map[tpKey]*partBuf{}
	for range opts.Connections {
		p.mu.sinks = append(p.mu.sinks, &sink{})
	}
	p.mu.sinks[0].c = cl.c
	return p
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
	// Most producers write one topic: its lookup is kept at hand rather
	// than taken from the Client's map (a lock and a hash) per record.
	last := p.last.Load()
	if gen := p.cl.forgets.Load(); last == nil || last.t.Name != r.Topic || last.gen != gen {
		ti, err := p.cl.Topic(ctx, r.Topic)
		if err != nil {
			fail(err)
			return
		}
		last = &lastTopic{t: ti, gen: gen}
		p.last.Store(last)
	}
	t := &last.t
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
		pb = &partBuf{key: key, sink: p.mu.sinks[int(part)%len(p.mu.sinks)], epoch: -1}
		pb.b.Compression = p.opts.Compression
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
	sk := pb.sink
	if !pb.queued {
		pb.queued = true
		sk.queue = append(sk.queue, pb)
	}
	switch {
	case sk.inflight:
		// The request out sends these when it completes.
	case len(pb.full) > 0 || pb.openBytes >= p.opts.BatchBytes || p.opts.Linger == 0:
		p.startLocked(sk)
	case sk.timer == nil:
		sk.timer = time.AfterFunc(p.opts.Linger, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			sk.timer = nil
			p.startLocked(sk)
		})
	}
}

// startLocked sends sk's queued batches unless a request is out (its
// completion sends them).
func (p *Producer) startLocked(sk *sink) {
	if sk.inflight || len(sk.queue) == 0 {
		return
	}
	if sk.timer != nil {
		sk.timer.Stop()
		sk.timer = nil
	}
	sk.inflight = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.drain(sk)
	}()
}

// outBatch is one partition's batch in a request.
type outBatch struct {
	pb    *partBuf
	recs  []pending
	bytes []byte
	base  int64
	err   error
	// The producer state the batch is built with (pid 0: none), taken
	// with the records.
	pid   int64
	epoch int16
	seq   int32
}

// maxRequestBytes bounds the batches one request gathers, well under the
// gateway's frame limit.
const maxRequestBytes = 16 << 20

// drain sends sk's queued batches, a request at a time, until nothing is
// queued when a request completes: what arrived while a request was out
// goes in the next one at once, since it has waited already.
func (p *Producer) drain(sk *sink) {
	for {
		pid, pidErr := p.producerID()
		p.mu.Lock()
		batches := p.gatherLocked(sk, pid, pidErr)
		p.mu.Unlock()
		// Built outside the lock: copying a request's records holds no
		// Produce call up (a producer would fall behind its callers
		// whenever this goroutine lost its CPU while holding the lock).
		buildBatches(batches)
		var err error
		if len(batches) > 0 {
			err = p.sendBatches(sk, batches)
		}
		p.mu.Lock()
		for i := range batches {
			b := &batches[i]
			if b.err == nil {
				b.err = err
			}
			pb := b.pb
			switch {
			case b.err == nil:
				pb.seq += int32(len(b.recs))
			case pb.pid > 0:
				// The partition's sequence is unknown after a
				// failure: the next epoch starts it again at 0, and
				// the last epoch asks for a new producer id.
				pb.epoch, pb.seq = pb.epoch+1, 0
				if pb.epoch == math.MaxInt16 {
					pb.epoch = -1
					p.pid.renew.Store(true)
				}
			}
			p.finishLocked(b.recs, b.base, b.err)
		}
		if len(sk.queue) == 0 {
			sk.inflight = false
			p.mu.Unlock()
			return
		}
		if sk.timer != nil {
			sk.timer.Stop()
			sk.timer = nil
		}
		p.mu.Unlock()
	}
}

// gatherLocked takes one batch from each queued partition of sk, up to
// maxRequestBytes, with the partition's producer state, so that it is
// built (buildBatches) carrying the sequence that follows the last
// acknowledged one, whatever failed before.
func (p *Producer) gatherLocked(sk *sink, pid int64, pidErr error) []outBatch {
	var out []outBatch
	size := 0
	keep := sk.queue[:0]
	for _, pb := range sk.queue {
		if pb.empty() {
			pb.queued = false
			continue
		}
		if size >= maxRequestBytes {
			keep = append(keep, pb)
			continue
		}
		var recs []pending
		if len(pb.full) > 0 {
			recs, pb.full = pb.full[0], pb.full[1:]
		} else {
			recs, pb.recs, pb.openBytes = pb.recs, nil, 0
		}
		if pb.empty() {
			pb.queued = false
		} else {
			keep = append(keep, pb)
		}
		ob := outBatch{pb: pb, recs: recs, base: -1}
		if p.idempotent() {
			if pidErr != nil {
				ob.err = pidErr
				out = append(out, ob)
				continue
			}
			if pb.epoch < 0 {
				pb.pid, pb.epoch, pb.seq = pid, 0, 0
			}
		}
		ob.pid, ob.epoch, ob.seq = pb.pid, pb.epoch, pb.seq
		for _, pr := range recs {
			size += recordSize(pr.rec)
		}
		out = append(out, ob)
	}
	clear(sk.queue[len(keep):])
	sk.queue = keep
	return out
}

// buildBatches builds each gathered batch in its partition's builder and
// buffer: only the sink's drain goroutine uses them, and the partition's
// previous batch is acknowledged by now (one request per sink is out), so
// its buffer is free again.
func buildBatches(batches []outBatch) {
	for i := range batches {
		ob := &batches[i]
		if ob.err != nil {
			continue
		}
		pb := ob.pb
		pb.b.Reset()
		for _, pr := range ob.recs {
			pb.b.Add(pr.rec.Timestamp.UnixMilli(), pr.rec.Key, pr.rec.Value, pr.rec.Headers)
		}
		pb.b.ProducerID, pb.b.ProducerEpoch, pb.b.BaseSequence = -1, -1, -1
		if ob.pid > 0 {
			pb.b.ProducerID, pb.b.ProducerEpoch, pb.b.BaseSequence = ob.pid, ob.epoch, ob.seq
		}
		ob.bytes, ob.err = pb.b.AppendBatch(pb.out[:0])
		pb.out = ob.bytes
	}
}

func (p *Producer) idempotent() bool { return !p.opts.NotIdempotent && p.opts.Acks != 0 }

// producerID returns the producer's id, asking the gateway for one from
// the cluster's allocator (InitProducerID) the first time, and again once
// a partition has used up the id's epochs; 0 when not idempotent.
func (p *Producer) producerID() (int64, error) {
	if !p.idempotent() {
		return 0, nil
	}
	p.pid.Lock()
	defer p.pid.Unlock()
	if p.pid.id != 0 && !p.pid.renew.Load() {
		return p.pid.id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
	defer cancel()
	var id int64
	var err error
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if id, err = p.cl.InitProducerID(ctx); err == nil {
			break
		}
		if attempt >= p.opts.Retries || !retriable(err) {
			return 0, fmt.Errorf("getting a producer id: %w", err)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return 0, fmt.Errorf("getting a producer id: %w", err)
		}
		backoff = min(2*backoff, time.Second)
	}
	p.pid.id = id
	p.pid.renew.Store(false)
	return id, nil
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

// sendBatches sends batches in one ProduceMany, resending the partitions
// that failed with a retriable error; with idempotence a resend carries
// the same sequence, so it cannot duplicate. Each batch's outcome goes to
// its base and err; the error returned is one for the whole request.
func (p *Producer) sendBatches(sk *sink, batches []outBatch) error {
	todo := make([]*outBatch, 0, len(batches))
	for i := range batches {
		if batches[i].err == nil {
			todo = append(todo, &batches[i])
		}
	}
	req := wire.ProduceMany{Acks: p.opts.Acks, TimeoutMs: int32(p.opts.Timeout / time.Millisecond)}
	backoff := 50 * time.Millisecond
	for attempt := 0; len(todo) > 0; attempt++ {
		req.Partitions = req.Partitions[:0]
		for _, b := range todo {
			req.Partitions = append(req.Partitions, wire.ManyPart{TopicID: b.pb.key.id, Partition: b.pb.key.p, Records: b.bytes})
		}
		c := p.conn(sk)
		corr, ch, err := c.sendProduceMany(&req)
		if p.opts.Acks == 0 || err != nil {
			if err != nil && attempt < p.opts.Retries && p.opts.Acks != 0 {
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue // a new connection next time
			}
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout+5*time.Second)
		r, err := c.await(ctx, corr, ch)
		cancel()
		var out wire.ProduceManyResponse
		if err == nil {
			err = out.Decode(&r)
			if err == nil && len(out.Partitions) != len(todo) {
				err = fmt.Errorf("%w: %d results for %d partitions", wire.ErrMalformed, len(out.Partitions), len(todo))
			}
		}
		retry := todo[:0]
		for i, b := range todo {
			b.err = err
			if err == nil {
				if res := &out.Partitions[i]; res.Code != 0 {
					b.err = &Error{Code: res.Code, Message: res.Message, LeaderHint: res.LeaderHint}
				} else {
					b.base = res.BaseOffset
				}
			}
			if b.err != nil && attempt < p.opts.Retries && (retriable(b.err) || errors.Is(b.err, context.DeadlineExceeded)) {
				retry = append(retry, b)
			}
		}
		todo = retry
		if len(todo) > 0 {
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
		}
	}
	return nil
}

// conn is sk's connection, dialed on first use (and again once it died);
// the Client's when dialing fails, so a producer works as long as its
// Client does.
func (p *Producer) conn(sk *sink) *conn {
	p.mu.Lock()
	c := sk.c
	p.mu.Unlock()
	if c != nil && !c.dead() {
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
	defer cancel()
	nc, _, err := dialHandshake(ctx, p.cl.addr, p.cl.opts)
	if err != nil {
		return p.cl.c
	}
	p.mu.Lock()
	old := sk.c
	sk.c = nc
	p.mu.Unlock()
	if old != nil && old != p.cl.c {
		_ = old.close()
	}
	return nc
}

// Flush sends every queued record now and waits until all are
// acknowledged or failed, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	for _, sk := range p.mu.sinks {
		p.startLocked(sk)
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
	p.mu.Lock()
	var conns []*conn
	for _, sk := range p.mu.sinks {
		if sk.timer != nil {
			sk.timer.Stop()
			sk.timer = nil
		}
		if sk.c != nil && sk.c != p.cl.c {
			conns = append(conns, sk.c)
		}
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.close()
	}
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
