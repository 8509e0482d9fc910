package kafka

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// The transaction coordinator runs inside the gateway, placed like the
// group coordinator: a transactional id is coordinated by the live gateway
// it hashes to (FindCoordinator key type 1), and its state lives in
// partition abs(javaHashCode(id)) mod P of the internal topic
// __transaction_state, in Kafka's own record format (TxnMetadataKey and
// TxnMetadataValue v0). Every change of state is appended (acks all)
// before it is answered, and the topic is read back at startup, latest
// record per id winning, so the coordinator recovers after a crash: a
// transaction found in PrepareCommit or PrepareAbort is completed (its
// markers written) by the background loop, and one left Ongoing is
// aborted once transaction.timeout.ms has passed since it started.
//
// A transaction ends in two steps, as in Kafka: the decision
// (PrepareCommit/PrepareAbort) is made durable first, then a marker is
// written to every partition of the transaction through the store
// (Backend.WriteTxnMarker), the offsets committed in the transaction
// are applied to their groups, and the transaction is marked complete.
// A step that fails is retried by the background loop; the client sees
// CONCURRENT_TRANSACTIONS until then.
//
// Offsets committed in a transaction (TxnOffsetCommit) arrive at the
// group's coordinator, which may be another gateway. It checks them
// against the transaction's state (read from __transaction_state) and
// appends them there, keyed by transactional id, group and producer, in a
// record of our own (key version txnOffsetsKeyVersion, which Kafka's
// readers skip). The transaction's coordinator reads them back when it
// commits and applies them as ordinary commits of the group, so they
// become visible only on commit and are dropped on abort. The commit goes
// through the group's coordinator when it is this gateway; otherwise the
// offset records are appended to __consumer_offsets directly, with a
// txnAppliedKey record that the other gateway applies to the group if it
// holds it live (it reads the partition before each OffsetFetch), and
// reads as ordinary commits when it next loads the group (doc.go).
//
// Producer fencing: InitProducerId on an id whose transaction is open
// aborts it with the producer epoch bumped, so the markers fence the old
// producer in every partition (INVALID_PRODUCER_EPOCH on its next produce)
// and the coordinator answers its requests PRODUCER_FENCED. A timeout
// abort bumps the epoch the same way.
//
// Transactions v2 (KIP-890 part 2, advertised as the finalized feature
// transaction.version 2): a produce v12+ or TxnOffsetCommit v5+ adds its
// partition to the producer's transaction itself (addImplicit), through
// a record in __transaction_state that any gateway may append, and every
// EndTxn v5 bumps the producer epoch at the prepare, so the markers fence
// the ended transaction's late batches.
//
// Expiry (transactional.id.expiration.ms): an id at rest (Empty,
// CompleteCommit or CompleteAbort) whose state has not changed for
// Options.TransactionalIDExpiration is removed by its coordinator with a tombstone in
// __transaction_state, as Kafka's TransactionStateManager does; the
// topic's compaction then drops its records. The next InitProducerId
// for the id starts afresh with a new producer id.

// txnStateTopic holds the transaction coordinators' state.
const txnStateTopic = "__transaction_state"

// txnMaxTimeout is Kafka's transaction.max.timeout.ms default.
const txnMaxTimeout = 15 * time.Minute

// txnOffsetsKeyVersion marks our pending-offsets records in
// __transaction_state; Kafka's own keys are versions 0 and 1.
const txnOffsetsKeyVersion = 100

// txnAddKeyVersion marks our implicit-add records in __transaction_state
// (transactions v2): a partition joined a transaction through a produce or
// a TxnOffsetCommit, written by whichever gateway served it.
const txnAddKeyVersion = 101

// txnTick is how often the background loop looks for timed-out and
// unfinished transactions, and for expired transactional ids.
const txnTick = time.Second

// defaultTxnIDExpiration is Kafka's transactional.id.expiration.ms
// default (Options.TransactionalIDExpiration): an id whose last
// transaction ended (or that never began one) this long ago is forgotten,
// so __transaction_state does not keep every id a client ever used.
const defaultTxnIDExpiration = 7 * 24 * time.Hour

// txnStatus is Kafka's TransactionState.
type txnStatus int8

const (
	txnEmpty txnStatus = iota
	txnOngoing
	txnPrepareCommit
	txnPrepareAbort
	txnCompleteCommit
	txnCompleteAbort
	txnDead
	txnPrepareEpochFence
)

func (s txnStatus) String() string {
	switch s {
	case txnEmpty:
		return "Empty"
	case txnOngoing:
		return "Ongoing"
	case txnPrepareCommit:
		return "PrepareCommit"
	case txnPrepareAbort:
		return "PrepareAbort"
	case txnCompleteCommit:
		return "CompleteCommit"
	case txnCompleteAbort:
		return "CompleteAbort"
	case txnDead:
		return "Dead"
	case txnPrepareEpochFence:
		return "PrepareEpochFence"
	}
	return fmt.Sprintf("txnStatus(%d)", int8(s))
}

// txnView is a transaction's durable state, as one record holds it.
type txnView struct {
	pid     int64
	epoch   int16
	timeout time.Duration
	state   txnStatus
	parts   map[tp]struct{}
	start   int64 // unix ms the transaction started (-1: none open)
	updated int64 // unix ms of the last change
}

func (v txnView) clone() txnView {
	v.parts = maps.Clone(v.parts)
	if v.parts == nil {
		v.parts = map[tp]struct{}{}
	}
	return v
}

// txnMeta is one transactional id.
type txnMeta struct {
	id string
	// op serializes the operations on this id, I/O included: a client
	// sends one at a time, and the background loop must not complete a
	// transaction a request is changing.
	op sync.Mutex
	// cur and at are guarded by txnCoordinator.mu; at is the offset of the
	// record cur was read from or written as, so a catch-up read never
	// applies an older record over what this gateway wrote since.
	cur txnView
	at  int64
}

// txnAdd is a partition added to a transaction implicitly (transactions
// v2), not yet part of a state record.
type txnAdd struct {
	pid   int64
	epoch int16
	p     tp
	ts    int64 // unix ms it was added
}

// txnPending is offsets committed in a transaction, not yet applied.
type txnPending struct {
	group string
	pid   int64
	epoch int16
	offs  map[tp]committed
}

type txnCoordinator struct {
	g   *Gateway
	log *slog.Logger

	ready chan struct{}   // closed once __transaction_state is loaded (or on shutdown)
	ctx   context.Context // set by run before ready is closed

	// __transaction_state is made on first use, as Kafka makes it, so
	// initMu guards setting up the fields below, and inited says they are
	// set (read-only after).
	initMu    sync.Mutex
	inited    atomic.Bool
	parts     int32
	catchUpMu []sync.Mutex // per partition: one reader at a time

	// unstable is the group side's memory of transactional offset
	// commits, for OffsetFetch with RequireStable (txn_stable.go).
	unstable unstableOffsets

	mu struct {
		sync.Mutex
		txns     map[string]*txnMeta
		pending  map[string][]txnPending // by transactional id, in log order
		adds     map[string][]txnAdd     // by transactional id, in log order
		loadedTo []int64                 // per partition: the offset read up to
		stopping bool
	}
}

func newTxnCoordinator(g *Gateway) *txnCoordinator {
	c := &txnCoordinator{g: g, log: g.log.With("part", "txn-coordinator"), ready: make(chan struct{})}
	c.mu.txns = map[string]*txnMeta{}
	c.mu.pending = map[string][]txnPending{}
	c.mu.adds = map[string][]txnAdd{}
	return c
}

// Sentinels of the transaction coordinator.
var (
	// errTxnLoading: __transaction_state is still being read.
	errTxnLoading = fmt.Errorf("%w: transaction coordinator is loading", kerr.CoordinatorLoadInProgress)
	// errTxnUnknown: no state for the transactional id.
	errTxnUnknown = errors.New("unknown transactional id")
)

// run loads __transaction_state (retrying while the store or the metadata
// is unreachable), then, until ctx ends, completes unfinished transactions
// and aborts timed-out ones.
func (c *txnCoordinator) run(ctx context.Context) {
	c.ctx = ctx
	for attempt := 0; ; attempt++ {
		err := c.load(ctx, false)
		if err == nil {
			c.mu.Lock()
			n := len(c.mu.txns)
			c.mu.Unlock()
			c.log.Info("transaction state loaded", "topic", txnStateTopic, "partitions", c.parts, "transactional_ids", n)
			break
		}
		if ctx.Err() != nil {
			break
		}
		if attempt%10 == 0 {
			c.log.Warn("loading transaction state, will retry", "err", err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		c.mu.Lock()
		c.mu.stopping = true
		c.mu.Unlock()
		close(c.ready)
		return
	}
	close(c.ready)
	t := time.NewTicker(txnTick)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			c.tick(ctx, now)
		case <-ctx.Done():
			c.mu.Lock()
			c.mu.stopping = true
			c.mu.Unlock()
			return
		}
	}
}

// load reads all of __transaction_state, creating it first with create;
// without, a topic that does not exist yet leaves nothing to load.
func (c *txnCoordinator) load(ctx context.Context, create bool) error {
	t, err := c.g.cluster.Topic(ctx, txnStateTopic)
	if errors.Is(err, ErrUnknownTopic) && !create {
		return nil
	}
	if errors.Is(err, ErrUnknownTopic) {
		t, err = c.g.createInternal(ctx, CreateTopic{
			Name: txnStateTopic, Partitions: c.g.opts.OffsetsPartitions,
			// Compacted, as in Kafka: the latest record per id is the
			// state.
			Configs: map[string]*string{"cleanup.policy": ptr("compact")},
		})
		if errors.Is(err, ErrTopicExists) {
			t, err = c.g.cluster.Topic(ctx, txnStateTopic)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", txnStateTopic, err)
	}
	if t.Partitions <= 0 {
		return fmt.Errorf("%s has no partitions", txnStateTopic)
	}
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if c.catchUpMu == nil {
		c.parts = t.Partitions
		c.catchUpMu = make([]sync.Mutex, t.Partitions)
		c.mu.Lock()
		c.mu.loadedTo = make([]int64, t.Partitions)
		c.mu.Unlock()
	}
	for p := int32(0); p < c.parts; p++ {
		if err := c.catchUp(ctx, p); err != nil {
			return err
		}
	}
	c.inited.Store(true)
	return nil
}

// ensure makes __transaction_state and loads it, if that is not done yet.
func (c *txnCoordinator) ensure(ctx context.Context) error {
	if c.inited.Load() {
		return nil
	}
	if err := c.load(ctx, true); err != nil {
		c.log.Warn("creating the transaction state topic", "err", err)
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	return nil
}

// javaHashPartition is Kafka's choice of partition for a group or
// transactional id: the Java hash code of the id, made non-negative,
// modulo the partition count.
func javaHashPartition(id string, parts int32) int32 {
	var h int32
	for _, r := range id {
		if r >= 0x10000 { // a surrogate pair in Java's UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return int32(uint32(h)&0x7fffffff) % parts
}

func (c *txnCoordinator) partitionFor(id string) int32 { return javaHashPartition(id, c.parts) }

// catchUp reads partition p of __transaction_state from where it was last
// read up to its high watermark.
func (c *txnCoordinator) catchUp(ctx context.Context, p int32) error {
	c.catchUpMu[p].Lock()
	defer c.catchUpMu[p].Unlock()
	c.mu.Lock()
	from := c.mu.loadedTo[p]
	c.mu.Unlock()
	info, err := c.g.backend.DescribePartition(ctx, txnStateTopic, p)
	if err != nil {
		return fmt.Errorf("%s/%d: %w", txnStateTopic, p, err)
	}
	from = max(from, info.LogStartOffset)
	for from < info.HighWatermark {
		recs, next, err := c.g.readInternalChunk(ctx, txnStateTopic, p, from)
		if err != nil {
			return err
		}
		c.mu.Lock()
		for _, r := range recs {
			if r.off >= from { // one record per batch: see write
				c.applyLocked(r.off, r.r)
			}
		}
		c.mu.loadedTo[p] = next
		c.mu.Unlock()
		from = next
	}
	return nil
}

// applyLocked applies one __transaction_state record read at offset off.
func (c *txnCoordinator) applyLocked(off int64, r record) {
	if len(r.key) < 2 {
		return
	}
	switch int16(r.key[0])<<8 | int16(r.key[1]) {
	case 0, 1:
		var k kmsg.TxnMetadataKey
		if err := k.ReadFrom(r.key); err != nil {
			c.log.Warn("skipping a malformed transaction key", "offset", off, "err", err)
			return
		}
		// What was pending so far belonged to the transactions this
		// record (or an earlier one) closed.
		m := c.mu.txns[k.TransactionalID]
		if r.value == nil {
			// A tombstone (expiry) removes the id, unless this gateway
			// has since written a later state for it.
			if m != nil && off > m.at {
				delete(c.mu.txns, k.TransactionalID)
				delete(c.mu.pending, k.TransactionalID)
				delete(c.mu.adds, k.TransactionalID)
			}
			return
		}
		v, err := decodeTxnValue(r.value)
		if err != nil {
			c.log.Warn("skipping a malformed transaction value", "transactional_id", k.TransactionalID, "offset", off, "err", err)
			return
		}
		switch v.state {
		case txnEmpty, txnCompleteCommit, txnCompleteAbort, txnDead:
			delete(c.mu.pending, k.TransactionalID)
			delete(c.mu.adds, k.TransactionalID)
		}
		if m == nil {
			m = &txnMeta{id: k.TransactionalID, at: -1}
			c.mu.txns[k.TransactionalID] = m
		}
		if off > m.at {
			m.cur, m.at = v, off
		}
	case txnOffsetsKeyVersion:
		p, err := decodeTxnOffsets(r.key, r.value)
		if err != nil {
			c.log.Warn("skipping a malformed transactional offsets record", "offset", off, "err", err)
			return
		}
		id := p.id
		c.mu.pending[id] = append(c.mu.pending[id], p.txnPending)
	case txnAddKeyVersion:
		id, a, err := decodeTxnAdd(r.key, r.value)
		if err != nil {
			c.log.Warn("skipping a malformed transactional add record", "offset", off, "err", err)
			return
		}
		c.mu.adds[id] = append(c.mu.adds[id], a)
	}
}

// encodeTxnAdd lays out an implicit-add record. Key: version int16
// (txnAddKeyVersion), transactional id (string), producer id int64,
// epoch int16. Value: topic (string), partition int32, time added int64
// (unix ms, the transaction's start if it opens it).
func encodeTxnAdd(id string, a txnAdd) record {
	k := kbin.AppendInt16(nil, txnAddKeyVersion)
	k = kbin.AppendString(k, id)
	k = kbin.AppendInt64(k, a.pid)
	k = kbin.AppendInt16(k, a.epoch)
	v := kbin.AppendString(nil, a.p.topic)
	v = kbin.AppendInt32(v, a.p.partition)
	v = kbin.AppendInt64(v, a.ts)
	return record{key: k, value: v}
}

func decodeTxnAdd(key, value []byte) (string, txnAdd, error) {
	var a txnAdd
	kr := kbin.Reader{Src: key}
	if kr.Int16() != txnAddKeyVersion {
		return "", a, errors.New("not a transactional add key")
	}
	id := kr.String()
	a.pid, a.epoch = kr.Int64(), kr.Int16()
	if err := kr.Complete(); err != nil {
		return "", a, fmt.Errorf("key: %w", err)
	}
	vr := kbin.Reader{Src: value}
	a.p.topic, a.p.partition, a.ts = vr.String(), vr.Int32(), vr.Int64()
	if err := vr.Complete(); err != nil {
		return "", a, fmt.Errorf("value: %w", err)
	}
	if id == "" || a.p.topic == "" || a.p.partition < 0 {
		return "", a, fmt.Errorf("add of %s-%d to transactional id %q", a.p.topic, a.p.partition, id)
	}
	return id, a, nil
}

// txnValue encodes v as Kafka's TxnMetadataValue v0.
func txnValue(v *txnView) []byte {
	val := kmsg.NewTxnMetadataValue()
	val.Version = 0
	val.ProducerID, val.ProducerEpoch = v.pid, v.epoch
	val.TimeoutMillis = int32(v.timeout.Milliseconds())
	val.State = kmsg.TransactionState(v.state)
	val.LastUpdateTimestamp, val.StartTimestamp = v.updated, v.start
	byTopic := map[string][]int32{}
	for k := range v.parts {
		byTopic[k.topic] = append(byTopic[k.topic], k.partition)
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic = n
		t.Partitions = byTopic[n]
		sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i] < t.Partitions[j] })
		val.Topics = append(val.Topics, t)
	}
	return val.AppendTo(nil)
}

func decodeTxnValue(b []byte) (txnView, error) {
	var val kmsg.TxnMetadataValue
	if err := val.ReadFrom(b); err != nil {
		return txnView{}, err
	}
	v := txnView{pid: val.ProducerID, epoch: val.ProducerEpoch, timeout: time.Duration(val.TimeoutMillis) * time.Millisecond,
		state: txnStatus(val.State), start: val.StartTimestamp, updated: val.LastUpdateTimestamp, parts: map[tp]struct{}{}}
	if v.state < txnEmpty || v.state > txnPrepareEpochFence {
		return txnView{}, fmt.Errorf("transaction state %d", val.State)
	}
	for _, t := range val.Topics {
		for _, p := range t.Partitions {
			v.parts[tp{t.Topic, p}] = struct{}{}
		}
	}
	return v, nil
}

// txnOffsetsRecord is a pending-offsets record with its transactional id.
type txnOffsetsRecord struct {
	id string
	txnPending
}

// encodeTxnOffsets lays out a pending-offsets record. Key: version int16
// (txnOffsetsKeyVersion), transactional id, group (strings), producer id
// int64, epoch int16. Value: an array of topic (string), partition int32,
// offset int64, leader epoch int32, metadata (string), commit time int64.
func encodeTxnOffsets(id string, p *txnPending) record {
	k := kbin.AppendInt16(nil, txnOffsetsKeyVersion)
	k = kbin.AppendString(k, id)
	k = kbin.AppendString(k, p.group)
	k = kbin.AppendInt64(k, p.pid)
	k = kbin.AppendInt16(k, p.epoch)
	keys := make([]tp, 0, len(p.offs))
	for key := range p.offs {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	v := kbin.AppendArrayLen(nil, len(keys))
	for _, key := range keys {
		o := p.offs[key]
		v = kbin.AppendString(v, key.topic)
		v = kbin.AppendInt32(v, key.partition)
		v = kbin.AppendInt64(v, o.offset)
		v = kbin.AppendInt32(v, o.leaderEpoch)
		v = kbin.AppendString(v, o.metadata)
		v = kbin.AppendInt64(v, o.commitTs)
	}
	return record{key: k, value: v}
}

func decodeTxnOffsets(key, value []byte) (txnOffsetsRecord, error) {
	var out txnOffsetsRecord
	kr := kbin.Reader{Src: key}
	if kr.Int16() != txnOffsetsKeyVersion {
		return out, errors.New("not a transactional offsets key")
	}
	out.id = kr.String()
	out.group = kr.String()
	out.pid = kr.Int64()
	out.epoch = kr.Int16()
	if err := kr.Complete(); err != nil {
		return out, fmt.Errorf("key: %w", err)
	}
	vr := kbin.Reader{Src: value}
	n := vr.ArrayLen()
	if n < 0 || int(n) > len(value)/26 {
		return out, fmt.Errorf("value: %d offsets", n)
	}
	out.offs = make(map[tp]committed, n)
	for i := int32(0); i < n; i++ {
		k := tp{topic: vr.String(), partition: vr.Int32()}
		out.offs[k] = committed{offset: vr.Int64(), leaderEpoch: vr.Int32(), metadata: vr.String(), commitTs: vr.Int64()}
	}
	if err := vr.Complete(); err != nil {
		return out, fmt.Errorf("value: %w", err)
	}
	return out, nil
}

// write appends one record to partition p of __transaction_state, durably
// (acks all), and returns its offset. One record per batch, so a batch's
// base offset is its record's.
func (c *txnCoordinator) write(ctx context.Context, p int32, r record) (int64, error) {
	res, err := c.g.backend.Produce(ctx, &ring.ProduceRequest{
		Topic: txnStateTopic, Partition: p, Acks: -1, Records: appendBatch(nil, time.Now().UnixMilli(), []record{r}),
	})
	if err != nil {
		return 0, fmt.Errorf("writing %s/%d: %w", txnStateTopic, p, err)
	}
	return res.BaseOffset, nil
}

// save makes next the durable state of m, then its current one. m.op is
// held by the caller.
func (c *txnCoordinator) save(ctx context.Context, m *txnMeta, next txnView) error {
	next.updated = time.Now().UnixMilli()
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = m.id
	off, err := c.write(ctx, c.partitionFor(m.id), record{key: k.AppendTo(nil), value: txnValue(&next)})
	if err != nil {
		return err
	}
	c.mu.Lock()
	if off > m.at {
		m.cur, m.at = next, off
	}
	c.mu.Unlock()
	return nil
}

// view returns m's current state, with the partitions added implicitly
// since its last state record.
func (c *txnCoordinator) view(m *txnMeta) txnView {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.viewLocked(m)
}

// viewLocked is view with c.mu held. An implicit add by m's current
// producer opens a transaction at rest, as AddPartitionsToTxn would; one
// by another producer or epoch is stale and ignored (complete marks the
// partitions of the epoch it ends).
func (c *txnCoordinator) viewLocked(m *txnMeta) txnView {
	v := m.cur.clone()
	for _, a := range c.mu.adds[m.id] {
		if a.pid != v.pid || a.epoch != v.epoch {
			continue
		}
		switch v.state {
		case txnEmpty, txnCompleteCommit, txnCompleteAbort:
			v.state, v.start = txnOngoing, a.ts
			clear(v.parts)
		case txnOngoing:
		default:
			continue
		}
		v.parts[a.p] = struct{}{}
	}
	return v
}

// owns reports whether this gateway coordinates id.
func (c *txnCoordinator) owns(ctx context.Context, id string) bool {
	return coordinatorFor(id, c.g.brokers(ctx)).NodeID == c.g.opts.NodeID
}

// readyErr is nil once the state is loaded.
func (c *txnCoordinator) readyErr() error {
	select {
	case <-c.ready:
	default:
		return errTxnLoading
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.stopping {
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// with runs fn on id's state with its op lock held, after catching up on
// its partition. With create, an id never seen gets an empty state (pid
// -1); without, it is errTxnUnknown. Only id's coordinator may call it.
func (c *txnCoordinator) with(ctx context.Context, id string, create bool, fn func(m *txnMeta) error) error {
	if err := c.readyErr(); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if !c.owns(ctx, id) {
		return kerr.NotCoordinator
	}
	if err := c.ensure(ctx); err != nil {
		return err
	}
	if err := c.catchUp(ctx, c.partitionFor(id)); err != nil {
		c.log.Warn("catching up on transaction state", "transactional_id", id, "err", err)
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	c.mu.Lock()
	m := c.mu.txns[id]
	if m == nil {
		if !create {
			c.mu.Unlock()
			return errTxnUnknown
		}
		m = &txnMeta{id: id, at: -1, cur: txnView{pid: -1, epoch: -1, start: -1, parts: map[tp]struct{}{}}}
		c.mu.txns[id] = m
	}
	c.mu.Unlock()
	m.op.Lock()
	c.mu.Lock()
	gone := c.mu.txns[id] != m
	c.mu.Unlock()
	if gone {
		// Expired while this request waited for it: start over on what
		// is there now.
		m.op.Unlock()
		return c.with(ctx, id, create, fn)
	}
	defer m.op.Unlock()
	return fn(m)
}

// fenced is the error for a stale producer epoch: PRODUCER_FENCED from
// the request version that knows it (since), INVALID_PRODUCER_EPOCH
// before, as Kafka answers.
func fenced(version, since int16, format string, args ...any) error {
	code := kerr.ProducerFenced
	if version < since {
		code = kerr.InvalidProducerEpoch
	}
	return fmt.Errorf("%w: "+format, append([]any{code}, args...)...)
}

// checkProducer checks a request's producer id and epoch against v.
func checkProducer(v *txnView, pid int64, epoch int16, version, fencedSince int16) error {
	switch {
	case v.pid < 0 || pid != v.pid:
		return fmt.Errorf("%w: producer id %d, the transaction has %d", kerr.InvalidProducerIDMapping, pid, v.pid)
	case epoch != v.epoch:
		return fenced(version, fencedSince, "producer %d epoch %d, the transaction is at epoch %d", pid, epoch, v.epoch)
	}
	return nil
}

// initProducer serves InitProducerId for a transactional id: a new
// producer id, or the next epoch of the id's producer after aborting (or
// completing) what the previous one left open.
func (c *txnCoordinator) initProducer(ctx context.Context, id string, timeout time.Duration, reqPid int64, reqEpoch int16, version int16) (pid int64, epoch int16, err error) {
	if timeout <= 0 || timeout > txnMaxTimeout {
		return -1, -1, fmt.Errorf("%w: transaction timeout %v, the limit is %v", kerr.InvalidTransactionTimeout, timeout, txnMaxTimeout)
	}
	err = c.with(ctx, id, true, func(m *txnMeta) error {
		v := c.view(m)
		if v.pid >= 0 && reqPid >= 0 && (reqPid != v.pid || reqEpoch != v.epoch) {
			return fenced(version, 4, "producer %d epoch %d, the transactional id has producer %d epoch %d", reqPid, reqEpoch, v.pid, v.epoch)
		}
		switch v.state {
		case txnOngoing:
			// A new producer takes over: abort what the old one left,
			// with the epoch bumped so its markers fence it.
			if err := c.abortFenced(ctx, m, "a new producer initialized"); err != nil {
				return fmt.Errorf("%w: aborting the open transaction: %v", kerr.ConcurrentTransactions, err)
			}
		case txnPrepareCommit, txnPrepareAbort:
			if err := c.complete(ctx, m); err != nil {
				return fmt.Errorf("%w: completing the previous transaction: %v", kerr.ConcurrentTransactions, err)
			}
		}
		v = c.view(m)
		next := v.clone()
		if v.pid < 0 || v.epoch >= math.MaxInt16-1 {
			// A new id, or its epochs are used up: a new producer id.
			newPid, err := c.g.pids.next(ctx)
			if err != nil {
				return err
			}
			next.pid, next.epoch = newPid, 0
		} else {
			next.epoch++
		}
		next.state, next.timeout, next.start = txnEmpty, timeout, -1
		clear(next.parts)
		if err := c.save(ctx, m, next); err != nil {
			return err
		}
		pid, epoch = next.pid, next.epoch
		return nil
	})
	if err != nil {
		return -1, -1, err
	}
	return pid, epoch, nil
}

// addPartitions adds partitions to id's transaction, opening it if needed.
// The caller has checked that the topics exist.
func (c *txnCoordinator) addPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []tp, version, fencedSince int16) error {
	err := c.with(ctx, id, false, func(m *txnMeta) error {
		v := c.view(m)
		if err := checkProducer(&v, pid, epoch, version, fencedSince); err != nil {
			return err
		}
		switch v.state {
		case txnPrepareCommit, txnPrepareAbort, txnPrepareEpochFence:
			return fmt.Errorf("%w: transaction is in %v", kerr.ConcurrentTransactions, v.state)
		case txnDead:
			return fmt.Errorf("%w: transaction is in %v", kerr.InvalidTxnState, v.state)
		}
		missing := false
		for _, p := range parts {
			if _, ok := v.parts[p]; !ok {
				missing = true
			}
		}
		if v.state == txnOngoing && !missing {
			return nil
		}
		next := v.clone()
		if v.state != txnOngoing {
			next.state, next.start = txnOngoing, time.Now().UnixMilli()
			clear(next.parts)
		}
		for _, p := range parts {
			next.parts[p] = struct{}{}
		}
		return c.save(ctx, m, next)
	})
	return c.unknownAs(err, kerr.InvalidProducerIDMapping)
}

// unknownAs maps errTxnUnknown to code, Kafka's answer for the request.
func (c *txnCoordinator) unknownAs(err error, code *kerr.Error) error {
	if errors.Is(err, errTxnUnknown) {
		return fmt.Errorf("%w: %v", code, err)
	}
	return err
}

// verifyPartitions answers AddPartitionsToTxn v4+'s VerifyOnly as Kafka
// 4's coordinator does: CONCURRENT_TRANSACTIONS while the transaction is
// being ended, else nil for each partition in id's open transaction and
// TRANSACTION_ABORTABLE (INVALID_TXN_STATE before v5, which lacks it) for
// the others.
func (c *txnCoordinator) verifyPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []tp, version int16) (map[tp]error, error) {
	out := map[tp]error{}
	notIn := kerr.TransactionAbortable
	if version < 5 {
		notIn = kerr.InvalidTxnState
	}
	err := c.with(ctx, id, false, func(m *txnMeta) error {
		v := c.view(m)
		if err := checkProducer(&v, pid, epoch, version, 2); err != nil {
			return err
		}
		if v.state == txnPrepareCommit || v.state == txnPrepareAbort {
			return fmt.Errorf("%w: transaction is in %v", kerr.ConcurrentTransactions, v.state)
		}
		for _, p := range parts {
			if _, ok := v.parts[p]; !ok || v.state != txnOngoing {
				out[p] = fmt.Errorf("%w: %s-%d is not in the transaction", notIn, p.topic, p.partition)
			}
		}
		return nil
	})
	return out, c.unknownAs(err, kerr.InvalidProducerIDMapping)
}

// verifyProduce is KIP-890's check on a transactional produce, which
// Kafka's partition leader makes with the coordinator before the first
// batch of a transaction in a partition: the producer must be the
// transaction's current one and the partition added to its open
// transaction, so a late batch of an ended transaction (or a producer
// that skipped AddPartitionsToTxn) cannot leave a transaction hanging in
// the partition. Every transactional batch is checked here, which ends
// the same way. The coordinator's own view answers when it already shows
// the partition in the open transaction; otherwise (and on a gateway that
// does not coordinate id) the id's partition of __transaction_state is
// read up to date first, since every change is appended there before it
// is answered. Errors are the coordinator's (AddPartitionsToTxn
// VerifyOnly); produceVerifyError turns them into the produce's.
func (c *txnCoordinator) verifyProduce(ctx context.Context, id string, pid int64, epoch int16, p tp) error {
	if err := c.readyErr(); err != nil {
		return err
	}
	if err := c.ensure(ctx); err != nil {
		return err
	}
	look := func() (txnView, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		m := c.mu.txns[id]
		if m == nil {
			return txnView{}, false
		}
		return m.cur, true
	}
	inTxn := func(v txnView) bool {
		_, ok := v.parts[p]
		return ok && v.state == txnOngoing && v.pid == pid && v.epoch == epoch
	}
	if v, ok := look(); ok && inTxn(v) && c.owns(ctx, id) {
		return nil
	}
	if err := c.catchUp(ctx, c.partitionFor(id)); err != nil {
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	v, ok := look()
	if !ok || v.pid < 0 {
		return fmt.Errorf("%w: transactional id %q is not known", kerr.InvalidProducerIDMapping, id)
	}
	if err := checkProducer(&v, pid, epoch, 5, 2); err != nil {
		return err
	}
	if v.state == txnPrepareCommit || v.state == txnPrepareAbort {
		return fmt.Errorf("%w: transaction is in %v", kerr.ConcurrentTransactions, v.state)
	}
	if !inTxn(v) {
		return fmt.Errorf("%w: %s-%d is not in transaction %q (AddPartitionsToTxn first)", kerr.TransactionAbortable, p.topic, p.partition, id)
	}
	return nil
}

// addImplicit is transactions v2's implicit add (KIP-890 part 2): a
// produce v12+ or a TxnOffsetCommit v5+ of id's current producer adds its
// partition to the producer's transaction, opening one if none is open,
// with no AddPartitionsToTxn from the client. Kafka's partition leader
// asks the coordinator; here the gateway serving the request appends an
// add record to id's partition of __transaction_state, which the
// coordinator reads before it decides and again before it marks
// (complete), so the gateway need not be the coordinator. The add is read
// back: if the transaction was prepared meanwhile the add may have come
// too late to be marked, so the request is refused (CONCURRENT_TRANSACTIONS)
// and nothing of it is written; its retry is fenced by the epoch the
// prepare bumped. Errors are as verifyProduce's.
func (c *txnCoordinator) addImplicit(ctx context.Context, id string, pid int64, epoch int16, p tp) error {
	if err := c.readyErr(); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if err := c.ensure(ctx); err != nil {
		return err
	}
	part := c.partitionFor(id)
	check := func() (bool, error) {
		if err := c.catchUp(ctx, part); err != nil {
			return false, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
		}
		c.mu.Lock()
		m := c.mu.txns[id]
		var v txnView
		if m != nil {
			v = c.viewLocked(m)
		}
		c.mu.Unlock()
		if m == nil || v.pid < 0 {
			return false, fmt.Errorf("%w: transactional id %q is not known", kerr.InvalidProducerIDMapping, id)
		}
		if err := checkProducer(&v, pid, epoch, 5, 2); err != nil {
			return false, err
		}
		switch v.state {
		case txnEmpty, txnCompleteCommit, txnCompleteAbort, txnOngoing:
		default:
			return false, fmt.Errorf("%w: transaction is in %v", kerr.ConcurrentTransactions, v.state)
		}
		_, in := v.parts[p]
		return in && v.state == txnOngoing, nil
	}
	in, err := check()
	if err != nil || in {
		return err
	}
	if _, err := c.write(ctx, part, encodeTxnAdd(id, txnAdd{pid: pid, epoch: epoch, p: p, ts: time.Now().UnixMilli()})); err != nil {
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	if in, err = check(); err == nil && !in {
		err = fmt.Errorf("%w: %s-%d was not added to transaction %q", kerr.ConcurrentTransactions, p.topic, p.partition, id)
	}
	return err
}

// produceVerifyError is the produce's answer for a failed verifyProduce,
// as Kafka's partition leader gives it (AddPartitionsToTxnManager and
// ReplicaManager): a fenced producer is INVALID_PRODUCER_EPOCH; a
// partition not in the transaction TRANSACTION_ABORTABLE from produce v11
// (clients that know it) and INVALID_TXN_STATE before; a coordinator that
// cannot answer now NOT_ENOUGH_REPLICAS, which every client retries
// without refreshing its metadata.
func produceVerifyError(err error, version int16) error {
	switch ke := ErrorFor(err); ke {
	case kerr.ProducerFenced:
		return fmt.Errorf("%w: %v", kerr.InvalidProducerEpoch, err)
	case kerr.TransactionAbortable:
		if version <= 10 {
			return fmt.Errorf("%w: Partition was not added to the transaction", kerr.InvalidTxnState)
		}
		return err
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator, kerr.UnknownServerError:
		return fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %s", kerr.NotEnoughReplicas, ke.Message)
	}
	return err
}

// endTxn serves EndTxn: commit or abort id's open transaction. It returns
// the producer id and epoch the producer goes on with: from v5
// (transactions v2, KIP-890 part 2) the epoch is bumped by every EndTxn,
// at the prepare, so the markers fence the transaction's own late
// batches, and a retry of an EndTxn that bumped it (the epoch just below)
// is answered as the first one was; an abort with nothing open bumps it
// too. When the epoch is used up, the transaction ends on it and the
// producer goes on with a new producer id at epoch 0. Before v5 they are
// the request's.
func (c *txnCoordinator) endTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool, version int16) (outPid int64, outEpoch int16, err error) {
	v2 := version >= 5
	outPid, outEpoch = pid, epoch
	err = c.with(ctx, id, false, func(m *txnMeta) error {
		v := c.view(m)
		want := map[bool]txnStatus{true: txnCompleteCommit, false: txnCompleteAbort}[commit]
		prep := map[bool]txnStatus{true: txnPrepareCommit, false: txnPrepareAbort}[commit]
		if v2 && v.pid == pid && epoch >= 0 && epoch == v.epoch-1 && v.state >= txnPrepareCommit && v.state <= txnCompleteAbort {
			// A retry of the EndTxn that bumped the epoch, or the
			// other decision after it.
			if v.state != want && v.state != prep {
				return fmt.Errorf("%w: EndTxn(commit=%v) after the transaction went to %v", kerr.InvalidTxnState, commit, v.state)
			}
			if err := c.complete(ctx, m); err != nil {
				return fmt.Errorf("%w: %v", kerr.ConcurrentTransactions, err)
			}
			outPid, outEpoch = v.pid, v.epoch
			return nil
		}
		if err := checkProducer(&v, pid, epoch, version, 2); err != nil {
			return err
		}
		switch v.state {
		case txnOngoing:
		case prep:
			// A retry while the markers are still being written.
			if err := c.complete(ctx, m); err != nil {
				return fmt.Errorf("%w: %v", kerr.ConcurrentTransactions, err)
			}
			return c.renewExhausted(ctx, m, v2, &outPid, &outEpoch)
		case txnPrepareCommit, txnPrepareAbort:
			return fmt.Errorf("%w: EndTxn(commit=%v) while the transaction is in %v", kerr.InvalidTxnState, commit, v.state)
		case want:
			if !v2 {
				return nil // a retry of an EndTxn that completed
			}
			fallthrough
		default:
			if !commit && v2 && (v.state == txnEmpty || v.state == txnCompleteCommit || v.state == txnCompleteAbort) {
				// Transactions v2: an abort with nothing open (every
				// produce of the transaction failed) still moves the
				// producer to a fresh epoch.
				next := v.clone()
				next.state, next.start = txnCompleteAbort, -1
				clear(next.parts)
				if next.epoch < math.MaxInt16-1 {
					next.epoch++
				}
				if err := c.save(ctx, m, next); err != nil {
					return err
				}
				return c.renewExhausted(ctx, m, v2, &outPid, &outEpoch)
			}
			if !commit && v.state == txnEmpty {
				// Kafka lets a producer abort with nothing open.
				return nil
			}
			return fmt.Errorf("%w: EndTxn(commit=%v) with the transaction in %v", kerr.InvalidTxnState, commit, v.state)
		}
		next := v.clone()
		next.state = prep
		if v2 && next.epoch < math.MaxInt16-1 {
			next.epoch++
		}
		if err := c.save(ctx, m, next); err != nil {
			return err
		}
		outPid, outEpoch = next.pid, next.epoch
		// The decision is durable; the background loop finishes what
		// fails here, and the client learns of it through
		// CONCURRENT_TRANSACTIONS on its next request.
		if err := c.complete(ctx, m); err != nil {
			c.log.Warn("completing a transaction; the background loop will retry", "transactional_id", id, "commit", commit, "err", err)
			return nil
		}
		return c.renewExhausted(ctx, m, v2, &outPid, &outEpoch)
	})
	return outPid, outEpoch, c.unknownAs(err, kerr.InvalidProducerIDMapping)
}

// renewExhausted sets *pid and *epoch to what the producer of m's ended
// transaction goes on with under transactions v2: the state's, after
// moving to a new producer id when the epoch cannot be bumped again.
// Before v2 they are left as they are. m.op is held.
func (c *txnCoordinator) renewExhausted(ctx context.Context, m *txnMeta, v2 bool, pid *int64, epoch *int16) error {
	if !v2 {
		return nil
	}
	v := c.view(m)
	if v.state != txnCompleteCommit && v.state != txnCompleteAbort {
		*pid, *epoch = v.pid, v.epoch
		return nil
	}
	if v.epoch >= math.MaxInt16-1 {
		newPid, err := c.g.pids.next(ctx)
		if err != nil {
			return err
		}
		next := v.clone()
		next.pid, next.epoch = newPid, 0
		if err := c.save(ctx, m, next); err != nil {
			return err
		}
		v = next
	}
	*pid, *epoch = v.pid, v.epoch
	return nil
}

// abortFenced aborts m's open transaction with the producer epoch bumped
// (Kafka's PrepareEpochFence), so the old producer is fenced everywhere.
// m.op is held.
func (c *txnCoordinator) abortFenced(ctx context.Context, m *txnMeta, why string) error {
	v := c.view(m)
	next := v.clone()
	next.state = txnPrepareAbort
	if next.epoch < math.MaxInt16-1 {
		next.epoch++
	}
	if err := c.save(ctx, m, next); err != nil {
		return err
	}
	c.log.Info("aborting a transaction", "transactional_id", m.id, "producer_id", v.pid, "epoch", next.epoch, "why", why)
	return c.complete(ctx, m)
}

// complete finishes a prepared transaction: a marker to every data
// partition, the transaction's offsets to their groups on commit, then
// the Complete state. m.op is held.
func (c *txnCoordinator) complete(ctx context.Context, m *txnMeta) error {
	v := c.view(m)
	commit := v.state == txnPrepareCommit
	if !commit && v.state != txnPrepareAbort {
		return nil
	}
	// Read past the prepare record first: a partition added implicitly
	// by another gateway before it (so possibly after the view the
	// decision was made on) is in the log by now, and is marked with
	// the rest. One added after it was refused, as its gateway saw the
	// transaction prepared when it read its own add back.
	if err := c.catchUp(ctx, c.partitionFor(m.id)); err != nil {
		return err
	}
	c.mu.Lock()
	for _, a := range c.mu.adds[m.id] {
		if a.pid == v.pid && a.epoch <= v.epoch {
			v.parts[a.p] = struct{}{}
		}
	}
	c.mu.Unlock()
	var (
		wg   sync.WaitGroup
		errs = make([]error, 0)
		emu  sync.Mutex
	)
	for p := range v.parts {
		if p.topic == offsetsTopic {
			continue // its offsets are applied below, not marked
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.g.backend.WriteTxnMarker(ctx, ring.TxnMarker{Topic: p.topic, Partition: p.partition,
				ProducerID: v.pid, ProducerEpoch: v.epoch, Commit: commit})
			if errors.Is(err, ring.ErrUnknownPartition) || errors.Is(err, ErrUnknownTopic) {
				err = nil // deleted since: nothing left to mark
			}
			if err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("marker to %s/%d: %w", p.topic, p.partition, err))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.mu.Lock()
	var apply []txnPending
	for _, p := range c.mu.pending[m.id] {
		// The transaction's own epoch, or the one below when its
		// prepare bumped it (transactions v2, and fencing aborts).
		if p.pid == v.pid && p.epoch <= v.epoch && p.epoch >= v.epoch-1 {
			apply = append(apply, p)
		}
	}
	c.mu.Unlock()
	if commit {
		for _, p := range apply {
			if err := c.applyOffsets(ctx, p); err != nil {
				return fmt.Errorf("committing offsets of group %s: %w", p.group, err)
			}
		}
	}
	next := v.clone()
	next.state = map[bool]txnStatus{true: txnCompleteCommit, false: txnCompleteAbort}[commit]
	next.start = -1
	clear(next.parts)
	if err := c.save(ctx, m, next); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.mu.pending, m.id)
	c.mu.adds[m.id] = slices.DeleteFunc(c.mu.adds[m.id], func(a txnAdd) bool { return a.pid == v.pid && a.epoch <= v.epoch })
	if len(c.mu.adds[m.id]) == 0 {
		delete(c.mu.adds, m.id)
	}
	c.mu.Unlock()
	return nil
}

// applyOffsets commits a transaction's offsets to their group: through the
// group's coordinator when it is this gateway, else straight to
// __consumer_offsets.
func (c *txnCoordinator) applyOffsets(ctx context.Context, p txnPending) error {
	gc := c.g.groups
	reply := make(chan error, 1)
	err := gc.call(ctx, p.group, true, func(gr *group) { reply <- gr.commit("", p.offs) })
	if err == nil {
		select {
		case err = <-reply:
		case <-ctx.Done():
			return ctx.Err()
		}
		return err
	}
	if !errors.Is(err, kerr.NotCoordinator) {
		return err
	}
	t, terr := c.g.cluster.Topic(ctx, offsetsTopic)
	if terr != nil {
		return terr
	}
	recs := make([]record, 0, len(p.offs)+1)
	for k, o := range p.offs {
		recs = append(recs, offsetRecord(p.group, k, &o))
	}
	// The group's coordinator skips offset records of a group it holds
	// live; this one tells it to take them (coordinator.catchUp).
	recs = append(recs, txnAppliedRecord(p.group, p.offs))
	part := javaHashPartition(p.group, t.Partitions)
	_, err = c.g.backend.Produce(ctx, &ring.ProduceRequest{Topic: offsetsTopic, Partition: part, Acks: -1,
		Records: appendBatch(nil, time.Now().UnixMilli(), recs)})
	return err
}

// commitOffsets serves TxnOffsetCommit on the group's coordinator: it
// checks the producer and that the group's offsets partition is in the
// open transaction, then appends the offsets to __transaction_state for
// the transaction's coordinator to apply on commit.
func (c *txnCoordinator) commitOffsets(ctx context.Context, id, group string, pid int64, epoch int16, offs map[tp]committed, version int16) error {
	if err := c.readyErr(); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if err := c.ensure(ctx); err != nil {
		return err
	}
	t, err := c.g.cluster.Topic(ctx, offsetsTopic)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", kerr.CoordinatorNotAvailable, offsetsTopic, err)
	}
	part := c.partitionFor(id)
	if err := c.catchUp(ctx, part); err != nil {
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	c.mu.Lock()
	m := c.mu.txns[id]
	var v txnView
	if m != nil {
		v = c.viewLocked(m)
	}
	c.mu.Unlock()
	if m == nil {
		return fmt.Errorf("%w: transactional id %q is not known", kerr.InvalidProducerIDMapping, id)
	}
	if err := checkProducer(&v, pid, epoch, version, 3); err != nil {
		return err
	}
	op := tp{offsetsTopic, javaHashPartition(group, t.Partitions)}
	if version >= 5 {
		// Transactions v2: no AddOffsetsToTxn, the commit adds the
		// group's partition itself.
		if err := c.addImplicit(ctx, id, pid, epoch, op); err != nil {
			return err
		}
		if len(offs) == 0 {
			return nil
		}
		_, err = c.write(ctx, part, encodeTxnOffsets(id, &txnPending{group: group, pid: pid, epoch: epoch, offs: offs}))
		return err
	}
	if _, ok := v.parts[op]; !ok || v.state != txnOngoing {
		return fmt.Errorf("%w: group %s is not in transaction %q (AddOffsetsToTxn first)", kerr.InvalidTxnState, group, id)
	}
	if len(offs) == 0 {
		return nil
	}
	_, err = c.write(ctx, part, encodeTxnOffsets(id, &txnPending{group: group, pid: pid, epoch: epoch, offs: offs}))
	return err
}

// describe returns id's state; ok is false for an id never seen.
func (c *txnCoordinator) describe(ctx context.Context, id string) (v txnView, ok bool, err error) {
	err = c.with(ctx, id, false, func(m *txnMeta) error {
		v = c.view(m)
		return nil
	})
	if errors.Is(err, errTxnUnknown) {
		return v, false, nil
	}
	if err == nil && v.pid < 0 {
		return v, false, nil
	}
	return v, err == nil, err
}

// txnSummary is what ListTransactions shows of a transactional id.
type txnSummary struct {
	id    string
	pid   int64
	state txnStatus
	start int64
}

// list summarizes the transactional ids this gateway coordinates.
func (c *txnCoordinator) list(ctx context.Context) ([]txnSummary, error) {
	if err := c.readyErr(); err != nil {
		return nil, err
	}
	if !c.inited.Load() {
		return nil, nil // no transactional id was ever used
	}
	for p := int32(0); p < c.parts; p++ {
		if err := c.catchUp(ctx, p); err != nil {
			return nil, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
		}
	}
	brokers := c.g.brokers(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]txnSummary, 0, len(c.mu.txns))
	for id, m := range c.mu.txns {
		if m.cur.pid < 0 || coordinatorFor(id, brokers).NodeID != c.g.opts.NodeID {
			continue
		}
		v := c.viewLocked(m)
		out = append(out, txnSummary{id: id, pid: v.pid, state: v.state, start: v.start})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// tick completes the prepared transactions and aborts the timed-out ones
// of the ids this gateway coordinates.
func (c *txnCoordinator) tick(ctx context.Context, now time.Time) {
	if !c.inited.Load() {
		return
	}
	// Transactions opened by implicit adds (addImplicit) on other
	// gateways time out too, so their records are read here.
	for p := int32(0); p < c.parts; p++ {
		if err := c.catchUp(ctx, p); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("catching up on transaction state", "partition", p, "err", err)
			}
			return
		}
	}
	brokers := c.g.brokers(ctx)
	c.mu.Lock()
	var todo []*txnMeta
	for id, m := range c.mu.txns {
		view := c.viewLocked(m)
		v := &view
		due := v.state == txnPrepareCommit || v.state == txnPrepareAbort ||
			v.state == txnOngoing && v.start >= 0 && now.UnixMilli()-v.start > v.timeout.Milliseconds() ||
			expired(v, now, c.g.opts.TransactionalIDExpiration)
		if due && coordinatorFor(id, brokers).NodeID == c.g.opts.NodeID {
			todo = append(todo, m)
		}
	}
	c.mu.Unlock()
	for _, m := range todo {
		if !m.op.TryLock() {
			continue // a request is at it; look again next tick
		}
		v := c.view(m)
		var err error
		switch {
		case v.state == txnPrepareCommit || v.state == txnPrepareAbort:
			err = c.complete(ctx, m)
		case v.state == txnOngoing && now.UnixMilli()-v.start > v.timeout.Milliseconds():
			err = c.abortFenced(ctx, m, "transaction.timeout.ms passed")
		case expired(&v, now, c.g.opts.TransactionalIDExpiration):
			err = c.expire(ctx, m)
		}
		m.op.Unlock()
		if err != nil && ctx.Err() == nil {
			c.log.Warn("finishing a transaction, will retry", "transactional_id", m.id, "state", v.state, "err", err)
		}
	}
}

// expired reports whether an id in state v is due for expiry at now, once
// at rest for after.
func expired(v *txnView, now time.Time, after time.Duration) bool {
	switch v.state {
	case txnEmpty, txnCompleteCommit, txnCompleteAbort:
		return v.pid >= 0 && now.UnixMilli()-v.updated >= after.Milliseconds()
	}
	return false
}

// expire removes m's id: a tombstone in __transaction_state, then the id
// leaves the coordinator's map, so the next request for it finds nothing
// (with starts over when it was waiting for m). m.op is held.
func (c *txnCoordinator) expire(ctx context.Context, m *txnMeta) error {
	k := kmsg.NewTxnMetadataKey()
	k.TransactionalID = m.id
	off, err := c.write(ctx, c.partitionFor(m.id), record{key: k.AppendTo(nil)})
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.mu.txns[m.id] == m {
		delete(c.mu.txns, m.id)
		delete(c.mu.pending, m.id)
		delete(c.mu.adds, m.id)
	}
	m.cur, m.at = txnView{pid: -1, epoch: -1, start: -1, state: txnDead, parts: map[tp]struct{}{}}, off
	c.mu.Unlock()
	c.log.Info("transactional id expired", "transactional_id", m.id, "idle_for", c.g.opts.TransactionalIDExpiration)
	return nil
}

// txnAppliedKey marks a record in __consumer_offsets that repeats the
// offsets a transaction's coordinator committed for a group coordinated
// by another gateway. The ordinary offset records beside it serve a
// dormant group; this one reaches the group's coordinator while it holds
// the group live, which otherwise never rereads its offsets.
const txnAppliedKey int16 = 0x7AE4

// txnAppliedOffset is one partition's offset in a txnAppliedKey record.
type txnAppliedOffset struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	LeaderEpoch int32  `json:"leader_epoch"`
	Metadata    string `json:"metadata"`
	CommitTs    int64  `json:"commit_ts"`
}

func txnAppliedRecord(group string, offs map[tp]committed) record {
	list := make([]txnAppliedOffset, 0, len(offs))
	for k, o := range offs {
		list = append(list, txnAppliedOffset{k.topic, k.partition, o.offset, o.leaderEpoch, o.metadata, o.commitTs})
	}
	return record{key: kbinKey(txnAppliedKey, group), value: mustJSON(list)}
}

// readTxnApplied decodes a txnAppliedKey record.
func readTxnApplied(r record) (string, map[tp]committed, error) {
	_, group, ok := readKbinKey(r.key)
	if !ok {
		return "", nil, errors.New("a malformed transactional offsets key")
	}
	var list []txnAppliedOffset
	if err := json.Unmarshal(r.value, &list); err != nil {
		return "", nil, fmt.Errorf("transactional offsets of group %q: %w", group, err)
	}
	offs := make(map[tp]committed, len(list))
	for _, o := range list {
		offs[tp{o.Topic, o.Partition}] = committed{offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata, commitTs: o.CommitTs}
	}
	return group, offs, nil
}
