package fetchcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/time/rate"
)

// Cache serves ranges of remote segments from aligned chunks held in memory.
// It is safe for concurrent use.
//
// # Admission (why a backfill cannot flush the working set)
//
// Memory is split into a main segment (ristretto) and a scan segment (an
// LRU), after 2Q (Johnson & Shasha, VLDB '94):
//
//   - Every chunk fetched enters the scan segment. A readahead chunk goes
//     only there: it has not been read by anyone yet.
//   - A chunk is sent to the main segment when it is re-referenced: a read
//     starts in it at or before the position where an earlier read started
//     (a second pass, or two consumers over the same range), or a read
//     misses on it shortly after it fell out of the scan segment (it is in
//     the ghost list). A single sequential reader only ever moves forward
//     through a chunk, so a one-pass backfill never qualifies.
//   - While the main segment has free room, chunks read by a reader go there
//     too: filling free space evicts nothing, and it makes a second pass
//     over recently read data hit. The room is the cache's own count
//     (reserveFree), so a burst cannot overfill it. Once it is full, only
//     re-referenced chunks enter, and ristretto's TinyLFU admission still
//     compares each of them with the sampled victims, so a chunk read twice
//     does not displace one read fifty times.
//
// The scan segment must be large enough for the sequential readers running
// at once (Options.ScanBytes): a reader that loses its chunk before it is
// done reads it again, which looks like a re-reference.
//
// Index objects live in their own LRU so chunks never crowd them out: a
// missing index turns one small GET into a scan of the segment's headers.
type Cache struct {
	bucket    objstore.Bucket
	opts      Options
	log       *slog.Logger
	chunkSize int64
	retry     objstore.RetryPolicy

	main    *ristretto.Cache[string, []byte]
	mainCap int64
	scan    *lru[*scanEntry]
	ghosts  *ghostList
	idx     *lru[[]byte]
	sizes   *lru[int64]     // object sizes learnt by Head, for records without ObjectSize
	nexts   *lru[nextEntry] // the object after each one, for readahead (next.go)

	sem     chan struct{} // the cold I/O budget: one token per GET in flight
	raSem   chan struct{} // the part of it readahead may take
	limiter *rate.Limiter // nil: no byte rate limit

	flights flightGroup
	streams streamTracker
	spare   *reserve // nil unless Options.Prealloc

	// life is cancelled by Close; every GET runs under it.
	life    context.Context
	cancel  context.CancelFunc
	active  sync.WaitGroup // ReadRemote calls in progress
	bg      sync.WaitGroup // flight goroutines
	closing atomic.Bool
	mu      struct {
		sync.Mutex
		closed bool
	}

	st counters
}

// scanEntry is a chunk in the scan segment. data never changes; the other
// fields are guarded by the scan segment's lock.
type scanEntry struct {
	data []byte
	// lastStart is the position in the chunk where the latest read that
	// started in this chunk started, -1 before any.
	lastStart int64
	// referenced: some read used the chunk (readahead alone does not
	// count), so its eviction leaves a ghost.
	referenced bool
	// prefetched: loaded by readahead (for the readahead hit counter).
	prefetched bool
	// at is when a prefetched chunk came in (see unreadHold).
	at time.Time
	// promoted: already sent to the main segment.
	promoted bool
	// vFrom, vTo: object positions of the whole batches verifyAhead
	// checked in data as it landed (empty: none). Set before the entry is
	// added, never changed.
	vFrom, vTo int64
	// across: the batch that ends in data and starts in the chunk
	// before, checked as data landed (verify.go). Never changed.
	across acrossCheck
}

var _ logstore.ColdTier = (*Cache)(nil)

// New returns a Cache reading from bucket. Close releases it.
func New(bucket objstore.Bucket, opts Options) (*Cache, error) {
	if bucket == nil {
		return nil, fmt.Errorf("%w: nil bucket", ErrInvalidOptions)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cache{
		bucket:    bucket,
		opts:      opts,
		log:       opts.Logger.With("component", "fetchcache", "bucket", bucket.Name()),
		chunkSize: int64(opts.ChunkSize),
		sem:       make(chan struct{}, max(opts.MaxConcurrentGets, 1)),
	}
	// Readahead may take all but a quarter (at least one) of the I/O slots,
	// so readers that miss always find one soon.
	n := max(opts.MaxConcurrentGets, 1)
	c.raSem = make(chan struct{}, max(1, n-max(1, n/4)))
	c.flights.m = map[string]*flight{}
	c.streams.m = map[string]*stream{}
	c.retry = opts.Retry
	userOnRetry := c.retry.OnRetry
	c.retry.OnRetry = func(attempt int, err error, wait time.Duration) {
		c.st.retries.Add(1)
		c.log.Debug("retrying cold GET", "attempt", attempt, "wait", wait, "err", err)
		if userOnRetry != nil {
			userOnRetry(attempt, err, wait)
		}
	}
	if opts.MaxBytesPerSec > 0 {
		// The burst is one chunk so that a chunk GET is one reservation;
		// larger objects (index files) are charged in chunk-sized pieces.
		c.limiter = rate.NewLimiter(rate.Limit(opts.MaxBytesPerSec), opts.ChunkSize)
	}

	mainBytes := opts.mainBytes()
	c.mainCap = mainBytes
	items := max(mainBytes/c.chunkSize, 1)
	c.main, err = ristretto.NewCache(&ristretto.Config[string, []byte]{
		// Ristretto's advice: ten counters per item the cache holds when
		// full. The sketch halves its counts every NumCounters increments,
		// so frequencies reflect the recent past.
		NumCounters: max(10*items, 1000),
		MaxCost:     mainBytes,
		BufferItems: 64,
		// Cost is the chunk's bytes; ristretto's own per-item overhead is
		// not counted (it is tiny next to a chunk).
		IgnoreInternalCost: true,
		OnEvict: func(*ristretto.Item[[]byte]) {
			if !c.closing.Load() { // Close clears the cache through OnEvict
				c.st.mainEvictions.Add(1)
			}
		},
		OnReject: func(*ristretto.Item[[]byte]) {
			if !c.closing.Load() {
				c.st.mainRejections.Add(1)
			}
		},
		// Every value leaving (evicted, rejected, deleted, replaced) passes
		// here, which keeps mainUsed equal to the bytes Set and not gone.
		OnExit: func(v []byte) { c.st.mainUsed.Add(-int64(len(v))) },
	})
	if err != nil {
		return nil, fmt.Errorf("%w: ristretto: %w", ErrInvalidOptions, err)
	}
	c.ghosts = newGhostList(int(max(1024, 2*opts.MaxBytes/c.chunkSize)))
	c.scan = newLRU(opts.ScanBytes, func(key string, e *scanEntry) {
		if e.referenced {
			c.ghosts.add(key)
		} else if e.prefetched {
			c.st.readaheadWasted.Add(1)
		}
	})
	// A prefetched chunk nobody has read yet goes last: its reader is
	// on its way, and losing it costs a GET for nothing and that reader a
	// miss, while a chunk already read is needed again only by a re-read.
	c.scan.keep = func(e *scanEntry) bool {
		return e.prefetched && !e.referenced && time.Since(e.at) < unreadHold
	}
	c.idx = newLRU[[]byte](opts.IndexBytes, nil)
	c.sizes = newLRU[int64](4096, nil)
	c.nexts = newLRU[nextEntry](4096, nil)
	if opts.Prealloc {
		c.spare = newReserve(int((opts.MaxBytes-opts.IndexBytes)/c.chunkSize), opts.ChunkSize)
	}
	c.life, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Close cancels the GETs in flight, waits for every goroutine the cache
// started and releases the memory. ReadRemote calls in progress return
// errors; later ones return ErrClosed. It is safe to call more than once.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.closed = true
	c.mu.Unlock()
	c.cancel()
	c.active.Wait()
	c.bg.Wait()
	// ristretto must see no Get/Set/Del once Close starts (its channels
	// close), which the two waits above guarantee.
	c.closing.Store(true)
	c.main.Close()
	c.spare.drop()
	return nil
}

func (c *Cache) enter() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return ErrClosed
	}
	c.active.Add(1)
	return nil
}

// object is a remote segment object as one read sees it: a bundle
// (tierd/segobj) or a legacy .log object.
type object struct {
	key    string
	idxKey string // the index's name (IndexKey); "" when there is none
	// size is the object's, which sets its chunks; end is where its log
	// ends: size for a legacy .log, the record's Bytes for a bundle, 0
	// when not known yet (a bundle found by a List, next.go).
	size   int64
	end    int64
	chunks int64
	seg    catalog.Segment
}

// IndexKey names the offset index of the segment object key, in the index
// cache and in the flight group: for a legacy .log object, the key of the
// .index object beside it (DESIGN §4); for a bundle, which holds its index
// after the log, the bundle's key with "#index" (not a chunk key, which
// ends in digits). It returns "" for a key of neither shape.
func IndexKey(key string) string {
	if segobj.IsBundle(key) {
		return key + "#index"
	}
	return segobj.LegacyIndexKey(key)
}

// setSize sets o's size, log end and chunk count; end is the record's
// Bytes, used for a bundle only. A chunk's bytes run to the object's end,
// so every reader of an object cuts the same chunks; reads and readahead
// stop at the chunk holding the log's last byte.
func (o *object) setSize(size, chunkSize, end int64) {
	o.size, o.end = size, size
	if segobj.IsBundle(o.key) {
		o.end = end
	}
	last := o.size
	if o.end > 0 {
		last = o.end
	}
	o.chunks = (last + chunkSize - 1) / chunkSize
}

// chunkKey names chunk k of obj in the cache and in the flight group. The
// chunk number follows the last '#', so two (object, chunk) pairs never share
// a name, and no chunk key ends like an index key (".index"). It reads well
// in error messages.
func (c *Cache) chunkKey(obj string, k int64) string {
	return obj + "#" + strconv.FormatInt(k, 10)
}

// ReadRemote returns record batches of the remote segment seg starting with
// the batch that holds offset: whole batches only, as many as fit in
// maxBytes but at least that first one, cut at the end of the object. The
// bytes are those of the segment file at the same positions, each batch
// verified. It returns nil when no batch at or after offset exists in the
// object and the record does not say the segment reaches offset.
//
// The result is the bytes in parts, back to back: one part per chunk the
// range lies in, each the chunk's own memory, never a copy. The caller may
// keep the parts but must not write to them. A read ends at the end of the
// chunk its first batch ends in at most, so that it waits for no chunk
// beyond the ones that batch needs; a consumer gets the rest on its next
// fetch, as Kafka allows a broker to return less than the maximum.
func (c *Cache) ReadRemote(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int) ([][]byte, error) {
	return c.read(ctx, seg, offset, maxBytes, false)
}

// read is ReadRemote; memOnly makes it fail with errNotInMemory rather
// than wait for a GET (ReadCached).
func (c *Cache) read(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int, memOnly bool) ([][]byte, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.active.Done()
	if seg.ObjectKey == "" {
		return nil, fmt.Errorf("%w: %s/%d segment %d", ErrNotRemote, seg.Topic, seg.Partition, seg.BaseOffset)
	}
	if offset < seg.BaseOffset || (seg.EndOffset > seg.BaseOffset && offset >= seg.EndOffset) {
		return nil, fmt.Errorf("fetchcache: %s: %w: offset %d not in segment [%d, %d)",
			seg.ObjectKey, logstore.ErrOffsetOutOfRange, offset, seg.BaseOffset, seg.EndOffset)
	}
	if memOnly && !c.knownInMemory(seg) {
		return nil, errNotInMemory
	}
	o, err := c.object(ctx, seg)
	if err != nil {
		return nil, err
	}
	x, err := c.index(ctx, o)
	if err != nil {
		return nil, err
	}
	if c.opts.Readahead > 0 {
		// A sequential reader keeps Readahead chunks in flight beyond the
		// end of the range it reads, started before this read waits for
		// anything, so they transfer while it waits. Positions come from
		// the index entry, near enough to the batch's; a read that is
		// not known to be sequential yet is handled after it (below).
		_, entryPos, _ := indexLookup(x, relOffset(seg, offset))
		k := int64(entryPos) / c.chunkSize
		if c.streams.follows(o.key, k) || (k == 0 && offset == seg.BaseOffset) {
			end := min(int64(entryPos)+max(int64(maxBytes), 1), o.end)
			c.readahead(o, (end-1)/c.chunkSize, -1)
		}
	}
	r := reader{c: c, o: o, memOnly: memOnly}
	if memOnly {
		// A read that gives up is done again by ReadRemote, which counts
		// the hits on its chunks itself.
		defer func() {
			if r.gaveUp {
				c.st.hits.Add(-r.hits)
			}
		}()
	}
	pos, h, err := c.locate(ctx, &r, x, offset)
	if err != nil {
		return nil, err
	}
	if pos < 0 {
		if seg.EndOffset > offset {
			return nil, c.corrupt(o, o.end, fmt.Errorf("no batch holds offset %d, which the segment record says is below %d", offset, seg.EndOffset))
		}
		return nil, nil
	}
	// Cached chunks are never written after they are filled, and one
	// evicted while a response still holds it stays alive until the
	// response is sent.
	k0, k1 := pos/c.chunkSize, (pos+int64(h.Length)-1)/c.chunkSize
	end := min(pos+max(int64(maxBytes), int64(h.Length)), o.end, (k1+1)*c.chunkSize)
	// A batch over several chunks fetches them in parallel, not one after
	// the other. The chunks already in memory are taken first: each GET
	// started here adds a chunk to the scan segment, and would push out
	// the least recently used, which may be a chunk this read is about to
	// use (prefetched, not yet read), then fetched a second time.
	// TestScanResistance caught that under the race detector on a busy
	// machine.
	for k := k0 + 1; k <= k1; k++ {
		if !r.cached(k) {
			c.prefetch(o, k, nil, -1)
		}
	}
	out := make(parts, 0, k1-k0+1)
	for k := k0; k <= k1; k++ {
		data, err := r.chunk(ctx, k)
		if err != nil {
			return nil, err
		}
		from, to := max(pos, k*c.chunkSize)-k*c.chunkSize, min(end, (k+1)*c.chunkSize)-k*c.chunkSize
		out = append(out, data[from:to:to])
	}
	if !r.fromMain(k0) {
		c.noteStart(o, k0, pos-k0*c.chunkSize)
	}
	out, err = c.finish(&r, pos, h, out)
	if err != nil {
		return nil, err
	}
	if c.opts.Readahead > 0 && c.streams.sequential(o, k0, k1, pos == 0) {
		c.readahead(o, k1, -1)
	}
	if n := int64(out.size()); n > 0 && pos+n >= o.end {
		// The reader is done with o and goes on in the next object;
		// pump must not top up from o's end once it has gone past that.
		c.streams.finish(o.key)
	}
	return out, nil
}

// readahead prefetches the Options.Readahead chunks after chunk k of o, as
// far as free readahead slots allow, in spans of several chunks a GET
// (span.go). A window that runs past o's end goes on into the object of
// the next segment, its index first (next.go).
//
// anchor >= 0 is the reader position a top-up (pump) chose the window
// from: each chunk is fetched only while that is still o's latest read
// (see moved). A reader's own calls pass -1: they are the reader.
func (c *Cache) readahead(o *object, k, anchor int64) {
	window, room := c.window()
	if window <= 0 || room <= 0 {
		return
	}
	last := k + window
	span := spanChunks(window)
	for n := k + 1; n <= last; n++ {
		if n < o.chunks {
			end := min(last, o.chunks-1)
			run := c.missing(o, n, min(end, n+span-1))
			if run == 0 {
				continue
			}
			if run = min(run, room); run <= 0 {
				return
			}
			room -= run
			// A short run at the end of the window waits to grow into a
			// whole span (span.go); the chunks before it are already
			// coming, so the reader does not wait for it.
			if run < span && n+run-1 == end && end < o.chunks-1 && n > k+1 {
				return
			}
			if !c.prefetchSpan(o, n, run, o, anchor) {
				return
			}
			n += run - 1
			continue
		}
		nx := c.nextObject(o, o)
		if nx == nil || !c.prefetchIndex(nx, o) {
			return
		}
		for m := int64(0); m <= last-n && m < nx.chunks && m < room; m++ {
			if !c.prefetch(nx, m, o, anchor) {
				return
			}
		}
		return
	}
}

// unreadHold is how long a prefetched chunk nobody has read is kept in
// the scan segment ahead of chunks already read: long past any consumer's
// next fetch, so the window of a reader that went away is not held for
// ever.
const unreadHold = 10 * time.Second

// window is how many chunks a sequential reader's readahead may run ahead
// of it, and how many more readahead may start now. Each active sequential
// reader needs the chunk it reads and the next one its reads run into
// besides its window (Options.ScanBytes), so the window is
// Options.Readahead cut to the reader's share of the scan segment, and all
// prefetched chunks not read yet (in the scan segment or in flight) stay
// within what the scan segment has beyond the readers' own two chunks:
// windows that overfilled it pushed out each other's prefetched chunks, or
// the chunks their readers were in, before those were read, and they were
// fetched again. The second bound matters as readers come and go: windows
// taken while fewer readers were active are not read yet when more join.
func (c *Cache) window() (window, room int64) {
	n := int64(max(c.streams.activeReaders(), 1))
	chunks := c.opts.ScanBytes / c.chunkSize
	window = min(int64(c.opts.Readahead), chunks/n-2)
	if window <= 0 {
		return 0, 0
	}
	return window, chunks - 2*n - c.unread()
}

// unread counts the prefetched chunks no reader has used yet: readahead
// GETs in flight that no reader waits for, and prefetched chunks in the
// scan segment that none has read.
func (c *Cache) unread() int64 {
	n := int64(0)
	c.flights.mu.Lock()
	for _, f := range c.flights.m {
		if f.readahead && f.waiters == 0 {
			n++
		}
	}
	c.flights.mu.Unlock()
	return n + int64(c.scan.count(c.scan.keep))
}

// relOffset is offset relative to the segment base, as the index stores it.
func relOffset(seg catalog.Segment, offset int64) uint32 {
	return uint32(min(offset-seg.BaseOffset, int64(^uint32(0))))
}

// object resolves seg's log object, learning its size with Head when the
// record lacks it.
func (c *Cache) object(ctx context.Context, seg catalog.Segment) (*object, error) {
	o := &object{key: seg.ObjectKey, idxKey: IndexKey(seg.ObjectKey), seg: seg}
	size := seg.ObjectSize
	if size <= 0 {
		var ok bool
		size, ok = c.sizes.get(o.key, nil)
		if !ok {
			err := objstore.Retry(ctx, c.retry, func(ctx context.Context) error {
				release, err := c.acquire(ctx)
				if err != nil {
					return err
				}
				defer release()
				info, err := c.bucket.Head(ctx, o.key)
				if err != nil {
					return fmt.Errorf("fetchcache: %s %q: %w", objstore.OpHead, o.key, err)
				}
				size = info.Size
				return nil
			})
			if err != nil {
				return nil, err
			}
			c.sizes.add(o.key, size, 1)
		}
	}
	o.setSize(size, c.chunkSize, seg.Bytes)
	if segobj.IsBundle(o.key) && (o.end < 0 || o.end > o.size-segobj.TrailerSize) {
		return nil, fmt.Errorf("fetchcache: %s: %w: the record gives a log of %d bytes in a %d-byte object",
			o.key, segobj.ErrBadObject, seg.Bytes, o.size)
	}
	return o, nil
}

// locate returns the position and header of the batch holding offset, or
// pos -1 when the object has no batch at or after it. It starts from the
// entry of the remote index x at or below offset and reads batch headers
// forward.
//
// Offsets in a segment only go up: logstore assigns each batch the offset
// after the previous one, and its cleaner, compacting a segment, leaves
// gaps where it removed batches. An index entry names its batch's base
// offset exactly. The scan checks every header against that, since the
// base offset is outside the batch CRC and a corrupted one would otherwise
// go unnoticed; one past the segment's end is caught by finish.
func (c *Cache) locate(ctx context.Context, r *reader, x []byte, offset int64) (int64, logstore.BatchHeader, error) {
	var h logstore.BatchHeader
	var err error
	base := r.o.seg.BaseOffset
	entryRel, entryPos, fromIndex := indexLookup(x, relOffset(r.o.seg, offset))
	pos, want := int64(entryPos), base+int64(entryRel)
	reread := false
	var hdr [logstore.BatchHeaderSize]byte
	for pos < r.o.end {
		if r.o.end-pos < logstore.BatchHeaderSize {
			return 0, h, c.corrupt(r.o, pos, fmt.Errorf("log ends %d bytes into a batch header", r.o.end-pos))
		}
		if err := r.readAt(ctx, hdr[:], pos); err != nil {
			return 0, h, err
		}
		h, err = logstore.ParseBatchHeader(hdr[:])
		if err != nil {
			c.purge(r.o, pos, logstore.BatchHeaderSize)
			return 0, h, c.corrupt(r.o, pos, err)
		}
		if h.BaseOffset < want || h.BaseOffset != want && fromIndex && pos == int64(entryPos) {
			if fromIndex && pos == int64(entryPos) {
				// Either the index is not this log's, or the chunk under
				// the batch is damaged: read it once more from the bucket
				// before giving up on the index.
				if !reread {
					reread = true
					c.purge(r.o, pos, logstore.BatchHeaderSize)
					r.forget(pos, logstore.BatchHeaderSize)
					continue
				}
				c.dropIndex(r.o, fmt.Sprintf("entry (%d, %d) points at a batch with base offset %d", entryRel, entryPos, h.BaseOffset))
				fromIndex, pos, want = false, 0, base
				continue
			}
			c.purge(r.o, pos, logstore.BatchHeaderSize)
			return 0, h, c.corrupt(r.o, pos, fmt.Errorf("batch base offset %d, want %d after the batch before it", h.BaseOffset, want))
		}
		if int64(h.Length) > r.o.end-pos {
			c.purge(r.o, pos, logstore.BatchHeaderSize)
			return 0, h, c.corrupt(r.o, pos, fmt.Errorf("batch of %d bytes runs past the log's end at %d", h.Length, r.o.end))
		}
		if h.LastOffset() >= offset {
			return pos, h, nil
		}
		pos += int64(h.Length)
		want = h.NextOffset()
	}
	return -1, h, nil
}

// finish cuts out, which holds the object's bytes from pos and starts with
// the batch first, to the whole batches it holds and checks them: structure
// and CRC32C (logstore.ValidateStoredBatch, unless SkipVerify), offsets
// that only go up (compacted segments have gaps), offsets inside the segment, and partition leader epochs that
// never go down. A bad first batch is an error; a bad later one ends the
// result before it, so the reader gets the good batches and meets the error
// on its next fetch. The chunks under a bad batch leave the cache, so a
// corruption that happened in transit heals on the next read.
//
// Cutting the trailing partial batch (which Kafka allows to be sent) means
// every byte served has been checked, and a client is not sent bytes it
// must discard and fetch again.
//
// What no check can cover: the 4-byte partition leader epoch is outside
// the CRC in the Kafka format and carries no redundancy; only an epoch that
// goes down is caught. (Kafka brokers do not check it at all.)
func (c *Cache) finish(r *reader, pos int64, first logstore.BatchHeader, out parts) (parts, error) {
	o := r.o
	want := first.BaseOffset
	epoch := int32(-1)
	size := out.size()
	var hdr [logstore.BatchHeaderSize]byte
	var spans [4][]byte
	batch := parts(spans[:0]) // a batch's parts, reused from batch to batch
	p, last := 0, 0
	for size-p >= logstore.BatchHeaderSize {
		h, err := logstore.ParseBatchHeader(out.header(&hdr, p))
		if err == nil && int(h.Length) > size-p {
			break // the trailing partial batch
		}
		switch {
		case err != nil || c.opts.SkipVerify:
		case r.checkedAhead(pos+int64(p), pos+int64(p)+int64(h.Length)):
			c.st.checkedAhead.Add(1)
		default:
			batch = out.slice(batch[:0], p, p+int(h.Length))
			if len(batch) == 1 {
				_, err = logstore.ValidateStoredBatch(batch[0])
			} else {
				_, err = logstore.ValidateStoredBatchParts(batch)
			}
		}
		switch {
		case err != nil:
		case h.BaseOffset < want:
			err = fmt.Errorf("batch base offset %d, want %d or more after the batch before it", h.BaseOffset, want)
		case o.seg.EndOffset > o.seg.BaseOffset && h.LastOffset() >= o.seg.EndOffset:
			err = fmt.Errorf("last offset %d beyond the segment end %d", h.LastOffset(), o.seg.EndOffset)
		case h.LeaderEpoch < epoch:
			err = fmt.Errorf("partition leader epoch %d after %d", h.LeaderEpoch, epoch)
		}
		if err != nil {
			c.purge(o, pos+int64(p), max(int64(h.Length), logstore.BatchHeaderSize))
			if p == 0 {
				return nil, c.corrupt(o, pos, err)
			}
			c.st.corrupt.Add(1)
			c.log.Warn("cold read cut before a corrupt batch", "object", o.key, "position", pos+int64(p), "err", err)
			return out.cut(p), nil
		}
		want, epoch = h.NextOffset(), h.LeaderEpoch
		last, p = p, p+int(h.Length)
	}
	// The header of the batch after the cut, when fetched, bounds the last
	// epoch served from above.
	if p > int(first.Length) && size-p >= logstore.BatchHeaderSize {
		if h, err := logstore.ParseBatchHeader(out.header(&hdr, p)); err == nil && h.BaseOffset == want && h.LeaderEpoch >= 0 && h.LeaderEpoch < epoch {
			c.st.corrupt.Add(1)
			c.purge(o, pos+int64(last), int64(p-last))
			c.log.Warn("cold read cut before a corrupt batch", "object", o.key, "position", pos+int64(last),
				"err", fmt.Sprintf("partition leader epoch %d before %d", epoch, h.LeaderEpoch))
			return out.cut(last), nil
		}
	}
	return out.cut(p), nil
}

// corrupt counts and logs a corrupt batch that fails a read, and returns
// the error that names it.
func (c *Cache) corrupt(o *object, pos int64, err error) error {
	c.st.corrupt.Add(1)
	c.log.Warn("corrupt remote segment", "object", o.key, "position", pos, "err", err)
	return fmt.Errorf("fetchcache: %s at byte %d: %w: %w", o.key, pos, logstore.ErrCorruptSegment, err)
}

// purge drops the chunks under [pos, pos+n) from every segment, and from
// the flight group: a GET of one of them still running (a prefetch whose
// data a reader found in the scan segment before the flight left the
// group) would otherwise hand the same bad bytes to the next reader and
// store them again.
func (c *Cache) purge(o *object, pos, n int64) {
	for k := pos / c.chunkSize; k <= (pos+n-1)/c.chunkSize && k < o.chunks; k++ {
		key := c.chunkKey(o.key, k)
		c.flights.mu.Lock()
		delete(c.flights.m, key)
		c.flights.mu.Unlock()
		c.main.Del(key)
		c.scan.remove(key)
	}
	// A ristretto trap: Del removes the stored value at once, but a Set
	// still queued in the set buffer stores it again when applied, and it
	// stays visible until the queued delete behind it runs. Waiting for the
	// buffer closes that window; purges are rare (corrupt data only).
	c.main.Wait()
}

// reader reads bytes of one object for one ReadRemote, remembering the
// chunks it got so a chunk is looked up (and counted) once per read.
type reader struct {
	c       *Cache
	o       *object
	memo    []memoChunk
	memOnly bool  // ReadCached: a chunk not in memory is errNotInMemory
	gaveUp  bool  // memOnly: it met a chunk not in memory
	hits    int64 // memOnly: chunk hits counted so far
}

type memoChunk struct {
	k        int64
	data     []byte
	fromMain bool
	// vFrom, vTo, across: the scan entry's, for this buffer (checkedAhead).
	vFrom, vTo int64
	across     acrossCheck
}

func (r *reader) readAt(ctx context.Context, dst []byte, pos int64) error {
	for len(dst) > 0 {
		k := pos / r.c.chunkSize
		data, err := r.chunk(ctx, k)
		if err != nil {
			return err
		}
		in := pos - k*r.c.chunkSize
		n := copy(dst, data[in:])
		dst, pos = dst[n:], pos+int64(n)
	}
	return nil
}

func (r *reader) chunk(ctx context.Context, k int64) ([]byte, error) {
	if data, ok := r.memoized(k); ok {
		return data, nil
	}
	if r.memOnly {
		if !r.cached(k) {
			r.gaveUp = true
			return nil, errNotInMemory
		}
		data, _ := r.memoized(k)
		return data, nil
	}
	data, fromMain, err := r.c.chunk(ctx, r.o, k)
	if err != nil {
		return nil, err
	}
	if err := r.keep(k, data, fromMain); err != nil {
		return nil, err
	}
	return data, nil
}

// memoized is chunk k if this read already holds it.
func (r *reader) memoized(k int64) ([]byte, bool) {
	for _, m := range r.memo {
		if m.k == k {
			return m.data, true
		}
	}
	return nil, false
}

// keep adds chunk k to the read's memory, after checking its size against
// the object's.
func (r *reader) keep(k int64, data []byte, fromMain bool) error {
	if want := min(r.c.chunkSize, r.o.size-k*r.c.chunkSize); int64(len(data)) != want {
		// Only possible when two records of one object disagree on its size.
		return fmt.Errorf("fetchcache: %s chunk %d holds %d bytes, but the record's object size %d implies %d",
			r.o.key, k, len(data), r.o.size, want)
	}
	r.memo = append(r.memo, memoChunk{k: k, data: data, fromMain: fromMain})
	r.noteChecked(&r.memo[len(r.memo)-1])
	return nil
}

// cached takes chunk k into the read's memory if it is in the cache, and
// reports whether it was. Once held, the chunk is this read's whatever the
// cache evicts meanwhile.
func (r *reader) cached(k int64) bool {
	if _, ok := r.memoized(k); ok {
		return true
	}
	data, fromMain, ok := r.c.inMemory(r.c.chunkKey(r.o.key, k))
	if ok && r.memOnly {
		r.hits++
	}
	// A chunk of the wrong size is left for r.chunk to report.
	return ok && r.keep(k, data, fromMain) == nil
}

// forget drops the chunks under [pos, pos+n) from the read's memory, so
// they are looked up again.
func (r *reader) forget(pos, n int64) {
	first, last := pos/r.c.chunkSize, (pos+n-1)/r.c.chunkSize
	r.memo = slices.DeleteFunc(r.memo, func(m memoChunk) bool { return m.k >= first && m.k <= last })
}

func (r *reader) fromMain(k int64) bool {
	for _, m := range r.memo {
		if m.k == k {
			return m.fromMain
		}
	}
	return false
}

// chunk returns chunk k of o from memory or, coalesced with other readers,
// from the bucket.
func (c *Cache) chunk(ctx context.Context, o *object, k int64) (data []byte, fromMain bool, err error) {
	key := c.chunkKey(o.key, k)
	if data, fromMain, ok := c.inMemory(key); ok {
		return data, fromMain, nil
	}
	data, hit, joined, err := c.join(ctx, key, func() ([]byte, bool) { return c.scanGet(key) }, func() *flight {
		return c.startLocked(key, 1, false,
			func(ctx context.Context) ([]byte, error) { return c.fetchChunk(ctx, o, k, false) },
			func(data []byte) { c.fillDemand(key, data) }, nil)
	})
	switch {
	case hit:
		c.st.hits.Add(1)
	case joined:
		c.st.misses.Add(1)
		c.st.coalesced.Add(1)
	default:
		c.st.misses.Add(1)
	}
	if err != nil {
		return nil, false, err
	}
	if joined {
		// The GET may have been a readahead's, whose chunk nobody has
		// used yet: record this use as scanGet would have.
		c.scanUse(key, false)
	}
	return data, false, nil
}

// inMemory looks a chunk up in the main segment, then in the scan segment,
// for a reader, and counts a hit when it is there.
func (c *Cache) inMemory(key string) (data []byte, fromMain, ok bool) {
	if data, ok := c.main.Get(key); ok {
		c.st.hits.Add(1)
		return data, true, true
	}
	if data, ok := c.scanGet(key); ok {
		c.st.hits.Add(1)
		return data, false, true
	}
	return nil, false, false
}

// scanGet looks key up in the scan segment for a reader.
func (c *Cache) scanGet(key string) ([]byte, bool) { return c.scanUse(key, true) }

// scanUse records a reader's use of key in the scan segment, if there:
// marks it read and promotes it while the main segment has room. found
// says the reader found it there (for the readahead hit count).
func (c *Cache) scanUse(key string, found bool) ([]byte, bool) {
	raHit, promote := false, false
	e, ok := c.scan.get(key, func(e *scanEntry) {
		raHit = found && e.prefetched && !e.referenced
		e.referenced = true
		if !e.promoted && c.reserveFree(len(e.data)) {
			e.promoted, promote = true, true
		}
	})
	if !ok {
		return nil, false
	}
	if raHit {
		c.st.readaheadHits.Add(1)
	}
	if promote {
		c.mainSet(key, e.data, true)
	}
	return e.data, true
}

// fillDemand stores a chunk a reader waited for.
func (c *Cache) fillDemand(key string, data []byte) {
	e := &scanEntry{data: data, lastStart: -1, referenced: true}
	if c.ghosts.take(key) {
		e.promoted = true
		c.mainSet(key, data, false)
	} else if c.reserveFree(len(data)) {
		e.promoted = true
		c.mainSet(key, data, true)
	}
	c.scan.add(key, e, int64(len(data)))
}

// noteStart records that a read started at position s of chunk k (held in
// the scan segment) and promotes the chunk when that is a re-reference.
func (c *Cache) noteStart(o *object, k, s int64) {
	key := c.chunkKey(o.key, k)
	var promote []byte
	c.scan.get(key, func(e *scanEntry) {
		reref := e.lastStart >= 0 && s <= e.lastStart
		e.lastStart = s
		if !e.promoted && reref {
			e.promoted = true
			promote = e.data
		}
	})
	if promote != nil {
		c.mainSet(key, promote, false)
	}
}

// reserveFree takes n bytes of the main segment's free room, if it has
// them. The room is counted by the cache itself (mainUsed), not asked of
// ristretto, whose accounting trails the Sets still in its buffer: a
// burst of reads would otherwise overfill the segment, and the overflow
// would be decided by TinyLFU, which may prefer a chunk of the burst over a
// rarely read part of the working set.
func (c *Cache) reserveFree(n int) bool {
	for {
		used := c.st.mainUsed.Load()
		if c.mainCap-used < int64(n) {
			return false
		}
		if c.st.mainUsed.CompareAndSwap(used, used+int64(n)) {
			return true
		}
	}
}

// mainSet sends a chunk to the main segment; reserved says reserveFree
// already counted its bytes.
func (c *Cache) mainSet(key string, data []byte, reserved bool) {
	n := int64(len(data))
	if !reserved {
		c.st.mainUsed.Add(n)
	}
	c.st.promotions.Add(1)
	// The scan segment may hold the same slice: a chunk in both costs its
	// bytes once in memory, twice in the accounting, which errs on the safe
	// side of the budget.
	if !c.main.Set(key, data, n) {
		c.st.mainUsed.Add(-n) // dropped by a full set buffer
	}
}

// prefetch starts a background GET of chunk k of o unless it is in memory
// or in flight. origin non-nil makes it a readahead for the sequential
// reader of origin: it needs a free I/O slot now and gives up otherwise
// (it returns false then), so it never queues ahead of demand reads, and
// when it completes it tops up origin's window (pump). origin nil is a
// span prefetch (a chunk of the range being read), which waits for a slot.
// anchor is readahead's.
func (c *Cache) prefetch(o *object, k int64, origin *object, anchor int64) bool {
	readahead := origin != nil
	key := c.chunkKey(o.key, k)
	// GetTTL looks without counting an access: a prefetch must not raise
	// the chunk's TinyLFU frequency.
	if _, ok := c.main.GetTTL(key); ok {
		return true
	}
	if c.scan.has(key) {
		return true
	}
	if readahead && !c.tryAcquireReadahead() {
		c.st.readaheadSkipped.Add(1)
		return false
	}
	c.flights.mu.Lock()
	defer c.flights.mu.Unlock()
	if c.flights.m[key] != nil || c.scan.has(key) || readahead && c.moved(origin, anchor) {
		if readahead {
			c.releaseReadahead()
		}
		return true
	}
	if readahead {
		c.st.readaheadGets.Add(1)
		var vFrom, vTo int64 // fetch sets them before fill runs, on the flight's goroutine
		f := c.startLocked(key, 0, true,
			func(ctx context.Context) ([]byte, error) {
				data, err := c.fetchChunk(ctx, o, k, true)
				if err == nil {
					vFrom, vTo = c.verifyAhead(o, k, data)
				}
				return data, err
			},
			func(data []byte) {
				c.scan.add(key, &scanEntry{data: data, lastStart: -1, prefetched: true, at: time.Now(), vFrom: vFrom, vTo: vTo}, int64(len(data)))
			},
			func(err error) {
				if err == nil {
					c.pump(origin)
				}
			})
		f.readahead = true
	} else {
		c.startLocked(key, 0, true,
			func(ctx context.Context) ([]byte, error) { return c.fetchChunk(ctx, o, k, false) },
			func(data []byte) { c.fillDemand(key, data) }, nil)
	}
	return true
}

// moved reports whether the reader of origin has read on since a top-up
// chose its window at anchor (anchor < 0: not a top-up). A top-up runs on
// the goroutine of the GET that just landed; held up between reading the
// reader's position and starting its GETs (a busy machine can hold it for
// as long as the reader takes to cross a few chunks), it would fetch
// chunks the reader has read and the scan segment has already dropped,
// GETs for nobody. The reader's own reads keep its window from where it
// is now. Called under c.flights.mu, which every fill into the scan
// segment takes, so nothing is dropped between this check and the GET it
// allows.
func (c *Cache) moved(origin *object, anchor int64) bool {
	if anchor < 0 {
		return false
	}
	latest, ok := c.streams.latest(origin.key)
	return !ok || latest != anchor
}

// fetchChunk GETs chunk k of o. readahead says the caller holds a
// readahead slot, which this call releases; readahead is not retried.
func (c *Cache) fetchChunk(ctx context.Context, o *object, k int64, readahead bool) ([]byte, error) {
	off := k * c.chunkSize
	buf := c.spare.take(min(c.chunkSize, o.size-off))
	err := c.withSlot(ctx, o.key, readahead, func(ctx context.Context) error {
		return c.getRange(ctx, o.key, off, buf)
	})
	if err != nil {
		c.st.getErrors.Add(1)
		return nil, err
	}
	return buf, nil
}

// withSlot runs get, a GET of key, within the cache's I/O budget. A
// readahead caller already holds a readahead slot, which this releases, and
// is not retried; any other caller takes an I/O slot for each attempt and
// is retried on transient errors.
func (c *Cache) withSlot(ctx context.Context, key string, readahead bool, get func(context.Context) error) error {
	if readahead {
		err := get(ctx)
		c.releaseReadahead()
		return err
	}
	return objstore.Retry(ctx, c.retry, func(ctx context.Context) error {
		release, err := c.acquire(ctx)
		if err != nil {
			return fmt.Errorf("fetchcache: %s %q: waiting for an I/O slot: %w", objstore.OpGetRange, key, err)
		}
		defer release()
		return get(ctx)
	})
}

// getRange reads exactly len(buf) bytes of key at off.
func (c *Cache) getRange(ctx context.Context, key string, off int64, buf []byte) error {
	end := off + int64(len(buf))
	if err := c.throttle(ctx, len(buf)); err != nil {
		return fmt.Errorf("fetchcache: %s %q bytes [%d,%d): rate limit: %w", objstore.OpGetRange, key, off, end, err)
	}
	c.st.gets.Add(1)
	rc, err := c.bucket.GetRange(ctx, key, off, int64(len(buf)))
	if err != nil {
		return fmt.Errorf("fetchcache: %s %q bytes [%d,%d): %w", objstore.OpGetRange, key, off, end, err)
	}
	n, err := io.ReadFull(rc, buf)
	rc.Close()
	c.st.bytesFetched.Add(int64(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // an empty body is as short as a cut one
		}
		return fmt.Errorf("fetchcache: %s %q bytes [%d,%d): got %d of %d bytes: %w", objstore.OpGetRange, key, off, end, n, len(buf), err)
	}
	return nil
}

func (c *Cache) acquire(ctx context.Context) (func(), error) {
	select {
	case c.sem <- struct{}{}:
		c.st.inflight.Add(1)
		return c.releaseSlot, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tryAcquireReadahead takes a readahead slot and an I/O slot if both are
// free now.
func (c *Cache) tryAcquireReadahead() bool {
	select {
	case c.raSem <- struct{}{}:
	default:
		return false
	}
	select {
	case c.sem <- struct{}{}:
		c.st.inflight.Add(1)
		return true
	default:
		<-c.raSem
		return false
	}
}

func (c *Cache) releaseReadahead() {
	c.releaseSlot()
	<-c.raSem
}

func (c *Cache) releaseSlot() {
	c.st.inflight.Add(-1)
	<-c.sem
}

// throttle waits until n more bytes fit the rate limit.
func (c *Cache) throttle(ctx context.Context, n int) error {
	if c.limiter == nil {
		return nil
	}
	for n > 0 {
		b := min(n, c.limiter.Burst())
		if err := c.limiter.WaitN(ctx, b); err != nil {
			return err
		}
		n -= b
	}
	return nil
}

// finish records that the latest read of obj reached the end of its log.
func (t *streamTracker) finish(obj string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.m[obj]; s != nil {
		s.done = true
	}
	delete(t.active, obj)
}

// state is latestObject with whether that read reached the log's end.
func (t *streamTracker) state(obj string) (k int64, o *object, done bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[obj]
	if s == nil || s.recent[0] < 0 {
		return 0, nil, false
	}
	return s.recent[0], s.o, s.done
}

// follows reports whether a read in chunk k of obj belongs to a sequential
// reader: chunk k-1 was read recently.
func (t *streamTracker) follows(obj string, k int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[obj]
	if s == nil || k == 0 {
		return false
	}
	for _, r := range s.recent {
		if r == k-1 {
			return true
		}
	}
	return false
}

// latest returns the chunk of obj that the most recent read ended in;
// ok is false when no read of obj is remembered.
func (t *streamTracker) latest(obj string) (k int64, ok bool) {
	k, o := t.latestObject(obj)
	return k, o != nil
}

// latestObject is latest with the object as that read saw it (its record
// included), nil when no read of obj is remembered.
func (t *streamTracker) latestObject(obj string) (int64, *object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[obj]
	if s == nil || s.recent[0] < 0 {
		return 0, nil
	}
	return s.recent[0], s.o
}

// streamDepth is how many recently read chunks are remembered per object,
// so that a few readers interleaving on one object are each still seen as
// sequential.
const streamDepth = 4

// maxStreams bounds the objects remembered; beyond it the memory is reset,
// which costs each reader at most one missed readahead.
const maxStreams = 4096

// streamTracker detects sequential readers: a read that enters chunk k
// right after chunk k-1 of the same object was read.
type streamTracker struct {
	mu sync.Mutex
	m  map[string]*stream
	// active holds the objects whose latest read was sequential, with its
	// time, until the reader leaves the object or stops for activeFor:
	// the readers sharing the scan segment (window).
	active map[string]time.Time
}

// activeFor is how long a sequential reader counts as active after its
// latest read: a consumer fetches each partition far more often.
const activeFor = 5 * time.Second

// activeReaders is how many sequential readers are active, forgetting
// those idle for activeFor.
func (t *streamTracker) activeReaders() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for k, at := range t.active {
		if now.Sub(at) >= activeFor {
			delete(t.active, k)
		}
	}
	return len(t.active)
}

// stream is what the tracker remembers of one object's readers.
type stream struct {
	recent [streamDepth]int64 // recent chunks, most recent first; -1 empty
	o      *object            // the object as the latest read saw it
	done   bool               // the latest read reached the end of the log
}

// sequential records a read of chunks first..last of o and reports whether
// it just entered last coming from the chunk before it. A read from the
// object's first byte counts as sequential too: it is a consumer starting
// at the segment's first offset or moving on from the segment before, and
// fetching its second chunk early halves its first wait.
func (t *streamTracker) sequential(o *object, first, last int64, fromStart bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.m[o.key]
	if s == nil {
		if len(t.m) >= maxStreams {
			clear(t.m)
		}
		s = &stream{recent: [streamDepth]int64{-1, -1, -1, -1}}
		t.m[o.key] = s
	}
	s.o, s.done = o, false
	recent := &s.recent
	has := func(k int64) bool {
		for _, r := range recent {
			if r == k {
				return true
			}
		}
		return false
	}
	seq := !has(last) && (fromStart || last > first || (first > 0 && has(first-1)))
	if seq || t.active[o.key] != (time.Time{}) {
		if t.active == nil {
			t.active = map[string]time.Time{}
		}
		t.active[o.key] = time.Now()
	}
	if !has(last) {
		copy(recent[1:], recent[:streamDepth-1])
		recent[0] = last
	}
	return seq
}
