package fetchcache

import (
	"bytes"
	"context"
	"testing"

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
