package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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
	// Linger is how long a record waits for more to share its request;
	// default 5ms. Records that arrive while MaxInFlight requests are out
	// go as soon as one is answered. LingerSet makes a Linger of 0 mean
	// none.
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
	// request carries a batch of every partition of its connection that
	// has records.
	Connections int
	// MaxInFlight is how many requests a connection has out at once, as
	// Kafka's max.in.flight.requests.per.connection; default 5, and at
	// most 5 when idempotent: the store remembers a producer's last 5
	// batches of a partition, and a resend of an older one would be
	// refused as a gap instead of acknowledged. Without idempotence
	// (and acks 0) the default is 1, since a batch resent after a failure
	// would land behind the ones sent after it.
	MaxInFlight int
}

// maxInFlightIdempotent is the store's window of remembered batches per
// producer and partition (logstore's producerWindow, Kafka's 5).
const maxInFlightIdempotent = 5

// Producer batches records per partition and sends them to the gateway.
// The partitions are spread over a few connections; on each, a request
// carries a batch for every partition that has records (ProduceMany), and
// up to MaxInFlight requests are out at once, so while some are out the
// next gathers what arrives for all the connection's partitions. A
// partition's batches are written in order on one connection, where the
// gateway appends them in arrival order, and their callbacks run in that
// order.
//
// After a failure the partition's batches are resent one at a time, in
// order, as Kafka's idempotent producer does: with idempotence a batch
// sent behind a failed one is refused as a gap (OUT_OF_ORDER_SEQUENCE) and
// goes again after it, and a resend of a batch that did land is
// acknowledged as a duplicate, so records land once and in order. A batch
// given up leaves its partition's sequence unknown: the batches behind it
// go again under the next epoch, numbered from 0. Safe for concurrent use.
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
	// wg counts the goroutines and timers that may still finish batches:
	// drains, requests awaiting their answer, resends backing off.
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

// partBuf is one partition's open batch, its batches sent and not yet
// finished, and its producer state.
type partBuf struct {
	key  tpKey
	sink *sink
	b    wire.BatchBuilder
	// recs is the open batch's records, openBytes their size; full holds
	// the batches that reached BatchBytes, to go next in order.
	recs      []pending
	openBytes int
	full      [][]pending
	queued    bool // in sink.queue
	// unacked is the batches taken and not finished, in sequence order,
	// the order they finish in.
	unacked []*outBatch
	free    [][]byte // finished batches' buffers, for the next ones
	// pid, epoch and seq are the partition's idempotent state: epoch -1
	// until the first batch takes the producer's id; seq is the next
	// batch's base sequence.
	pid   int64
	epoch int16
	seq   int32
	// gap: a batch of this epoch was given up, so the store's next
	// sequence is unknown; the next batch, or the ones behind it that the
	// store refused, start the next epoch at 0.
	gap bool
}

func (pb *partBuf) empty() bool { return len(pb.recs)+len(pb.full) == 0 }

// takeRecs takes the records of pb's next batch.
func (pb *partBuf) takeRecs() (recs []pending) {
	if len(pb.full) > 0 {
		recs, pb.full = pb.full[0], pb.full[1:]
	} else {
		recs, pb.recs, pb.openBytes = pb.recs, nil, 0
	}
	return recs
}

func (pb *partBuf) head() *outBatch {
	if len(pb.unacked) == 0 {
		return nil
	}
	return pb.unacked[0]
}

// stalled reports whether pb holds its new records back: a batch of it
// failed and is resent, or an epoch change waits for its batches.
func (pb *partBuf) stalled() bool {
	if pb.gap && len(pb.unacked) > 0 {
		return true
	}
	for _, ob := range pb.unacked {
		if ob.state >= batchFailed {
			return true
		}
	}
	return false
}

func (pb *partBuf) anyOut() bool {
	for _, ob := range pb.unacked {
		if ob.state == batchOut {
			return true
		}
	}
	return false
}

// sink is one of the producer's connections and the partitions on it that
// have something to send.
type sink struct {
	c       *conn // dialed on first use; nil until then
	queue   []*partBuf
	out     int  // requests written and not answered
	sending bool // a drain goroutine runs
	// due: the queued records may go now (their linger is over, a batch
	// is full, a flush, or a request was answered while they waited).
	due bool
	// timer runs the linger of the oldest queued record; nil when none
	// runs.
	timer *time.Timer
}

func (sk *sink) enqueue(pb *partBuf) {
	if !pb.queued {
		pb.queued = true
		sk.queue = append(sk.queue, pb)
	}
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
	switch {
	case p.idempotent():
		if p.opts.MaxInFlight <= 0 || p.opts.MaxInFlight > maxInFlightIdempotent {
			p.opts.MaxInFlight = maxInFlightIdempotent
		}
	case p.opts.MaxInFlight <= 0:
		p.opts.MaxInFlight = 1
	}
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
	sk.enqueue(pb)
	switch {
	case len(pb.full) > 0 || pb.openBytes >= p.opts.BatchBytes || p.opts.Linger == 0:
		sk.due = true
		p.startLocked(sk)
	case sk.due:
		p.startLocked(sk)
	case sk.timer == nil:
		var timer *time.Timer
		timer = time.AfterFunc(p.opts.Linger, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if sk.timer != timer {
				return // stopped, or replaced after it fired
			}
			sk.timer = nil
			sk.due = true
			p.startLocked(sk)
		})
		sk.timer = timer
	}
}

// startLocked starts sending sk's queued batches, unless they are not due,
// a drain already runs, or MaxInFlight requests are out (an answer sends
// them).
func (p *Producer) startLocked(sk *sink) {
	if sk.sending || !sk.due || len(sk.queue) == 0 || sk.out >= p.opts.MaxInFlight {
		return
	}
	if sk.timer != nil {
		sk.timer.Stop()
		sk.timer = nil
	}
	sk.sending = true
	p.wg.Add(1)
	go p.drain(sk)
}

// batchState is where a sent batch stands.
type batchState uint8

const (
	batchOut     batchState = iota // an attempt is out
	batchAcked                     // acknowledged; finishes after the batches before it
	batchFailed                    // its last attempt failed; decided once it is the oldest
	batchBackoff                   // to go again after a pause
	batchReady                     // to go again in the connection's next request
	batchRestamp                   // to go again renumbered under a new epoch
)

// outBatch is one partition's batch, from when it is taken from the
// partition until it is acknowledged or given up.
type outBatch struct {
	pb    *partBuf
	recs  []pending
	size  int    // the records' recordSize
	bytes []byte // built by the drain goroutine; kept for resends
	// stamp is what the batch must carry, built what its bytes carry
	// (builtOK): they differ once a new epoch renumbers the batch, which
	// is then built again.
	stamp    stamp
	built    stamp
	builtOK  bool
	state    batchState
	attempts int
	base     int64
	err      error
	timer    *time.Timer // the backoff before a resend
}

// stamp is a batch's idempotent producer state; pid 0 for none.
type stamp struct {
	pid   int64
	epoch int16
	seq   int32
}

// maxRequestBytes bounds the batches one request gathers, well under the
// gateway's frame limit.
const maxRequestBytes = 16 << 20

// drain sends sk's due batches, a request at a time, while fewer than
// MaxInFlight are out; each request's answer is awaited by a goroutine of
// its own. One drain runs per sink, so requests are written in the order
// their batches were numbered.
func (p *Producer) drain(sk *sink) {
	defer p.wg.Done()
	for {
		pid, pidErr := p.producerID()
		p.mu.Lock()
		if !sk.due || len(sk.queue) == 0 || sk.out >= p.opts.MaxInFlight {
			sk.sending = false
			p.mu.Unlock()
			return
		}
		batches, again := p.gatherLocked(sk, pid, pidErr)
		if len(sk.queue) == 0 {
			sk.due = false
		}
		if len(batches) == 0 {
			if !again {
				sk.sending = false
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			continue // a partition waits for a new producer id
		}
		sk.out++
		p.mu.Unlock()
		// Built outside the lock: copying a request's records holds no
		// Produce call up (a producer would fall behind its callers
		// whenever this goroutine lost its CPU while holding the lock).
		p.buildBatches(batches)
		p.send(sk, batches)
	}
}

// gatherLocked takes one batch from each queued partition of sk, up to
// maxRequestBytes: the one to resend when a partition has one, else its
// next batch, numbered after the partition's last. again reports a
// partition that waits for a new producer id (producerID gets one).
func (p *Producer) gatherLocked(sk *sink, pid int64, pidErr error) (out []*outBatch, again bool) {
	size := 0
	keep := sk.queue[:0]
	for _, pb := range sk.queue {
		if size >= maxRequestBytes {
			keep = append(keep, pb)
			continue
		}
		ob, wait := p.takeLocked(pb, pid, pidErr)
		if wait {
			again = true
			keep = append(keep, pb)
			continue
		}
		if ob != nil {
			out = append(out, ob)
			size += ob.size
		}
		// What it cannot send now (stalled, or its window full) comes
		// back to the queue when one of its batches finishes.
		if ob != nil && !pb.empty() {
			keep = append(keep, pb)
		} else {
			pb.queued = false
		}
	}
	clear(sk.queue[len(keep):])
	sk.queue = keep
	return out, again
}

// takeLocked returns the batch pb sends in the next request, if any.
func (p *Producer) takeLocked(pb *partBuf, pid int64, pidErr error) (ob *outBatch, wait bool) {
	if h := pb.head(); h != nil && (h.state == batchReady || h.state == batchRestamp) {
		if h.state == batchRestamp {
			if pidErr != nil {
				// No attempt of pb is out (a restamp waits for that):
				// its batches fail with the reason.
				for pb.head() != nil {
					p.popLocked(pb, -1, pidErr)
				}
				return p.takeLocked(pb, pid, pidErr)
			}
			if !p.newEpochLocked(pb, pid) {
				return nil, true
			}
		}
		h.state, h.err = batchOut, nil
		h.attempts++
		return h, false
	}
	if pb.empty() || pb.stalled() || len(pb.unacked) >= p.opts.MaxInFlight {
		return nil, false
	}
	if p.idempotent() && pidErr == nil {
		switch {
		case pb.epoch < 0:
			pb.pid, pb.epoch, pb.seq = pid, 0, 0
		case pb.gap:
			if !p.newEpochLocked(pb, pid) {
				return nil, true
			}
		}
	}
	if p.idempotent() && pidErr != nil {
		for !pb.empty() {
			p.finishLocked(pb.takeRecs(), -1, pidErr)
		}
		return nil, false
	}
	recs := pb.takeRecs()
	ob = &outBatch{pb: pb, recs: recs, state: batchOut, attempts: 1, base: -1}
	for _, pr := range recs {
		ob.size += recordSize(pr.rec)
	}
	if n := len(pb.free); n > 0 {
		ob.bytes, pb.free = pb.free[n-1], pb.free[:n-1]
	}
	if p.idempotent() {
		ob.stamp = stamp{pb.pid, pb.epoch, pb.seq}
		pb.seq = addSeq(pb.seq, len(recs))
	}
	pb.unacked = append(pb.unacked, ob)
	return ob, false
}

// newEpochLocked starts pb's next epoch (a new producer id once the
// epochs are used up) and numbers its unfinished batches from 0, in
// order. It reports false when pb needs a producer id other than pid:
// producerID then asks for one.
func (p *Producer) newEpochLocked(pb *partBuf, pid int64) bool {
	switch {
	case pb.epoch < math.MaxInt16-1:
		pb.epoch++
	case pid != pb.pid:
		pb.pid, pb.epoch = pid, 0
	default:
		p.pid.renew.Store(true)
		return false
	}
	pb.seq, pb.gap = 0, false
	for _, ob := range pb.unacked {
		ob.stamp = stamp{pb.pid, pb.epoch, pb.seq}
		ob.attempts = 0
		pb.seq = addSeq(pb.seq, len(ob.recs))
	}
	return true
}

// addSeq advances a sequence by n records, wrapping past MaxInt32 to 0 as
// Kafka's sequences do.
func addSeq(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

// buildBatches builds each gathered batch that its bytes do not already
// carry, in its partition's builder: only the sink's drain goroutine uses
// it, and a batch is built only while no attempt of it is out.
func (p *Producer) buildBatches(batches []*outBatch) {
	for _, ob := range batches {
		if ob.builtOK && ob.built == ob.stamp {
			continue
		}
		b := &ob.pb.b
		b.Reset()
		for _, pr := range ob.recs {
			b.Add(pr.rec.Timestamp.UnixMilli(), pr.rec.Key, pr.rec.Value, pr.rec.Headers)
		}
		b.ProducerID, b.ProducerEpoch, b.BaseSequence = -1, -1, -1
		if st := ob.stamp; st.pid > 0 {
			b.ProducerID, b.ProducerEpoch, b.BaseSequence = st.pid, st.epoch, st.seq
		}
		ob.bytes, ob.err = b.AppendBatch(ob.bytes[:0])
		ob.built, ob.builtOK = ob.stamp, ob.err == nil
	}
}

// send writes batches in one ProduceMany and hands the answer, when one
// comes, to complete.
func (p *Producer) send(sk *sink, batches []*outBatch) {
	req := wire.ProduceMany{Acks: p.opts.Acks, TimeoutMs: int32(p.opts.Timeout / time.Millisecond)}
	req.Partitions = make([]wire.ManyPart, 0, len(batches))
	for _, ob := range batches {
		if ob.err == nil {
			req.Partitions = append(req.Partitions, wire.ManyPart{TopicID: ob.pb.key.id, Partition: ob.pb.key.p, Records: ob.bytes})
		}
	}
	if len(req.Partitions) == 0 {
		p.complete(sk, batches, nil, nil)
		return
	}
	c := p.conn(sk)
	corr, ch, err := c.sendProduceMany(&req)
	if err != nil || p.opts.Acks == 0 {
		p.complete(sk, batches, nil, err)
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout+5*time.Second)
		r, err := c.await(ctx, corr, ch)
		cancel()
		var out wire.ProduceManyResponse
		if err == nil {
			err = out.Decode(&r)
			if err == nil && len(out.Partitions) != len(req.Partitions) {
				err = fmt.Errorf("%w: %d results for %d partitions", wire.ErrMalformed, len(out.Partitions), len(req.Partitions))
			}
		}
		p.complete(sk, batches, &out, err)
	}()
}

// complete records a request's outcome on each of its batches (out nil:
// no answer, as with acks 0 or a failed write), finishes what it can and
// sends what waited for the request.
func (p *Producer) complete(sk *sink, batches []*outBatch, out *wire.ProduceManyResponse, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sk.out--
	i := 0
	for _, ob := range batches {
		// A batch with an error here could not be built and was not sent.
		switch {
		case ob.err != nil:
		case err != nil:
			ob.err = err
		case out != nil:
			if res := &out.Partitions[i]; res.Code != 0 {
				ob.err = &Error{Code: res.Code, Message: res.Message, LeaderHint: res.LeaderHint}
			} else {
				ob.base = res.BaseOffset
			}
			i++
		}
		ob.state = batchAcked
		if ob.err != nil {
			ob.state = batchFailed
		}
	}
	for _, ob := range batches {
		p.resolveLocked(ob.pb)
	}
	if len(sk.queue) > 0 {
		sk.due = true // they waited for this request already
	}
	p.startLocked(sk)
}

// resolveLocked finishes pb's oldest batches while their outcome is
// known, in order, and decides what a failed one does: go again (at once
// when the batch before it was just acknowledged, since its failure was
// likely that batch's gap, else after a backoff), or be given up.
func (p *Producer) resolveLocked(pb *partBuf) {
	progress := false
	for h := pb.head(); h != nil; h = pb.head() {
		if h.state == batchAcked {
			p.popLocked(pb, h.base, nil)
			progress = true
			continue
		}
		if h.state != batchFailed {
			break
		}
		gapRefused := errors.Is(h.err, kerr.OutOfOrderSequenceNumber)
		if gapRefused && pb.gap {
			// Neither it nor any batch behind it was written (the
			// store refused the gap the given-up batch left): once
			// none is out, they go again under the next epoch.
			if !pb.anyOut() {
				h.state = batchRestamp
			}
			break
		}
		if !p.mu.closed && p.opts.Acks != 0 && h.attempts <= p.opts.Retries && resendable(h.err) {
			if progress || gapRefused {
				h.state = batchReady
			} else {
				h.state = batchBackoff
				p.backoffLocked(h)
			}
			break
		}
		p.popLocked(pb, -1, h.err)
		if pb.pid > 0 {
			pb.gap = true
		}
	}
	if h := pb.head(); (h != nil && (h.state == batchReady || h.state == batchRestamp)) ||
		(!pb.empty() && !pb.stalled() && len(pb.unacked) < p.opts.MaxInFlight) {
		pb.sink.enqueue(pb)
		pb.sink.due = true
	}
}

// backoffLocked makes ob ready to go again after a pause that doubles with
// each attempt, from 50ms up to 1s.
func (p *Producer) backoffLocked(ob *outBatch) {
	d := min(50*time.Millisecond<<min(ob.attempts-1, 5), time.Second)
	p.wg.Add(1)
	ob.timer = time.AfterFunc(d, func() {
		defer p.wg.Done()
		p.mu.Lock()
		defer p.mu.Unlock()
		if ob.state != batchBackoff {
			return
		}
		ob.state = batchReady
		if p.mu.closed {
			ob.state = batchFailed
		}
		p.resolveLocked(ob.pb)
		p.startLocked(ob.pb.sink)
	})
}

// resendable reports whether a batch that failed with err may go again.
// Besides retriable codes, that is a lost connection or answer: with
// idempotence the resend is acknowledged as a duplicate if the first did
// land.
func resendable(err error) bool {
	var ne net.Error
	return retriable(err) || errors.Is(err, kerr.OutOfOrderSequenceNumber) ||
		errors.Is(err, ErrClosed) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// popLocked finishes pb's oldest batch.
func (p *Producer) popLocked(pb *partBuf, base int64, err error) {
	ob := pb.unacked[0]
	n := copy(pb.unacked, pb.unacked[1:])
	pb.unacked[n] = nil
	pb.unacked = pb.unacked[:n]
	if ob.bytes != nil && len(pb.free) <= p.opts.MaxInFlight {
		pb.free = append(pb.free, ob.bytes[:0])
	}
	p.finishLocked(ob.recs, base, err)
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
		if len(sk.queue) > 0 {
			sk.due = true
		}
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
// the Client. Records still queued are sent once, without retries.
func (p *Producer) Close(ctx context.Context) error {
	err := p.Flush(ctx)
	p.mu.Lock()
	p.mu.closed = true
	for _, sk := range p.mu.sinks {
		if sk.timer != nil {
			sk.timer.Stop()
			sk.timer = nil
		}
		if len(sk.queue) > 0 {
			sk.due = true
		}
	}
	// A batch backing off gives up now (resolveLocked retries nothing
	// once closed); one whose timer already fired does in the timer.
	for _, pb := range p.mu.parts {
		for _, ob := range pb.unacked {
			if ob.state == batchBackoff && ob.timer.Stop() {
				ob.state = batchFailed
				p.wg.Done()
			}
		}
		p.resolveLocked(pb)
	}
	for _, sk := range p.mu.sinks {
		p.startLocked(sk)
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.mu.Lock()
	var conns []*conn
	for _, sk := range p.mu.sinks {
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
