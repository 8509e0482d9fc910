package fetchcache

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// TestReadCached: a read that memory cannot serve reports a miss at once,
// even while every GET is held up, and reads nothing; once ReadRemote has
// brought the chunks in, ReadCached serves the same bytes from them. A
// consumer reading a whole segment through ReadCached, falling back to
// ReadRemote on each miss, gets the segment's bytes.
func TestReadCached(t *testing.T) {
	const chunk = 16 << 10
	mem := objstore.NewMemBucket()
	s := buildSegment(t, 0, 8*chunk, 91)
	rec := put(t, mem, segKey("rc", 0), s, true)
	release := make(chan struct{})
	gb := &gateBucket{Bucket: mem, gate: func(string, int64) <-chan struct{} { return release }}
	c := newCache(t, gb, Options{ChunkSize: chunk, Readahead: -1, MaxBytes: 4 << 20})

	b := s.batchInOneChunk(t, chunk, 0.5)
	if parts, ok, err := c.ReadCached(rec, b.base, 4096); ok || err != nil || parts != nil {
		t.Fatalf("cold cache: ReadCached = %d parts, ok %v, err %v; want a miss", len(parts), ok, err)
	}
	close(release)
	want, err := readJoined(c, context.Background(), rec, b.base, 4096)
	if err != nil {
		t.Fatal(err)
	}
	parts, ok, err := c.ReadCached(rec, b.base, 4096)
	if !ok || err != nil {
		t.Fatalf("after ReadRemote: ReadCached ok %v, err %v", ok, err)
	}
	if got := bytes.Join(parts, nil); !bytes.Equal(got, want) {
		t.Fatalf("ReadCached gave %d bytes, ReadRemote %d, or different ones", len(got), len(want))
	}
	if st := c.Stats(); st.CachedReads != 1 || st.CachedMisses != 1 {
		t.Fatalf("CachedReads %d, CachedMisses %d; want 1 and 1", st.CachedReads, st.CachedMisses)
	}

	var all []byte
	for off := rec.BaseOffset; off < rec.EndOffset; {
		parts, ok, err := c.ReadCached(rec, off, 6000)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if parts, err = c.ReadRemote(context.Background(), rec, off, 6000); err != nil {
				t.Fatal(err)
			}
		}
		got := bytes.Join(parts, nil)
		if len(got) == 0 {
			t.Fatalf("offset %d: empty read", off)
		}
		all = append(all, got...)
		off = lastNext(t, got)
	}
	if !bytes.Equal(all, s.log) {
		t.Fatalf("read %d bytes, the segment has %d", len(all), len(s.log))
	}
}

// TestVerifyAhead: batches of chunks readahead brought in are checked as
// the chunks land, and reads serve them without a CRC pass of their own;
// a batch spoilt in the bucket is still never served: the check on
// landing stops before it, and the read that reaches it reports it.
func TestVerifyAhead(t *testing.T) {
	const chunk = 16 << 10
	s := buildSegment(t, 0, 12*chunk, 93)
	opts := Options{ChunkSize: chunk, Readahead: 2, MaxBytes: 4 << 20}

	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("va", 0), s, true)
	c := newCache(t, mem, opts)
	if got := consume(t, c, rec, 0, 6000); !bytes.Equal(got, s.log) {
		t.Fatalf("read %d bytes, the segment has %d", len(got), len(s.log))
	}
	if st := c.Stats(); st.VerifiedAhead == 0 || st.CheckedAhead == 0 {
		t.Fatalf("VerifiedAhead %d, CheckedAhead %d: nothing checked on landing", st.VerifiedAhead, st.CheckedAhead)
	}

	// A batch inside chunk 6, well past where readahead starts.
	bp := s.batchInOneChunk(t, chunk, 0.5)
	spoilt := bytes.Clone(s.log)
	spoilt[bp.pos+bp.len-1] ^= 0xff
	mem2 := objstore.NewMemBucket()
	rec2 := put(t, mem2, segKey("va", 0), &testSeg{log: spoilt, index: s.index, base: s.base, end: s.end}, true)
	c2 := newCache(t, mem2, opts)
	var served []byte
	var err error
	for off := rec2.BaseOffset; off < rec2.EndOffset; {
		var got []byte
		if got, err = readJoined(c2, context.Background(), rec2, off, 6000); err != nil {
			break
		}
		served = append(served, got...)
		off = lastNext(t, got)
	}
	if !errors.Is(err, logstore.ErrCorruptSegment) {
		t.Fatalf("reading past the spoilt batch: %v", err)
	}
	if !bytes.Equal(served, s.log[:bp.pos]) {
		t.Fatalf("served %d bytes before the error, want the %d before the spoilt batch", len(served), bp.pos)
	}
	if c2.Stats().CheckedAhead == 0 {
		t.Fatalf("nothing served as checked ahead before the spoilt batch")
	}
}

// TestReadCachedCountsOnce: a ReadCached that finds one chunk of its read
// in memory and not the next gives up without counting a hit, as the
// ReadRemote that follows counts the hits on the chunks it uses.
func TestReadCachedCountsOnce(t *testing.T) {
	const chunk = 16 << 10
	mem := objstore.NewMemBucket()
	s := buildSegment(t, 0, 8*chunk, 95)
	rec := put(t, mem, segKey("rc1", 0), s, true)
	c := newCache(t, mem, Options{ChunkSize: chunk, Readahead: -1, MaxBytes: 4 << 20})
	// A batch over chunks k and k+1 whose index entry is in chunk k, and
	// a batch inside chunk k to bring that chunk in first.
	var over, in batchPos
	for _, b := range s.batches {
		k := b.pos / chunk
		_, anchor, _ := indexLookup(s.index, uint32(b.base-s.base))
		if int(anchor)/chunk != k {
			continue
		}
		if (b.pos+b.len-1)/chunk == k && over.len == 0 {
			in = b
		} else if (b.pos+b.len-1)/chunk == k+1 && in.len > 0 && in.pos/chunk == k {
			over = b
			break
		}
	}
	if over.len == 0 {
		t.Fatal("no batch over two chunks after one inside the first")
	}
	if _, err := readJoined(c, context.Background(), rec, in.base, 1); err != nil {
		t.Fatal(err)
	}
	before := c.Stats().Hits
	if _, ok, err := c.ReadCached(rec, over.base, 1); ok || err != nil {
		t.Fatalf("ReadCached of a batch half in memory: ok %v, err %v", ok, err)
	}
	// The ReadRemote that follows counts the hit; the attempt counted none.
	if hits := c.Stats().Hits - before; hits != 0 {
		t.Fatalf("the ReadCached that gave up left %d chunk hits counted, want 0", hits)
	}
	if _, err := readJoined(c, context.Background(), rec, over.base, 1); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyAcross: a batch over the boundary between two chunks of one
// readahead span is checked as the later chunk lands, and a read of it
// makes no CRC pass of its own; spoilt in the bucket, it is never served.
func TestVerifyAcross(t *testing.T) {
	const chunk = 16 << 10
	s := buildSegment(t, 0, 12*chunk, 97)
	// Readahead 4 fetches chunks 1-2 and 3-4 in a span each.
	opts := Options{ChunkSize: chunk, Readahead: 4, MaxBytes: 4 << 20}
	var over batchPos
	for _, b := range s.batches {
		if b.pos/chunk == 1 && (b.pos+b.len-1)/chunk == 2 {
			over = b
		}
	}
	if over.len == 0 {
		t.Fatal("no batch over chunks 1 and 2")
	}
	for _, spoil := range []bool{false, true} {
		log := s.log
		if spoil {
			log = bytes.Clone(s.log)
			log[over.pos+over.len-1] ^= 0xff
		}
		mem := objstore.NewMemBucket()
		rec := put(t, mem, segKey("vx", 0), &testSeg{log: log, index: s.index, base: s.base, end: s.end}, true)
		c := newCache(t, mem, opts)
		// The first batch: a read from the object's start sets readahead
		// off; then wait for chunks 1 and 2 to land.
		if _, err := readJoined(c, context.Background(), rec, rec.BaseOffset, 1); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); !c.scan.has(c.chunkKey(rec.ObjectKey, 1)) || !c.scan.has(c.chunkKey(rec.ObjectKey, 2)); {
			if time.Now().After(deadline) {
				t.Fatal("readahead did not bring chunks 1 and 2 in")
			}
			time.Sleep(time.Millisecond)
		}
		before := c.Stats().CheckedAhead
		got, err := readJoined(c, context.Background(), rec, over.base, 1)
		if spoil {
			if !errors.Is(err, logstore.ErrCorruptSegment) {
				t.Fatalf("spoilt batch over two chunks: %d bytes served, err %v", len(got), err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, s.log[over.pos:over.pos+over.len]) {
			t.Fatalf("batch over two chunks: %d bytes, err %v", len(got), err)
		}
		if n := c.Stats().CheckedAhead - before; n != 1 {
			t.Fatalf("the batch over chunks 1 and 2 was served with %d batches checked ahead, want 1", n)
		}
	}
}

// TestVerifyAheadNextBundle: a chunk of the next segment's bundle, which
// readahead finds by a List and whose log end is not known yet, has its
// whole batches checked as it lands, as a chunk of a bundle read by its
// record has.
func TestVerifyAheadNextBundle(t *testing.T) {
	const chunk = 16 << 10
	s := buildSegment(t, 0, 6*chunk, 99)
	mem := objstore.NewMemBucket()
	rec := putBundle(t, mem, bundleKey("vn", 0), s)
	c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 4 << 20})
	nx := &object{key: rec.ObjectKey, idxKey: IndexKey(rec.ObjectKey)}
	nx.setSize(rec.ObjectSize, chunk, 0) // as nextObject makes it
	x, err := c.fetchIndex(context.Background(), nx, false)
	if err != nil || !bytes.Equal(x, s.index) {
		t.Fatalf("index: %v", err)
	}
	c.idx.add(nx.idxKey, x, int64(len(x)))
	// The run from the first index entry in chunk 1 to its last whole batch.
	wantFrom, ok := entryAtOrAfter(s.index, chunk)
	if !ok || wantFrom >= 2*chunk {
		t.Fatal("no index entry in chunk 1")
	}
	wantTo := wantFrom
	for _, b := range s.batches {
		if int64(b.pos) == wantTo && b.pos+b.len <= 2*chunk {
			wantTo += int64(b.len)
		}
	}
	if from, to := c.verifyAhead(nx, 1, s.log[chunk:2*chunk]); from != wantFrom || to != wantTo {
		t.Fatalf("checked [%d, %d) of chunk 1, want [%d, %d)", from, to, wantFrom, wantTo)
	}
}
