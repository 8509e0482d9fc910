package logstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/internal/ratelog"
	"golang.org/x/sys/unix"
)

type reqKind uint8

const (
	reqProduce reqKind = iota
	reqFetch
	reqListOffsets
	reqCreate
	reqDelete
	reqDescribe
	reqList
	reqDeleteRecords
	reqLoad
	reqAppendReplica
	reqTestHook // runs hook on the shard goroutine (admin operations and tests)
)

type partKey struct {
	topic string
	id    int32
}

// request is the one message type a shard goroutine receives. Requests on
// the hot path (produce, fetch) come from a pool and carry a reusable done
// channel, so a round trip to the shard allocates nothing.
type request struct {
	kind      reqKind
	topic     string
	partition int32

	// produce
	acks       Acks
	records    []byte
	marker     bool  // records is a transaction marker (txn.go)
	nullKeys   int32 // records with a null key, refused by a compacted partition
	produced   ProduceResult
	endOffset  int64 // offset after the last appended record
	appendedAt time.Time

	// fetch
	now      time.Time // when the fetch began: follower catch-up times and the lease
	fetch    *FetchRequest
	fetchIdx []int
	fetchRes *FetchResult
	colds    []coldRead
	waits    []chan struct{}
	wantWait bool
	shardID  int

	// admin
	ts      int64
	cfg     PartitionConfig
	offsets OffsetResult
	info    PartitionInfo
	infos   []PartitionInfo
	metas   []catalog.Partition
	ctx     context.Context // reqLoad: recovery stops when it ends

	hook func(*shard)

	err  error
	done chan struct{}
}

// coldRead is a fetch that the shard resolved to the cold tier; the read
// itself happens outside the shard goroutine.
type coldRead struct {
	idx    int
	seg    catalog.Segment
	offset int64
	max    int
	end    int64 // no batch from here on is returned: the high watermark, or the LSO under read_committed
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func getRequest(kind reqKind) *request {
	r := requestPool.Get().(*request)
	r.kind = kind
	return r
}

func putRequest(r *request) {
	done := r.done
	fetchIdx, waits, colds := r.fetchIdx[:0], r.waits[:0], r.colds[:0]
	*r = request{done: done, fetchIdx: fetchIdx, waits: waits, colds: colds}
	requestPool.Put(r)
}

func (r *request) finish(err error) {
	r.err = err
	r.done <- struct{}{}
}

// ShardFor maps a partition to a shard with a stable hash (FNV-1a over the
// topic name and the partition number), so every gateway and every restart
// agrees on the owner.
func ShardFor(topic string, partition int32, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(topic); i++ {
		h ^= uint32(topic[i])
		h *= 16777619
	}
	for i := 0; i < 4; i++ {
		h ^= uint32(byte(partition >> (8 * i)))
		h *= 16777619
	}
	return int(h % uint32(shards))
}

// syncItem asks the flusher to make one segment durable up to size.
type syncItem struct {
	p    *partition
	seg  *segment
	ref  *fileRef
	size int64
	next int64
	gen  uint32 // p.truncGen when the sync was asked for
	err  error  // the fdatasync's failure
}

type syncBatch struct{ items []syncItem }

// shard owns a set of partitions. Its goroutine is the only one touching
// partition state, so the produce and fetch paths take no lock.
type shard struct {
	id    int
	opts  *Options
	reqs  chan *request
	parts map[partKey]*partition

	syncReq  chan *syncBatch
	syncDone chan *syncBatch
	spare    *syncBatch // the batch not in flight
	inFlight bool
	dirty    []*partition

	// wb feeds the writeback goroutine. sync_file_range and
	// fadvise(DONTNEED) of an 8 MiB window cost ~1.5 ms of kernel time
	// (pprof at 50k msg/s), a stall every produce queued behind them on
	// this shard would otherwise wait out.
	wb     chan wbJob    // wbQueueDepth jobs: past that, queueWriteback runs them inline
	wbDone chan struct{} // closed when the writeback goroutine has exited

	// chores feeds the chore goroutine: the slow filesystem and catalog
	// work of rolls and evictions (index truncation, catalog syncs,
	// producer snapshots, unlinking evicted files), in order. Measured at
	// 3 ms per roll and 1-2 ms per eviction tick on the shard goroutine,
	// where every produce queued behind it waited it out.
	chores chan func()

	scratch [BatchHeaderSize]byte
	wg      sync.WaitGroup

	lastAppendLog int64 // unix nanoseconds; see logAppendError

	createAcks []*request // creates done, waiting for ackCreates

	files   *logFiles        // the shard's open log files
	budget  *budget          // the store's, shared by its shards
	lease   *lease           // the store's lease on leadership (nil in tests that make shards alone)
	limiter *ratelog.Limiter // for lines a failing disk would repeat per request

	tail cacheTail // writeback's drops, delayed (writeback.go)

	// High-watermark checkpoints (hwcheckpoint.go), cluster stores only:
	// what recovery read, and what this shard wrote last.
	hwLoaded         map[partKey]int64
	lastHWCheckpoint []byte

	// storageFailed is the store's (Store.StorageFailure).
	storageFailed *atomic.Pointer[error]
}

// logLimited logs an error at most once a second per key (see ratelog.Limiter).
func (s *shard) logLimited(key, msg string, args ...any) {
	s.limiter.Log(s.opts.Logger, slog.LevelError, key, msg, args...)
}

func newShard(id int, opts *Options) *shard {
	var own atomic.Pointer[error]
	return &shard{
		id: id, opts: opts, storageFailed: &own,
		reqs:     make(chan *request, 1024),
		parts:    map[partKey]*partition{},
		syncReq:  make(chan *syncBatch, 1),
		syncDone: make(chan *syncBatch, 1),
		spare:    &syncBatch{},
		wb:       make(chan wbJob, wbQueueDepth),
		wbDone:   make(chan struct{}),
		chores:   make(chan func(), 1024),
		files:    newLogFiles(max(1, opts.MaxOpenLogs/max(1, opts.Shards))),
		limiter:  ratelog.New(time.Second),
		tail:     cacheTail{budget: max(0, opts.CacheTailBytes/int64(max(1, opts.Shards)))},
	}
}

func (s *shard) start(ctx context.Context) {
	s.wg.Add(4)
	go s.choreLoop()
	go s.flusher()
	go s.writeback()
	go s.run(ctx)
}

func (s *shard) pin() {
	if !s.opts.PinCPUs {
		return
	}
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(s.id % runtime.NumCPU())
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		s.opts.Logger.Warn("cpu pinning failed", "shard", s.id, "err", err)
	}
}

// flusher performs fsyncs off the shard goroutine, so appends continue
// while a sync runs; everything appended meanwhile rides the next sync.
func (s *shard) flusher() {
	defer s.wg.Done()
	for b := range s.syncReq {
		var last *fileRef
		var lastErr error
		for i := range b.items {
			it := &b.items[i]
			if it.ref != last {
				lastErr = nil
				if err := unix.Fdatasync(int(it.ref.f.Fd())); err != nil {
					lastErr = fmt.Errorf("fdatasync %s: %w", it.seg.logPath, err)
				}
				last = it.ref
			}
			it.err = lastErr
		}
		s.syncDone <- b
	}
}

// choreLoop runs the chores handed over by later, one at a time, in order.
func (s *shard) choreLoop() {
	defer s.wg.Done()
	for fn := range s.chores {
		if fn == nil {
			return // shutdown's sentinel; see Store.Settle for why not close
		}
		fn()
	}
}

// later runs fn on the chore goroutine, after every chore handed over
// before it. fn must not touch partition state: it gets what it needs as
// values. When the goroutine is 1024 chores behind, later waits, which is
// the backpressure.
func (s *shard) later(fn func()) { s.chores <- fn }

// drainChores waits until every chore handed over so far has run, before a
// step that chores must not outlive (deleting a partition's directory,
// which a new partition of the same name may take over).
func (s *shard) drainChores() { _ = s.settle(context.Background(), nil) }

// settle waits until every chore handed over before the call has run, or
// ctx ends, or closed is closed (nil: never).
func (s *shard) settle(ctx context.Context, closed <-chan struct{}) error {
	done := make(chan struct{})
	select {
	case s.chores <- func() { close(done) }:
	case <-closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeback makes the writeback syscalls off the shard goroutine.
func (s *shard) writeback() {
	defer s.wg.Done()
	defer close(s.wbDone)
	for j := range s.wb {
		if j.barrier != nil {
			close(j.barrier)
			continue
		}
		if err := j.run(); err != nil {
			s.failStorage(j.p, err)
		}
		j.ref.release()
	}
}

// failStorage takes p offline for produce after a write of its log did
// not reach the disk (see partition.failed). Any of the shard's goroutines
// may call it; the first failure is kept and logged.
func (s *shard) failStorage(p *partition, err error) {
	e := fmt.Errorf("%w: %s/%d refuses produce until a restart: %w", ErrStorage, p.topic, p.id, err)
	s.storageFailed.CompareAndSwap(nil, &e)
	if p.failed.CompareAndSwap(nil, &e) {
		s.logLimited("storage-failed", "a write to the log did not reach the disk; the partition refuses produce until a restart",
			"topic", p.topic, "partition", p.id, "err", err)
	}
}

// paceWriteback hands the segment's next writeback step to the writeback
// goroutine. When that goroutine is behind, the step runs here, which is
// the backpressure.
func (s *shard) paceWriteback(p *partition, seg *segment) {
	if j, ok := p.writebackStep(seg, s.opts.WritebackBytes, time.Now().UnixNano()); ok {
		drops := s.tail.admit(p, seg, &j)
		s.queueWriteback(p, seg, j)
		for _, d := range drops {
			s.dropTail(d)
		}
	}
}

// wbQueueDepth is how many writeback jobs may wait for the goroutine. A
// write failure shows when its job runs, so this many windows is also how
// far produce may run past a failed write before it is refused.
const wbQueueDepth = 64

// dropTail hands a range leaving the cache tail to the writeback goroutine,
// behind the job that waited for its writeback. It never runs the drop
// here: run inline it could overtake that job, and a drop is only a hint,
// so when the goroutine is behind, or the log is closed (evicted from the
// file cache, or removed), the kernel reclaims those pages instead.
func (s *shard) dropTail(d tailRange) {
	seg := d.seg
	seg.dropPos = max(seg.dropPos, d.from+d.size)
	ref := seg.ref
	if ref == nil {
		return
	}
	ref.acquire() // released by the writeback goroutine
	select {
	case s.wb <- wbJob{p: d.p, ref: ref, dropFrom: d.from, dropLen: d.size}:
	default:
		ref.release()
	}
}

// queueWriteback hands j to the writeback goroutine, or runs it here when
// that goroutine is behind.
func (s *shard) queueWriteback(p *partition, seg *segment, j wbJob) {
	ref, err := seg.file()
	if err != nil {
		// The pages stay dirty; the kernel writes them back itself, and
		// an error there reaches the next fdatasync.
		s.logLimited("writeback-open", "opening a log for writeback", "segment", seg.logPath, "err", err)
		return
	}
	if ref.wb == nil {
		f, err := os.Open(seg.logPath)
		if err != nil {
			// Writeback shares the log's descriptor, and may then hide
			// an error from the next fdatasync (see fileRef.wb).
			s.logLimited("writeback-open", "opening a log for writeback", "segment", seg.logPath, "err", err)
			f = nil
		}
		ref.wb = f
		if f != nil && seg.files != nil {
			seg.files.grew(seg)
		}
	}
	j.ref = ref
	ref.acquire() // released by the writeback goroutine, after the syscalls
	select {
	case s.wb <- j:
	default:
		if err := j.run(); err != nil {
			s.failStorage(p, err)
		}
		ref.release()
	}
}

func (s *shard) run(ctx context.Context) {
	defer s.wg.Done()
	s.pin()
	retention := time.NewTicker(s.opts.RetentionCheckInterval)
	defer retention.Stop()
	var flushTick <-chan time.Time
	if s.opts.Flush == FlushInterval {
		t := time.NewTicker(s.opts.FlushInterval)
		defer t.Stop()
		flushTick = t.C
	}
	var hwTick <-chan time.Time
	if s.opts.RequireRole {
		t := time.NewTicker(hwCheckpointInterval)
		defer t.Stop()
		hwTick = t.C
	}
	for {
		select {
		case r := <-s.reqs:
			s.handle(r)
			// Drain what else is queued before syncing: that is the group
			// in group commit.
			for i := 0; i < 256; i++ {
				select {
				case r := <-s.reqs:
					s.handle(r)
					continue
				default:
				}
				break
			}
			s.ackCreates()
			if s.opts.Flush == FlushAlways {
				s.startSync()
			}
		case b := <-s.syncDone:
			s.completeSync(b)
			if s.opts.Flush == FlushAlways {
				s.startSync()
			}
		case <-flushTick:
			s.startSync()
		case <-hwTick:
			s.checkpointHW()
		case now := <-retention.C:
			s.retention(now)
		case <-ctx.Done():
			s.shutdown()
			return
		}
	}
}

// ackCreates makes the creates handled since the last call durable with
// one catalog sync and answers them: a sync per create made creating
// thousands of partitions wait on thousands of syncs.
func (s *shard) ackCreates() {
	if len(s.createAcks) == 0 {
		return
	}
	err := s.opts.Catalog.Sync()
	if err != nil {
		err = fmt.Errorf("%w: making partition creates durable: %w", ErrStorage, err)
	}
	for i, r := range s.createAcks {
		r.finish(err)
		s.createAcks[i] = nil
	}
	s.createAcks = s.createAcks[:0]
}

func (s *shard) markDirty(p *partition) {
	if !p.dirty {
		p.dirty = true
		s.dirty = append(s.dirty, p)
	}
}

func (s *shard) startSync() {
	if s.inFlight || len(s.dirty) == 0 {
		return
	}
	b := s.spare
	s.spare = nil
	b.items = b.items[:0]
	var retry []*partition
	for i, p := range s.dirty {
		s.dirty[i] = nil
		p.dirty = false
		if p.deleted {
			continue
		}
		seg := p.active()
		ref, err := seg.file()
		if err != nil {
			// Descriptors run short; the next sync tries again.
			s.logLimited("sync-open", "opening a log to sync it", "segment", seg.logPath, "err", err)
			retry = append(retry, p)
			continue
		}
		ref.acquire()
		b.items = append(b.items, syncItem{p: p, seg: seg, ref: ref, size: seg.size, next: seg.next, gen: p.truncGen})
	}
	s.dirty = s.dirty[:0]
	for _, p := range retry {
		s.markDirty(p)
	}
	s.inFlight = true
	s.syncReq <- b
}

func (s *shard) completeSync(b *syncBatch) {
	s.inFlight = false
	for i := range b.items {
		it := &b.items[i]
		it.ref.release()
		if it.p.deleted {
			continue
		}
		if it.err != nil {
			s.failStorage(it.p, it.err)
		}
		if f := it.p.failed.Load(); f != nil {
			// Not retried: the next fdatasync would succeed with the
			// bytes lost (see partition.failed). What waits for a sync
			// fails; the high watermark stays where it is.
			for _, w := range it.p.waitAcks {
				w.finish(*f)
			}
			it.p.waitAcks = nil
			*it = syncItem{}
			continue
		}
		if it.gen == it.p.truncGen {
			// After a truncation the segment may be shorter than what
			// this sync covered; the truncation made the rest durable.
			if it.size > it.seg.durable {
				it.seg.durable = it.size
			}
			it.p.advanceDurable(it.next)
		}
		s.ackDurable(it.p)
		*it = syncItem{}
	}
	s.spare = b
}

// ackDurable finishes produce requests that were waiting for the high
// watermark (acks=all) or the durable end (acks=0/1) to pass them.
func (s *shard) ackDurable(p *partition) {
	n := 0
	for _, r := range p.waitAcks {
		if p.acked(r) {
			r.finish(p.afterAppendErr(r))
			continue
		}
		p.waitAcks[n] = r
		n++
	}
	for i := n; i < len(p.waitAcks); i++ {
		p.waitAcks[i] = nil
	}
	p.waitAcks = p.waitAcks[:n]
}

func (s *shard) handle(r *request) {
	switch r.kind {
	case reqProduce:
		s.produce(r)
	case reqFetch:
		s.fetch(r)
		r.finish(nil)
	case reqListOffsets:
		r.finish(s.listOffsets(r))
	case reqCreate:
		if err := s.create(r); err != nil {
			r.finish(err)
		} else {
			s.createAcks = append(s.createAcks, r)
		}
	case reqDelete:
		r.finish(s.deletePartition(r))
	case reqDescribe:
		p, err := s.lookup(r.topic, r.partition)
		if err == nil {
			r.info = p.describe()
		}
		r.finish(err)
	case reqList:
		for _, p := range s.parts {
			r.infos = append(r.infos, p.describe())
		}
		r.finish(nil)
	case reqDeleteRecords:
		r.finish(s.deleteRecords(r))
	case reqLoad:
		r.finish(s.load(r.ctx, r.metas))
	case reqAppendReplica:
		s.appendReplica(r)
	case reqTestHook:
		r.hook(s)
		r.finish(nil)
	default:
		r.finish(fmt.Errorf("%w: unknown request kind %d", ErrInvalidRequest, r.kind))
	}
}

func (s *shard) lookup(topic string, id int32) (*partition, error) {
	p := s.parts[partKey{topic, id}]
	if p == nil {
		return nil, fmt.Errorf("%w: %s/%d", ErrUnknownPartition, topic, id)
	}
	return p, nil
}

func (p *partition) describe() PartitionInfo {
	return PartitionInfo{Topic: p.topic, Partition: p.id, LogStartOffset: p.logStart, HighWatermark: p.hw,
		LogEndOffset: p.leo(), Size: p.size(), Segments: len(p.segs), Config: p.cfg}
}

// load recovers the shard's partitions, then syncs the catalog once for
// all the records recovery rewrote, before tierd hears of any segment.
func (s *shard) load(ctx context.Context, metas []catalog.Partition) error {
	loaded := make([]*partition, 0, len(metas))
	for _, m := range metas {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("recovery stopped after %d of %d partitions: %w", len(loaded), len(metas), err)
		}
		p, err := loadPartition(s, m)
		if err != nil {
			return err
		}
		s.parts[partKey{p.topic, p.id}] = p
		s.budget.partitions.Add(1)
		loaded = append(loaded, p)
	}
	if err := s.opts.Catalog.Sync(); err != nil {
		return fmt.Errorf("sync the catalog after recovery: %w", err)
	}
	for _, p := range loaded {
		s.sendLoadNotes(p)
	}
	return nil
}

func (s *shard) create(r *request) error {
	if _, ok := s.parts[partKey{r.topic, r.partition}]; ok {
		return fmt.Errorf("%w: %s/%d", ErrPartitionExists, r.topic, r.partition)
	}
	p, err := createPartition(s, r.topic, r.partition, r.cfg)
	if err != nil {
		return err
	}
	s.parts[partKey{p.topic, p.id}] = p
	s.budget.partitions.Add(1)
	return nil
}

// deletePartition removes the catalog records first, then the files: a crash
// in between leaves an orphan directory, which Open removes.
func (s *shard) deletePartition(r *request) error {
	p, err := s.lookup(r.topic, r.partition)
	if err != nil {
		return err
	}
	// Remote copies go with the topic: tierd deletes the objects; their
	// records vanish with the partition's below, so RemoteDeleted finds
	// nothing left to do. A follower's pointers name its leader's objects,
	// which a follower replica removed by a reassignment must leave alone;
	// the leader deletes them with the topic.
	if p.rep == nil || p.rep.role != RoleFollower {
		for _, seg := range p.segs {
			if seg.cloud.ObjectKey != "" {
				s.deleteRemote(p.record(seg, catalog.StateDeleting))
			}
		}
		for _, r := range p.remote {
			s.deleteRemote(r)
		}
	}
	if err := s.opts.Catalog.DeletePartition(p.topic, p.id); err != nil {
		return err
	}
	delete(s.parts, partKey{p.topic, p.id})
	s.budget.partitions.Add(-1)
	p.deleted = true
	s.drainChores()
	for _, w := range p.waitAcks {
		w.finish(fmt.Errorf("%w: %s/%d deleted while waiting for flush", ErrUnknownPartition, p.topic, p.id))
	}
	p.waitAcks = nil
	p.close()
	return removeAll(p.dir)
}

func (s *shard) produce(r *request) {
	p, err := s.lookup(r.topic, r.partition)
	if err != nil {
		r.finish(err)
		return
	}
	if len(r.records) > int(p.cfg.MaxMessageBytes) {
		r.finish(fmt.Errorf("%w: %d bytes, limit %d", ErrMessageTooLarge, len(r.records), p.cfg.MaxMessageBytes))
		return
	}
	if r.nullKeys > 0 && p.cfg.compacts() {
		r.finish(fmt.Errorf("%w: %d of the batch's records in %s-%d", ErrCompactedNoKey, r.nullKeys, p.topic, p.id))
		return
	}
	if f := p.failed.Load(); f != nil {
		r.finish(*f)
		return
	}
	if p.rep != nil || s.opts.RequireRole {
		if err := s.checkProduce(p, r); err != nil {
			r.finish(err)
			return
		}
	}
	seg := p.active()
	if seg.size > 0 && (seg.size+int64(len(r.records)) > p.cfg.SegmentBytes ||
		r.appendedAt.Sub(seg.created) >= p.cfg.SegmentMs || seg.indexFull() ||
		seg.next-seg.base > math.MaxUint32/2) {
		if err := p.roll(s, seg.next); err != nil {
			if !errors.Is(err, ErrStorage) {
				// A file the new segment needs could not be made (a full
				// disk, most often): the client's KAFKA_STORAGE_ERROR.
				err = fmt.Errorf("%w: %w", ErrStorage, err)
			}
			r.finish(fmt.Errorf("roll %s/%d: %w", p.topic, p.id, err))
			return
		}
		seg = p.active()
	}
	next := seg.next
	idem := BatchHeader{ProducerID: -1}
	if h, _ := ParseBatchHeader(r.records); h.ProducerID >= 0 || h.IsControl() || r.marker {
		if int(h.Length) != len(r.records) {
			r.finish(fmt.Errorf("%w: an idempotent produce must carry exactly one batch", ErrCorruptBatch))
			return
		}
		if skip, err := p.checkProduceTxn(&h, r.marker); err != nil || skip {
			r.produced = ProduceResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: p.logStart}
			r.finish(err)
			return
		}
		dup, err := p.checkProducer(&h)
		if err != nil {
			r.finish(err)
			return
		}
		if dup != nil {
			// A retry of a batch already in the log: acknowledge it with
			// its original offset and write nothing.
			r.produced = ProduceResult{BaseOffset: dup.baseOffset, LogAppendTime: -1, LogStartOffset: p.logStart}
			r.endOffset = dup.lastOffset + 1
			if p.acked(r) {
				r.finish(p.afterAppendErr(r))
			} else {
				p.waitAcks = append(p.waitAcks, r)
			}
			return
		}
		idem = h
	}
	r.produced.BaseOffset = next
	epoch := p.stampEpoch()
	for off := 0; off < len(r.records); {
		b := r.records[off:]
		h, _ := ParseBatchHeader(b) // validated by the caller
		setBaseOffset(b, next, epoch)
		next += int64(h.LastOffsetDelta) + 1
		off += int(h.Length)
	}
	if err := seg.appendBatches(r.records, s.opts.IndexIntervalBytes); err != nil {
		// A failed write may have left a partial batch; truncating to the
		// last good size keeps the log valid for the next append.
		// appendBatches changes the segment's state only after a whole
		// write, so nothing else needs undoing.
		if ref, ferr := seg.file(); ferr == nil {
			_ = ref.f.Truncate(seg.size)
		}
		s.logAppendError(p, err)
		r.finish(err)
		return
	}
	if idem.ProducerID >= 0 {
		idem.BaseOffset = r.produced.BaseOffset
		p.noteAppendTxn(&idem, r.records, r.appendedAt.UnixMilli())
	}
	s.paceWriteback(p, seg)
	p.appended()
	r.produced.LogStartOffset = p.logStart
	r.produced.LogAppendTime = -1
	r.endOffset = next
	s.ackAppend(p, seg, r)
}

// ackAppend answers an append under the flush policy, or parks it until
// the durable end (acks=0/1) or the high watermark (acks=all) passes it.
func (s *shard) ackAppend(p *partition, seg *segment, r *request) {
	switch {
	case s.opts.Flush == FlushNone:
		seg.durable = seg.size
		p.advanceDurable(r.endOffset)
		s.ackDurable(p) // a leader's high watermark may have waited on this one
	case s.opts.Flush == FlushInterval && r.acks != -1:
		s.markDirty(p)
		r.finish(nil)
		return
	default:
		s.markDirty(p)
	}
	if p.acked(r) {
		r.finish(p.afterAppendErr(r))
		return
	}
	p.waitAcks = append(p.waitAcks, r)
}

// logAppendError logs a failed append, at most once a second per shard: a
// full disk fails every produce until space comes back, and the operator
// needs to hear of it without a line per request.
func (s *shard) logAppendError(p *partition, err error) {
	now := time.Now().UnixNano()
	if now-s.lastAppendLog < int64(time.Second) {
		return
	}
	s.lastAppendLog = now
	s.opts.Logger.Error("append failed; the produce is refused and the log keeps what it had",
		"topic", p.topic, "partition", p.id, "err", err)
}

func (s *shard) fetch(r *request) {
	got := 0 // bytes read here, for MinBytes
	for _, i := range r.fetchIdx {
		fp := &r.fetch.Partitions[i]
		res := &r.fetchRes.Partitions[i]
		res.Topic, res.Partition = fp.Topic, fp.Partition
		p, err := s.lookup(fp.Topic, fp.Partition)
		if err != nil {
			res.Err = err
			continue
		}
		if p.rep != nil || fp.FollowerID > 0 || s.opts.RequireRole {
			if err := s.checkFetch(p, fp, r.now); err != nil {
				res.Err = err
				continue
			}
		}
		res.HighWatermark, res.LogStartOffset, res.LastStableOffset = p.hw, p.logStart, p.lso()
		max := int(fp.MaxBytes)
		if r.fetch.MaxBytes > 0 && (max <= 0 || int(r.fetch.MaxBytes) < max) {
			max = int(r.fetch.MaxBytes)
		}
		if max <= 0 {
			max = 1 << 20
		}
		s.readPartition(r, p, i, fp.Offset, max, fp.FollowerID > 0)
		if r.fetch.IsolationLevel == ReadCommitted && fp.FollowerID <= 0 && res.Err == nil {
			p.readCommitted(r, fp, res)
		}
		got += res.Records.Size()
	}
	// Data short of MinBytes: the long poll must also wake when the
	// partitions that had some grow, not only those read to their end, or
	// a fetch with a little data would answer at once instead of waiting
	// for more. Only then, so a fetch that is served at once registers
	// nothing.
	if r.wantWait && got > 0 && got < int(r.fetch.MinBytes) {
		for _, i := range r.fetchIdx {
			res := &r.fetchRes.Partitions[i]
			if res.Err != nil || res.Records.Size() == 0 {
				continue
			}
			if p, err := s.lookup(res.Topic, res.Partition); err == nil {
				r.waits = append(r.waits, p.waitChanFor(r.fetch.Partitions[i].FollowerID > 0))
			}
		}
	}
}

// readPartition reads from offset: a consumer up to the high watermark, a
// follower (store replication) up to the log end.
func (s *shard) readPartition(r *request, p *partition, i int, offset int64, max int, follower bool) {
	res := &r.fetchRes.Partitions[i]
	end := p.hw
	if follower {
		end = p.leo()
	}
	if offset > end && p.rep != nil && offset <= p.leo() {
		// A consumer that read to an old leader's high watermark, which
		// this new leader has not reached yet: Kafka answers empty, not
		// out of range, which would have the client reset its offset.
		end = offset
	}
	if offset < p.logStart || offset > end {
		res.Err = fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, p.logStart, end)
		return
	}
	if offset == end {
		if r.wantWait {
			r.waits = append(r.waits, p.waitChanFor(follower))
		}
		return
	}
	seg := p.segmentFor(offset)
	if seg == nil {
		// The remote segment holding offset or, when offset falls in a
		// hole (a restore from a bucket that lacked a segment whose upload
		// never finished), the first one after it: like Kafka after
		// compaction, a fetch gets the next batches there are.
		// A read_committed consumer stops at the LSO here as on a hot
		// segment: a transaction can stay open while the segments holding
		// its first batches are sealed and tiered.
		if !follower && r.fetch.IsolationLevel == ReadCommitted {
			end = min(end, p.lso())
		}
		for _, rs := range p.remote {
			if offset < rs.EndOffset {
				from := offset
				if from < rs.BaseOffset {
					from = rs.BaseOffset
				}
				if from >= end {
					return // nothing stable to read yet
				}
				r.colds = append(r.colds, coldRead{idx: i, seg: rs, offset: from, max: max, end: end})
				return
			}
		}
		if len(p.segs) == 0 {
			res.Err = fmt.Errorf("%w: %s/%d offset %d", ErrNotLocal, p.topic, p.id, offset)
			return
		}
		seg, offset = p.segs[0], p.segs[0].base
	}
	for {
		limit := seg.durable
		switch {
		case follower:
			limit = seg.size
		case p.hw < p.durableEnd:
			l, err := p.hwLimit(seg, s.scratch[:])
			if err != nil {
				res.Err = err
				return
			}
			limit = l
		}
		if !follower && r.fetch.IsolationLevel == ReadCommitted {
			l, err := p.lsoLimit(seg, limit, s.scratch[:])
			if err != nil {
				res.Err = err
				return
			}
			limit = l
		}
		pos, err := seg.findPosition(offset, limit, s.scratch[:])
		if err != nil {
			res.Err = err
			return
		}
		if pos < limit {
			n := limit - pos
			if n > int64(max) {
				// Whole batches only: a consumer drops a partial batch at
				// the end and fetches it again, so with producer batches
				// near max.partition.fetch.bytes (1 MiB batches at full
				// load) up to half of every response was read for nothing,
				// and a consumer that fell behind stayed behind. Kafka
				// cuts there; the protocol allows either.
				end, err := seg.wholeBatchesEnd(pos, pos+int64(max), s.scratch[:])
				if err != nil {
					res.Err = err
					return
				}
				n = end - pos
				if n == 0 {
					// At least one whole batch, as KIP-74 requires, so a
					// batch larger than max.bytes never stalls a consumer.
					h, err := seg.readHeader(pos, s.scratch[:])
					if err != nil {
						res.Err = err
						return
					}
					n = int64(h.Length)
				}
			}
			ref, err := seg.file()
			if err != nil {
				res.Err = fmt.Errorf("%w: %w", ErrStorage, err)
				return
			}
			ref.acquire()
			res.Records = Records{File: ref.f, Pos: pos, Len: int(n), ref: ref}
			if pos < seg.dropPos && p.failed.Load() == nil {
				// Not after a failed write: the pages may hold the only
				// good copy of what the disk lost.
				res.Records.uncache = int(min(pos+n, seg.dropPos) - pos)
			}
			p.noteRead(seg.base, pos)
			return
		}
		// The offset falls past this segment's data (a gap left by an
		// aborted write or a roll): continue in the next segment.
		nextSeg := p.segmentFor(seg.next)
		if nextSeg == nil || nextSeg == seg || !follower && nextSeg.base >= p.hw {
			return
		}
		seg, offset = nextSeg, nextSeg.base
	}
}

func (s *shard) listOffsets(r *request) error {
	p, err := s.lookup(r.topic, r.partition)
	if err != nil {
		return err
	}
	if p.rep != nil || s.opts.RequireRole {
		if err := s.checkConsumer(p, r.now); err != nil {
			return err
		}
	}
	r.offsets = OffsetResult{Offset: -1, Timestamp: -1}
	switch ts := r.ts; {
	case ts == TimestampLatest:
		r.offsets.Offset = p.hw
	case ts == TimestampEarliest:
		r.offsets.Offset = p.logStart
	case ts == TimestampEarliestLocal:
		r.offsets.Offset = p.segs[0].base
		if p.logStart > r.offsets.Offset {
			r.offsets.Offset = p.logStart
		}
	case ts == TimestampLatestTiered:
		if n := len(p.remote); n > 0 {
			r.offsets.Offset = p.remote[n-1].EndOffset - 1
		}
	case ts == TimestampMaxTimestamp:
		// The record holding the largest timestamp, the first of them on a
		// tie (KIP-734).
		for _, rs := range p.remote {
			if rs.MaxTimestamp > r.offsets.Timestamp {
				off, ok := rs.MaxTimestampOffset()
				if !ok {
					// Recorded before the catalog kept the record's
					// offset: the segment's last offset is the nearest
					// answer that needs no read from the cold tier.
					off = rs.EndOffset - 1
				}
				r.offsets = OffsetResult{Offset: off, Timestamp: rs.MaxTimestamp}
			}
		}
		var best *segment
		for _, seg := range p.segs {
			if seg.maxTs > r.offsets.Timestamp && seg.maxTsOffset < p.hw {
				best, r.offsets.Timestamp = seg, seg.maxTs
			}
		}
		if best != nil {
			off, err := best.exactMaxTsOffset(s.scratch[:])
			if err != nil {
				return err
			}
			r.offsets.Offset = off
		}
	case ts >= 0:
		for _, rs := range p.remote {
			if rs.MaxTimestamp >= ts {
				r.offsets = OffsetResult{Offset: rs.BaseOffset, Timestamp: rs.MaxTimestamp}
				return nil
			}
		}
		for _, seg := range p.segs {
			if seg.maxTs < ts {
				continue
			}
			off, found, ok, err := seg.findTimestamp(ts, seg.durable, s.scratch[:])
			if err != nil {
				return err
			}
			if ok && off >= p.hw {
				// Above what consumers may read (a leader waiting for
				// its followers): not there yet.
				break
			}
			if ok {
				if off < p.logStart {
					off = p.logStart
				}
				r.offsets = OffsetResult{Offset: off, Timestamp: found}
				return nil
			}
		}
	default:
		return fmt.Errorf("%w: timestamp %d", ErrInvalidRequest, ts)
	}
	return nil
}

// deleteRecords moves the log start offset forward (Kafka's DeleteRecords)
// and removes segments that lie wholly below it.
func (s *shard) deleteRecords(r *request) error {
	p, err := s.lookup(r.topic, r.partition)
	if err != nil {
		return err
	}
	before := r.ts
	if before == -1 {
		before = p.hw
	}
	if before < 0 || before > p.hw {
		return fmt.Errorf("%w: delete before %d, high watermark %d", ErrOffsetOutOfRange, before, p.hw)
	}
	if before > p.logStart {
		p.logStart = before
		if err := s.opts.Catalog.SetLogStart(p.topic, p.id, before); err != nil {
			return err
		}
	}
	if _, err := p.dropRemoteOldest(s, func(r *catalog.Segment, _ int64) bool { return r.EndOffset <= p.logStart }); err != nil {
		return err
	}
	if _, err := p.deleteOldest(s, func(seg *segment, _ int64) bool { return seg.next > p.logStart }); err != nil {
		return err
	}
	r.offsets.Offset = p.logStart
	return nil
}

func (s *shard) retention(now time.Time) {
	for _, p := range s.parts {
		if n := p.expireProducers(now.UnixMilli(), s.opts.ProducerIDExpiration); n > 0 {
			s.opts.Logger.Info("producer ids expired", "topic", p.topic, "partition", p.id, "producers", n,
				"left", len(p.producers))
		}
		if n, err := p.applyRetention(s, now); err != nil {
			s.logLimited("retention", "retention failed", "topic", p.topic, "partition", p.id, "err", err)
		} else if n > 0 {
			s.opts.Logger.Info("retention deleted segments", "topic", p.topic, "partition", p.id, "segments", n,
				"log_start", p.logStart)
		}
	}
}

// finalSyncWorkers and finalSyncChunk shape shutdown's syncs: one after
// another, a node with thousands of partitions waited out a journal commit
// for each, where concurrent syncs share commits; a chunk at a time keeps
// the descriptors they hold within reach of the log file cache's bound.
const (
	finalSyncWorkers = 16
	finalSyncChunk   = 256
)

// finalSyncs makes the active segment of each partition durable (log and
// both indexes) and returns each one's error. The shard goroutine waits
// for the workers, so they may read the segments.
func (s *shard) finalSyncs(parts []*partition) []error {
	errs := make([]error, len(parts))
	for from := 0; from < len(parts); from += finalSyncChunk {
		chunk := parts[from:min(from+finalSyncChunk, len(parts))]
		refs := make([]*fileRef, len(chunk))
		for i, p := range chunk {
			ref, err := p.active().file()
			if err != nil {
				errs[from+i] = err
				continue
			}
			ref.acquire() // the cache may close it while a later one opens
			refs[i] = ref
		}
		next := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < finalSyncWorkers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					seg := chunk[i].active()
					err := unix.Fdatasync(int(refs[i].f.Fd()))
					if err == nil {
						err = seg.idx.sync()
					}
					if err == nil {
						err = seg.tidx.sync()
					}
					errs[from+i] = err
				}
			}()
		}
		for i, ref := range refs {
			if ref != nil {
				next <- i
			}
		}
		close(next)
		wg.Wait()
		for _, ref := range refs {
			if ref != nil {
				ref.release()
			}
		}
	}
	return errs
}

// shutdown finishes in-flight syncs, makes everything durable, answers
// every parked request and closes the partitions.
func (s *shard) shutdown() {
	if s.inFlight {
		s.completeSync(<-s.syncDone)
	}
	close(s.syncReq)
	close(s.wb)
	<-s.wbDone // a failure it finds must be seen below
	parts := make([]*partition, 0, len(s.parts))
	for _, p := range s.parts {
		parts = append(parts, p)
	}
	errs := s.finalSyncs(parts)
	for i, p := range parts {
		seg := p.active()
		if err := errs[i]; err != nil {
			s.logLimited("final-sync", "final sync failed", "segment", seg.logPath, "err", err)
		} else if f := p.failed.Load(); f != nil {
			for _, w := range p.waitAcks {
				w.finish(*f)
			}
			p.waitAcks = nil
		} else {
			seg.durable = seg.size
			p.advanceDurable(seg.next)
			s.ackDurable(p)
		}
		for _, w := range p.waitAcks {
			w.finish(fmt.Errorf("%w: while waiting for flush", ErrClosed))
		}
		p.waitAcks = nil
		p.close()
	}
	// A sentinel rather than close: Store.Settle may be sending from
	// another goroutine, and a send on a closed channel panics.
	s.chores <- nil
	// Fail whatever is still queued.
	for {
		select {
		case r := <-s.reqs:
			r.finish(ErrClosed)
		default:
			return
		}
	}
}
