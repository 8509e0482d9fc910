package fetchcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testSeg is a segment built the way logstore writes one: RecordBatch v2
// bytes with offsets assigned, and a sparse index entry every 4 KiB.
type testSeg struct {
	log, index []byte
	base, end  int64 // offsets [base, end)
	batches    []batchPos
}

type batchPos struct {
	base, last int64
	pos, len   int
}

const indexInterval = 4096

// buildSegment makes a segment of about size bytes starting at offset base.
// Batch sizes vary from a few dozen bytes to several KiB, so batches cross
// chunk boundaries of every chunk size the tests use.
func buildSegment(t testing.TB, base int64, size int, seed uint64) *testSeg {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	s := &testSeg{base: base, end: base}
	since := 0
	for len(s.log) < size {
		n := 1 + rng.IntN(5)
		vsize := 1 + rng.IntN(1500)
		if rng.IntN(10) == 0 {
			n, vsize = 1, 3000+rng.IntN(6000) // one batch over two chunks of 4 KiB
		}
		b := logtest.Filler(int64(len(s.batches)), n, vsize, byte(rng.Uint32()))
		binary.BigEndian.PutUint64(b[0:], uint64(s.end)) // outside the CRC, as the store patches it
		if since >= indexInterval {
			s.index = binary.BigEndian.AppendUint32(s.index, uint32(s.end-base))
			s.index = binary.BigEndian.AppendUint32(s.index, uint32(len(s.log)))
			since = 0
		}
		since += len(b)
		s.batches = append(s.batches, batchPos{base: s.end, last: s.end + int64(n) - 1, pos: len(s.log), len: len(b)})
		s.log = append(s.log, b...)
		s.end += int64(n)
	}
	return s
}

// expect is what ReadRemote must return with chunks of chunk bytes: whole
// batches from the one holding offset, as many as fit in maxBytes, at
// least one, and no further than the end of the chunk the first one ends
// in.
func (s *testSeg) expect(offset int64, maxBytes int, chunk int64) []byte {
	for i, b := range s.batches {
		if b.last < offset {
			continue
		}
		end := b.pos + b.len
		lim := int(min((int64(end-1)/chunk+1)*chunk, int64(len(s.log))))
		for _, n := range s.batches[i+1:] {
			if n.pos+n.len-b.pos > maxBytes || n.pos+n.len > lim {
				break
			}
			end = n.pos + n.len
		}
		return s.log[b.pos:end]
	}
	return nil
}

// batchAt returns the index of the batch holding offset.
func (s *testSeg) batchAt(offset int64) int {
	for i, b := range s.batches {
		if b.last >= offset {
			return i
		}
	}
	return -1
}

func segKey(name string, base int64) string {
	return fmt.Sprintf("prefix/%s/0/%020d-%s.log", name, base, "seg1")
}

// put uploads the segment's log (and index, unless noIndex) and returns its
// catalog record.
func put(t testing.TB, b objstore.Bucket, key string, s *testSeg, withIndex bool) catalog.Segment {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Put(ctx, key, bytes.NewReader(s.log), int64(len(s.log))); err != nil {
		t.Fatal(err)
	}
	if withIndex {
		if _, err := b.Put(ctx, IndexKey(key), bytes.NewReader(s.index), int64(len(s.index))); err != nil {
			t.Fatal(err)
		}
	}
	return catalog.Segment{Topic: "t", Partition: 0, BaseOffset: s.base, EndOffset: s.end, Bytes: int64(len(s.log)),
		State: catalog.StateRemote, SegmentID: "seg1", ObjectKey: key, ObjectSize: int64(len(s.log))}
}

func bundleKey(name string, base int64) string {
	return fmt.Sprintf("prefix/%s/0/%020d-%s.seg", name, base, "seg1")
}

// putBundle uploads the segment as tierd does, one object (tierd/segobj):
// log, index, a stand-in time index, trailer. It returns its catalog
// record.
func putBundle(t testing.TB, b objstore.Bucket, key string, s *testSeg) catalog.Segment {
	t.Helper()
	tidx := bytes.Repeat([]byte{0xee}, len(s.index)*3/2)
	tr := segobj.NewTrailer(int64(len(s.log)), s.index, tidx)
	obj := tr.Append(slices.Concat(s.log, s.index, tidx))
	if _, err := b.Put(context.Background(), key, bytes.NewReader(obj), int64(len(obj))); err != nil {
		t.Fatal(err)
	}
	return catalog.Segment{Topic: "t", Partition: 0, BaseOffset: s.base, EndOffset: s.end, Bytes: int64(len(s.log)),
		State: catalog.StateRemote, SegmentID: "seg1", ObjectKey: key, ObjectSize: int64(len(obj))}
}

func newCache(t testing.TB, b objstore.Bucket, opts Options) *Cache {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	c, err := New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkRead reads offset and compares with the segment bytes.
func checkRead(t testing.TB, c *Cache, rec catalog.Segment, s *testSeg, offset int64, maxBytes int) {
	t.Helper()
	got, err := readJoined(c, context.Background(), rec, offset, maxBytes)
	if err != nil {
		t.Fatalf("offset %d max %d: %v", offset, maxBytes, err)
	}
	if want := s.expect(offset, maxBytes, c.chunkSize); !bytes.Equal(got, want) {
		t.Fatalf("offset %d max %d: got %d bytes, want %d (first batch at %d)", offset, maxBytes, len(got), len(want), s.batches[s.batchAt(offset)].pos)
	}
}

// consume reads the whole segment the way a consumer does, from offset
// from, maxBytes at a time, and returns the bytes received.
func consume(t testing.TB, c *Cache, rec catalog.Segment, from int64, maxBytes int) []byte {
	t.Helper()
	var all []byte
	for off := from; off < rec.EndOffset; {
		b, err := readJoined(c, context.Background(), rec, off, maxBytes)
		if err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
		if len(b) == 0 {
			t.Fatalf("offset %d: empty read", off)
		}
		all = append(all, b...)
		off = lastNext(t, b)
	}
	return all
}

// lastNext is the offset after the last batch of b (whole batches).
func lastNext(t testing.TB, b []byte) int64 {
	t.Helper()
	next := int64(-1)
	for len(b) > 0 {
		h, err := logstore.ParseBatchHeader(b)
		if err != nil || int(h.Length) > len(b) {
			t.Fatalf("result is not whole batches: %v", err)
		}
		next = h.NextOffset()
		b = b[h.Length:]
	}
	return next
}

// getCounter counts GetRange calls and bytes per key.
type getCounter struct {
	mu    sync.Mutex
	gets  map[string]int
	bytes map[string]int64 // read through GETs, per key
}

func countGets(b objstore.Bucket) (objstore.Bucket, *getCounter) {
	gc := &getCounter{gets: map[string]int{}, bytes: map[string]int64{}}
	return objstore.Instrumented(b, objstore.ObserverFunc(func(_ context.Context, ev objstore.Event) {
		if ev.Op != objstore.OpGetRange {
			return
		}
		gc.mu.Lock()
		gc.gets[ev.Key]++
		gc.bytes[ev.Key] += ev.Bytes
		gc.mu.Unlock()
	})), gc
}

func (g *getCounter) bytesOf(key string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bytes[key]
}

func (g *getCounter) of(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gets[key]
}

// gateBucket holds GetRange calls that gate selects until the gate's
// channel closes or the call's ctx ends, and records cancellations.
type gateBucket struct {
	objstore.Bucket
	gate func(key string, off int64) <-chan struct{}

	mu        sync.Mutex
	cancelled int
	waiting   int
}

func (g *gateBucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	if ch := g.gate(key, off); ch != nil {
		g.mu.Lock()
		g.waiting++
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			g.cancelled++
			g.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	return g.Bucket.GetRange(ctx, key, off, length)
}

func (g *gateBucket) counts() (waiting, cancelled int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting, g.cancelled
}

// batchInOneChunk returns a batch near the given fraction of the segment
// that lies inside one chunk, as does the index entry a read of it starts
// from, so that reading it touches exactly one chunk.
func (s *testSeg) batchInOneChunk(t testing.TB, chunk int, frac float64) batchPos {
	t.Helper()
	for i := int(float64(len(s.batches)) * frac); i < len(s.batches); i++ {
		b := s.batches[i]
		_, anchor, _ := indexLookup(s.index, uint32(b.base-s.base))
		k := b.pos / chunk
		if (b.pos+b.len-1)/chunk == k && int(anchor)/chunk == k {
			return b
		}
	}
	t.Fatal("no batch inside one chunk")
	return batchPos{}
}

// readJoined is ReadRemote with the parts joined, after checking that each
// part is non-empty and cannot be appended into.
func readJoined(c *Cache, ctx context.Context, rec catalog.Segment, offset int64, maxBytes int) ([]byte, error) {
	ps, err := c.ReadRemote(ctx, rec, offset, maxBytes)
	if err != nil || ps == nil {
		return nil, err
	}
	var all []byte
	for i, p := range ps {
		if len(p) == 0 || cap(p) != len(p) {
			return nil, fmt.Errorf("part %d of %d: %d bytes, capacity %d", i, len(ps), len(p), cap(p))
		}
		all = append(all, p...)
	}
	return all, nil
}
