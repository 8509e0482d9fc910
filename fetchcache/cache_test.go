package fetchcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// TestReadEveryOffset reads every offset of a segment, with chunk sizes
// from tiny (every batch spans chunks) to larger than the object, and
// compares with the segment bytes. Each chunk is fetched once.
func TestReadEveryOffset(t *testing.T) {
	s := buildSegment(t, 1000, 200<<10, 1)
	for _, chunk := range []int{100, 1000, 4096, 65536, 1 << 20} {
		for _, withIndex := range []bool{true, false} {
			t.Run(fmt.Sprintf("chunk=%d/index=%v", chunk, withIndex), func(t *testing.T) {
				mem, gets := countGets(objstore.NewMemBucket())
				key := segKey("every", s.base)
				rec := put(t, mem, key, s, withIndex)
				c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 16 << 20})
				for _, max := range []int{0, 1, 700, 5000, 1 << 20} {
					if chunk < 1000 && max > 5000 {
						continue // thousands of chunks per read: slow under -race, and nothing new
					}
					for off := s.base; off < s.end; off++ {
						checkRead(t, c, rec, s, off, max)
					}
				}
				chunks := (len(s.log) + chunk - 1) / chunk
				if n := gets.of(key); n != chunks {
					t.Errorf("%d GETs of the log for %d chunks", n, chunks)
				}
				if n := gets.of(IndexKey(key)); n != 1 {
					t.Errorf("%d GETs of the index", n)
				}
				st := c.Stats()
				if st.HitRatio() < 0.9 {
					t.Errorf("hit ratio %.3f: %+v", st.HitRatio(), st)
				}
				if st.BadIndexes != 0 || st.GetErrors != 0 || st.CorruptBatches != 0 {
					t.Errorf("stats %+v", st)
				}
			})
		}
	}
}

// TestReadBundle is TestReadEveryOffset for a bundled segment object: the
// same bytes from every offset, each chunk under the log fetched once, and
// the index taken from the object's tail in one GET. A chunk never serves
// bytes past the log's end.
func TestReadBundle(t *testing.T) {
	s := buildSegment(t, 1000, 200<<10, 1)
	for _, chunk := range []int{1000, 4096, 65536, 1 << 20} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			mem, gets := countGets(objstore.NewMemBucket())
			key := bundleKey("every", s.base)
			rec := putBundle(t, mem, key, s)
			c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 16 << 20, Readahead: -1})
			for _, max := range []int{0, 700, 5000, 1 << 20} {
				for off := s.base; off < s.end; off++ {
					checkRead(t, c, rec, s, off, max)
				}
			}
			if got := consume(t, c, rec, s.base, 1<<20); !bytes.Equal(got, s.log) {
				t.Fatalf("consumed %d bytes, the log has %d", len(got), len(s.log))
			}
			chunks := (len(s.log) + chunk - 1) / chunk
			if n := gets.of(key); n != chunks+1 {
				t.Errorf("%d GETs of the object for %d chunks and the index", n, chunks)
			}
			if st := c.Stats(); st.BadIndexes != 0 || st.GetErrors != 0 || st.CorruptBatches != 0 || st.IndexMisses != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestBundleBadTail: a bundle whose tail does not check out is read from
// its first batch on, correctly; a record whose log length cannot be the
// object's is refused by name.
func TestBundleBadTail(t *testing.T) {
	s := buildSegment(t, 0, 60<<10, 9)
	mem := objstore.NewMemBucket()
	key := bundleKey("badtail", 0)
	rec := putBundle(t, mem, key, s)
	obj := readObject(t, mem, key)
	obj[len(s.log)+3] ^= 0xff // inside the index: the trailer's CRC catches it
	if _, err := mem.Put(context.Background(), key, bytes.NewReader(obj), int64(len(obj))); err != nil {
		t.Fatal(err)
	}
	c := newCache(t, mem, Options{ChunkSize: 4096, MaxBytes: 1 << 20})
	for off := s.base; off < s.end; off += 5 {
		checkRead(t, c, rec, s, off, 3000)
	}
	if st := c.Stats(); st.BadIndexes != 1 || st.CorruptBatches != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, bytes := range []int64{rec.ObjectSize, rec.ObjectSize - segobj.TrailerSize + 1, -1} {
		bad := rec
		bad.Bytes = bytes
		if _, err := readJoined(c, context.Background(), bad, 0, 100); !errors.Is(err, segobj.ErrBadObject) || !strings.Contains(err.Error(), key) {
			t.Errorf("record with Bytes %d: %v", bytes, err)
		}
	}
}

func readObject(t *testing.T, b objstore.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.GetRange(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConsumeSegment reads a segment as a consumer does and gets back
// exactly the log, whole batches every time.
func TestConsumeSegment(t *testing.T) {
	s := buildSegment(t, 0, 300<<10, 2)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("consume", 0), s, true)
	c := newCache(t, mem, Options{ChunkSize: 8192, MaxBytes: 1 << 20})
	for _, max := range []int{1, 1000, 10000, 1 << 20} {
		if got := consume(t, c, rec, 0, max); !bytes.Equal(got, s.log) {
			t.Fatalf("max %d: consumed %d bytes, log has %d", max, len(got), len(s.log))
		}
	}
}

// TestObjectEnd: a range running past the object is cut at its end, and a
// record without ObjectSize learns it with one Head.
func TestObjectEnd(t *testing.T) {
	s := buildSegment(t, 0, 50<<10, 3)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("end", 0), s, true)
	c := newCache(t, mem, Options{ChunkSize: 4096, MaxBytes: 1 << 20})
	last := s.batches[len(s.batches)-1]
	got, err := readJoined(c, context.Background(), rec, last.base, 10<<20)
	if err != nil || !bytes.Equal(got, s.log[last.pos:]) {
		t.Fatalf("last batch: %d bytes, %v", len(got), err)
	}
	if got := consume(t, c, rec, 0, 10<<20); !bytes.Equal(got, s.log) {
		t.Fatalf("whole object: %d bytes", len(got))
	}

	rec.ObjectSize = 0
	for off := s.base; off < s.end; off += 7 {
		checkRead(t, c, rec, s, off, 3000)
	}
}

func TestBadRequests(t *testing.T) {
	s := buildSegment(t, 100, 10<<10, 4)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("bad", 100), s, true)
	c := newCache(t, mem, Options{ChunkSize: 4096, MaxBytes: 1 << 20})
	ctx := context.Background()
	for _, off := range []int64{99, s.end, s.end + 10} {
		if _, err := readJoined(c, ctx, rec, off, 100); !errors.Is(err, logstore.ErrOffsetOutOfRange) {
			t.Errorf("offset %d: %v", off, err)
		}
	}
	noKey := rec
	noKey.ObjectKey = ""
	if _, err := readJoined(c, ctx, noKey, 100, 100); !errors.Is(err, ErrNotRemote) {
		t.Errorf("no object key: %v", err)
	}
	// The record says the segment goes further than the object holds.
	long := rec
	long.EndOffset = s.end + 50
	if _, err := readJoined(c, ctx, long, s.end+10, 100); !errors.Is(err, logstore.ErrCorruptSegment) {
		t.Errorf("offset past the object's batches: %v", err)
	}
	// Without an end offset in the record, that is just "nothing there".
	long.EndOffset = 0
	if b, err := readJoined(c, ctx, long, s.end+10, 100); err != nil || b != nil {
		t.Errorf("offset past the object's batches, no end: %d bytes, %v", len(b), err)
	}
}

// TestUnusableIndex: a malformed index, and a well-formed one that is not
// this log's, cost a longer scan but never a wrong answer.
func TestUnusableIndex(t *testing.T) {
	s := buildSegment(t, 500, 100<<10, 5)
	cases := map[string][]byte{
		"odd size":   append(bytes.Clone(s.index), 1, 2, 3),
		"unordered":  append(bytes.Clone(s.index[8:16]), s.index[:8]...),
		"past end":   binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(len(s.log)+5)),
		"wrong rels": shiftRels(s.index, 1),
		"empty":      {},
	}
	for name, idx := range cases {
		t.Run(name, func(t *testing.T) {
			mem := objstore.NewMemBucket()
			key := segKey("idx", s.base)
			rec := put(t, mem, key, s, false)
			if _, err := mem.Put(context.Background(), IndexKey(key), bytes.NewReader(idx), int64(len(idx))); err != nil {
				t.Fatal(err)
			}
			c := newCache(t, mem, Options{ChunkSize: 4096, MaxBytes: 1 << 20})
			for off := s.base; off < s.end; off += 3 {
				checkRead(t, c, rec, s, off, 2000)
			}
			if want := int64(1); name != "empty" && c.Stats().BadIndexes != want {
				t.Errorf("BadIndexes %d", c.Stats().BadIndexes)
			}
		})
	}
}

func shiftRels(idx []byte, by uint32) []byte {
	out := bytes.Clone(idx)
	for i := 0; i < len(out); i += 8 {
		binary.BigEndian.PutUint32(out[i:], binary.BigEndian.Uint32(out[i:])+by)
	}
	return out
}

// TestCorruptData: a header that does not parse and a batch whose CRC does
// not match are reported as ErrCorruptSegment naming the object; batches
// before a bad one are still served; a fixed object reads fine at once,
// because the bad chunks were not kept.
func TestCorruptData(t *testing.T) {
	s := buildSegment(t, 0, 60<<10, 6)
	bad := len(s.batches) / 2
	bp := s.batches[bad]
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		spoil func([]byte)
	}{
		{"magic", func(b []byte) { b[bp.pos+16] = 7 }},
		{"length", func(b []byte) { binary.BigEndian.PutUint32(b[bp.pos+8:], 3) }},
		{"crc", func(b []byte) { b[bp.pos+bp.len-1] ^= 0xff }},
		{"base offset", func(b []byte) { binary.BigEndian.PutUint64(b[bp.pos:], 1<<40) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := objstore.NewMemBucket()
			key := segKey("corrupt", 0)
			spoilt := bytes.Clone(s.log)
			tc.spoil(spoilt)
			rec := put(t, mem, key, &testSeg{log: spoilt, index: s.index, base: s.base, end: s.end}, true)
			c := newCache(t, mem, Options{ChunkSize: 1000, MaxBytes: 1 << 20, Readahead: -1})

			_, err := readJoined(c, ctx, rec, bp.base, 100)
			if !errors.Is(err, logstore.ErrCorruptSegment) || !strings.Contains(err.Error(), key) {
				t.Fatalf("bad batch: %v", err)
			}
			// The batch before it comes back without it, even when more
			// was asked.
			prev := s.batches[bad-1]
			got, err := readJoined(c, ctx, rec, prev.base, 1<<20)
			want := s.expect(prev.base, 1<<20, c.chunkSize)
			if len(want) > bp.pos-prev.pos {
				want = want[:bp.pos-prev.pos]
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("batch before the bad one: %d bytes, want %d, %v", len(got), len(want), err)
			}
			if c.Stats().CorruptBatches == 0 {
				t.Errorf("no corrupt batch counted")
			}

			// Repair the object: reads fetch it again. The first may still
			// meet a chunk under the bad batch that a read of the batch
			// before it fetched but never served; it fails and drops it.
			rec = put(t, mem, key, s, true)
			if _, err := readJoined(c, ctx, rec, bp.base, 100); err != nil && !errors.Is(err, logstore.ErrCorruptSegment) {
				t.Fatalf("first read after the repair: %v", err)
			}
			checkRead(t, c, rec, s, bp.base, 100)
			checkRead(t, c, rec, s, prev.base, 1<<20)
		})
	}
}

// TestFaultyBucket: cut connections, truncated bodies and tiny reads are
// retried into byte-identical results; corrupted bodies are never served.
func TestFaultyBucket(t *testing.T) {
	s := buildSegment(t, 0, 100<<10, 7)
	ctx := context.Background()
	t.Run("short reads", func(t *testing.T) {
		mem := objstore.NewMemBucket()
		rec := put(t, mem, segKey("short", 0), s, true)
		fb := objstore.NewFaultBucket(mem, objstore.FaultConfig{Seed: 1, Ops: []objstore.Op{objstore.OpGetRange},
			ShortReadRate: 0.3, TruncateRate: 0.2, ChopReads: true})
		c := newCache(t, fb, Options{ChunkSize: 4096, MaxBytes: 1 << 20,
			Retry: objstore.RetryPolicy{MaxAttempts: 50, InitialBackoff: time.Microsecond, MaxBackoff: time.Microsecond}})
		for off := s.base; off < s.end; off += 2 {
			checkRead(t, c, rec, s, off, 3000)
		}
		if st := c.Stats(); st.Retries == 0 || fb.Injected() == 0 {
			t.Errorf("no fault met: %+v", st)
		}
	})
	t.Run("corruption", func(t *testing.T) {
		mem := objstore.NewMemBucket()
		rec := put(t, mem, segKey("flip", 0), s, true)
		fb := objstore.NewFaultBucket(mem, objstore.FaultConfig{Seed: 2, Ops: []objstore.Op{objstore.OpGetRange}, CorruptRate: 0.3})
		// A small cache, so chunks are fetched (and corrupted) again and again.
		c := newCache(t, fb, Options{ChunkSize: 2048, MaxBytes: 16 << 10, ScanBytes: 3 * 2048, IndexBytes: 8 << 10})
		failed, served, epochOnly := 0, 0, 0
		for round := 0; round < 3; round++ {
			for off := s.base; off < s.end; off++ {
				got, err := readJoined(c, ctx, rec, off, 5000)
				if err != nil {
					failed++
					continue
				}
				i := s.batchAt(off)
				want := s.log[s.batches[i].pos:]
				if len(got) == 0 || len(got) > len(want) || lastNext(t, got) <= off {
					t.Fatalf("offset %d: served %d bytes that are not whole batches from %d", off, len(got), off)
				}
				want = want[:len(got)]
				if !bytes.Equal(got, want) {
					// The leader epoch is the one field no check covers
					// (see finish); every other byte must be the log's.
					if !bytes.Equal(maskEpochs(got), maskEpochs(want)) {
						t.Fatalf("offset %d: served %d bytes that are not the log's", off, len(got))
					}
					epochOnly++
				}
				served++
			}
		}
		if failed == 0 || served == 0 || c.Stats().CorruptBatches == 0 {
			t.Errorf("failed %d, served %d, stats %+v", failed, served, c.Stats())
		}
		t.Logf("%d reads failed, %d served (%d with a flipped leader epoch), %d faults injected", failed, served, epochOnly, fb.Injected())
	})
}

// TestBucketErrors: a failing GET names the object and the operation,
// keeps the bucket's error in the chain, is not cached, and does not stop
// other objects from being read.
func TestBucketErrors(t *testing.T) {
	s := buildSegment(t, 0, 30<<10, 8)
	mem := objstore.NewMemBucket()
	keyA, keyB := segKey("a", 0), segKey("b", 0)
	recA, recB := put(t, mem, keyA, s, true), put(t, mem, keyB, s, true)
	fb := objstore.NewFaultBucket(mem, objstore.FaultConfig{})
	c := newCache(t, fb, Options{ChunkSize: 4096, MaxBytes: 1 << 20,
		Retry: objstore.RetryPolicy{InitialBackoff: time.Millisecond}})
	ctx := context.Background()

	failOn := func(key string, err error) {
		fb.SetConfig(objstore.FaultConfig{Hook: func(_ context.Context, op objstore.Op, k string) error {
			if op == objstore.OpGetRange && k == key {
				return err
			}
			return nil
		}})
	}
	failOn(keyA, objstore.ErrAccessDenied)
	_, err := readJoined(c, ctx, recA, 0, 100)
	if !errors.Is(err, objstore.ErrAccessDenied) || !strings.Contains(err.Error(), keyA) || !strings.Contains(err.Error(), string(objstore.OpGetRange)) {
		t.Fatalf("access denied: %v", err)
	}
	if st := c.Stats(); st.Retries != 0 || st.GetErrors == 0 {
		t.Errorf("a permanent error was retried: %+v", st)
	}
	checkRead(t, c, recB, s, 5, 1000)

	// Transient errors are retried, then reported.
	failOn(keyA, fmt.Errorf("503: %w", objstore.ErrTransient))
	if _, err = readJoined(c, ctx, recA, 0, 100); !errors.Is(err, objstore.ErrTransient) {
		t.Fatalf("transient: %v", err)
	}
	if st := c.Stats(); st.Retries != 2 {
		t.Errorf("retries %d, want 2", st.Retries)
	}

	// The index fails: the read fails the same way, naming the index.
	keyD := segKey("d", 0)
	recD := put(t, mem, keyD, s, true)
	failOn(IndexKey(keyD), objstore.ErrAccessDenied)
	if _, err = readJoined(c, ctx, recD, 0, 100); !errors.Is(err, objstore.ErrAccessDenied) || !strings.Contains(err.Error(), IndexKey(keyD)) {
		t.Fatalf("index: %v", err)
	}

	// Nothing was cached from the failures.
	fb.SetConfig(objstore.FaultConfig{})
	checkRead(t, c, recA, s, 0, 100)
	checkRead(t, c, recD, s, 0, 100)

	// An object deleted behind our back.
	recC := put(t, mem, segKey("c", 0), s, false)
	if err := mem.Delete(ctx, recC.ObjectKey); err != nil {
		t.Fatal(err)
	}
	if _, err = readJoined(c, ctx, recC, 0, 100); !objstore.IsNotFound(err) {
		t.Fatalf("deleted object: %v", err)
	}
}

// TestCoalescing: concurrent misses on one chunk send one GET.
func TestCoalescing(t *testing.T) {
	s := buildSegment(t, 0, 200<<10, 9)
	counted, gets := countGets(objstore.NewMemBucket())
	key := segKey("co", 0)
	rec := put(t, counted, key, s, true)
	slow := objstore.NewFaultBucket(counted, objstore.FaultConfig{Ops: []objstore.Op{objstore.OpGetRange}, Latency: 50 * time.Millisecond})
	c := newCache(t, slow, Options{ChunkSize: 1 << 20, MaxBytes: 8 << 20, MaxConcurrentGets: 64})
	const readers = 32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, readers)
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			off := s.batches[(10+i)%len(s.batches)].base
			got, err := readJoined(c, context.Background(), rec, off, 500)
			if err == nil && !bytes.Equal(got, s.expect(off, 500, c.chunkSize)) {
				err = fmt.Errorf("offset %d: wrong bytes", off)
			}
			errs <- err
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if gets.of(key) != 1 || gets.of(IndexKey(key)) != 1 {
		t.Fatalf("%d log GETs and %d index GETs for %d concurrent readers", gets.of(key), gets.of(IndexKey(key)), readers)
	}
	st := c.Stats()
	if st.Hits+st.Misses != readers || st.CoalescedWaits == 0 {
		t.Fatalf("stats %+v", st)
	}
	t.Logf("coalesced waits %d (chunk and index), hits %d, misses %d", st.CoalescedWaits, st.Hits, st.Misses)
}

// TestCancel: a reader whose ctx ends returns at once; the GET is cancelled
// when no reader is left waiting, and carries on while one is.
func TestCancel(t *testing.T) {
	s := buildSegment(t, 0, 20<<10, 10)
	mem := objstore.NewMemBucket()
	key := segKey("cancel", 0)
	rec := put(t, mem, key, s, true)
	release := make(chan struct{})
	gb := &gateBucket{Bucket: mem, gate: func(k string, _ int64) <-chan struct{} {
		if k == key {
			return release
		}
		return nil
	}}
	counted, gets := countGets(gb)
	c := newCache(t, counted, Options{ChunkSize: 64 << 10, MaxBytes: 1 << 20})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := readJoined(c, ctx, rec, 3, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed out read: %v", err)
	}
	waitFor(t, func() bool { _, n := gb.counts(); return n == 1 }, "the abandoned GET to be cancelled")

	// Two readers on one GET; the first gives up, the second gets the data.
	ctx1, cancel1 := context.WithCancel(context.Background())
	done1, done2 := make(chan error, 1), make(chan error, 1)
	go func() { _, err := readJoined(c, ctx1, rec, 3, 100); done1 <- err }()
	go func() {
		got, err := readJoined(c, context.Background(), rec, 5, 100)
		if err == nil && !bytes.Equal(got, s.expect(5, 100, c.chunkSize)) {
			err = errors.New("wrong bytes")
		}
		done2 <- err
	}()
	waitFor(t, func() bool {
		c.flights.mu.Lock()
		defer c.flights.mu.Unlock()
		f := c.flights.m[c.chunkKey(key, 0)]
		return f != nil && f.waiters == 2
	},
		"both readers to wait on one GET")
	cancel1()
	if err := <-done1; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled reader: %v", err)
	}
	close(release)
	if err := <-done2; err != nil {
		t.Fatal(err)
	}
	if n := gets.of(key); n != 2 {
		t.Fatalf("%d GETs: want the cancelled one and the shared one", n)
	}
}

// TestClose: reads in progress fail, later ones get ErrClosed, and nothing
// keeps running (goleak checks at the end of the package).
func TestClose(t *testing.T) {
	s := buildSegment(t, 0, 20<<10, 11)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("close", 0), s, true)
	gb := &gateBucket{Bucket: mem, gate: func(string, int64) <-chan struct{} { return make(chan struct{}) }}
	c, err := New(gb, Options{ChunkSize: 4096, MaxBytes: 1 << 20, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readJoined(c, context.Background(), rec, 0, 100); done <- err }()
	waitFor(t, func() bool { n, _ := gb.counts(); return n == 1 }, "the read to start its GET")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("read in progress succeeded after Close")
	}
	if _, err := readJoined(c, context.Background(), rec, 0, 100); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentReaders: many readers over several objects with a cache
// much smaller than the data, so chunks are evicted while being read.
func TestConcurrentReaders(t *testing.T) {
	mem := objstore.NewMemBucket()
	type obj struct {
		s   *testSeg
		rec catalog.Segment
	}
	var objs []obj
	for i := 0; i < 4; i++ {
		s := buildSegment(t, int64(i)*100000, 150<<10, uint64(20+i))
		objs = append(objs, obj{s, put(t, mem, segKey(fmt.Sprintf("cc%d", i), s.base), s, true)})
	}
	c := newCache(t, mem, Options{ChunkSize: 8192, MaxBytes: 160 << 10, ScanBytes: 48 << 10, IndexBytes: 16 << 10, MaxConcurrentGets: 3, Readahead: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			for i := 0; i < 300; i++ {
				o := objs[rng.IntN(len(objs))]
				off := o.s.base + rng.Int64N(o.s.end-o.s.base)
				max := rng.IntN(20000)
				got, err := readJoined(c, context.Background(), o.rec, off, max)
				if err == nil && !bytes.Equal(got, o.s.expect(off, max, c.chunkSize)) {
					err = fmt.Errorf("offset %d max %d: wrong bytes", off, max)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Evictions == 0 {
		t.Errorf("no evictions: %+v", st)
	}
	t.Logf("stats %+v", st)
}

func TestOptions(t *testing.T) {
	mem := objstore.NewMemBucket()
	for _, o := range []Options{
		{ChunkSize: 10},
		{MaxBytes: -1},
		{ChunkSize: 4096, MaxBytes: 8192},
		{ChunkSize: 4096, MaxBytes: 1 << 20, ScanBytes: 4096, Readahead: 2},
		{MaxConcurrentGets: -1},
		{MaxBytesPerSec: -1},
	} {
		if _, err := New(mem, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := New(nil, Options{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil bucket: %v", err)
	}
	c, err := New(mem, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := c.opts
	if o.ChunkSize != DefaultChunkSize || o.MaxBytes != DefaultMaxBytes || o.MaxConcurrentGets != DefaultMaxConcurrentGets ||
		o.Readahead != DefaultReadahead || o.ScanBytes != DefaultMaxBytes/8*3 || o.IndexBytes != DefaultMaxBytes/16 {
		t.Errorf("defaults %+v", o)
	}
}

// TestRateLimit: MaxBytesPerSec bounds the bytes cold GETs ask for. Only a
// lower bound on time is checked, which a slow machine cannot break.
func TestRateLimit(t *testing.T) {
	s := buildSegment(t, 0, 100<<10, 12)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("rate", 0), s, false)
	c := newCache(t, mem, Options{ChunkSize: 16 << 10, MaxBytes: 1 << 20, MaxBytesPerSec: 160 << 10, Readahead: -1})
	start := time.Now()
	if got := consume(t, c, rec, 0, 80<<10); len(got) < 80<<10 {
		t.Fatalf("read %d bytes", len(got))
	}
	// 80 KiB or more, less a 16 KiB burst, at 160 KiB/s.
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Fatalf("read %d bytes in %v", c.Stats().BytesFetched, d)
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// maskEpochs zeroes the partition leader epoch of every batch in b.
func maskEpochs(b []byte) []byte {
	b = bytes.Clone(b)
	for p := 0; len(b)-p >= logstore.BatchHeaderSize; {
		h, err := logstore.ParseBatchHeader(b[p:])
		if err != nil {
			break
		}
		clear(b[p+12 : p+16])
		p += int(h.Length)
	}
	return b
}

// TestReadInPlace: reads are served from the cached chunks themselves (two
// reads share memory), one part per chunk, none of which can be appended
// into. A read whose first batch lies in one chunk ends at that chunk; one
// whose first batch straddles chunks is a part of each, not a copy.
func TestReadInPlace(t *testing.T) {
	const chunk = 16 << 10
	s := buildSegment(t, 0, 64<<10, 21)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("inplace", 0), s, true)
	c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 1 << 20, Readahead: -1})
	ctx := context.Background()
	straddle := -1
	for i, b := range s.batches {
		if b.pos/chunk != (b.pos+b.len-1)/chunk {
			straddle = i
			break
		}
	}
	if straddle < 0 {
		t.Fatal("no batch straddles a chunk boundary")
	}
	for _, tc := range []struct {
		offset int64
		parts  int
	}{{0, 1}, {s.batches[straddle].base, 2}} {
		a, err := c.ReadRemote(ctx, rec, tc.offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b, err := c.ReadRemote(ctx, rec, tc.offset, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) != tc.parts || len(b) != tc.parts {
			t.Fatalf("offset %d: %d and %d parts, want %d", tc.offset, len(a), len(b), tc.parts)
		}
		var all []byte
		for i := range a {
			if len(a[i]) == 0 || &a[i][0] != &b[i][0] {
				t.Fatalf("offset %d part %d: two reads of a cached chunk did not share its memory", tc.offset, i)
			}
			if len(a[i]) > chunk || cap(a[i]) != len(a[i]) {
				t.Fatalf("offset %d part %d: %d bytes (cap %d) from a chunk of %d", tc.offset, i, len(a[i]), cap(a[i]), chunk)
			}
			all = append(all, a[i]...)
		}
		if !bytes.Equal(all, s.expect(tc.offset, 1<<20, chunk)) {
			t.Fatalf("offset %d: wrong bytes", tc.offset)
		}
	}
}

// TestPrealloc: with Options.Prealloc the cache starts with its budget's
// chunks allocated; whole chunks fetched take from them (the reads still
// return the object's bytes), a short tail chunk does not, and Close lets
// the rest go.
func TestPrealloc(t *testing.T) {
	const chunk = 16 << 10
	s := buildSegment(t, 0, 100<<10, 22) // 6 whole chunks and a short tail
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("prealloc", 0), s, true)
	opts := Options{ChunkSize: chunk, MaxBytes: 1 << 20, Readahead: -1, Prealloc: true}
	c := newCache(t, mem, opts)
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	full := int((o.MaxBytes - o.IndexBytes) / chunk)
	if n := c.spare.left(); n != full {
		t.Fatalf("%d chunks reserved, want %d", n, full)
	}
	if n := c.HeldBytes(); n != int64(full*chunk) {
		t.Errorf("a fresh cache holds %d bytes, its reserve %d", n, full*chunk)
	}
	if got := consume(t, c, rec, 0, 1<<20); !bytes.Equal(got, s.log) {
		t.Fatalf("consumed %d bytes, log has %d", len(got), len(s.log))
	}
	whole := len(s.log) / chunk
	if len(s.log)%chunk == 0 {
		t.Fatal("the test segment needs a short tail chunk")
	}
	if n := c.spare.left(); n != full-whole {
		t.Errorf("%d chunks left in the reserve after fetching %d whole ones and a tail, want %d", n, whole, full-whole)
	}
	c.Close()
	if n := c.spare.left(); n != 0 {
		t.Errorf("%d reserved chunks kept after Close", n)
	}
	if c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 1 << 20}); c.spare != nil {
		t.Error("a reserve without Prealloc")
	} else if n := c.HeldBytes(); n != 0 {
		t.Errorf("a fresh cache without Prealloc holds %d bytes", n)
	}
}
