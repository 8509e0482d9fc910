package fetchcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// FuzzReadRemote feeds arbitrary objects (seeded with real segments and
// damaged ones) and indexes through ReadRemote: it must never panic or
// hang, and what it serves must be whole, valid batches that are the
// object's own bytes at a batch boundary.
func FuzzReadRemote(f *testing.F) {
	// Small seeds: the fuzzer minimises every new input byte by byte.
	s := buildSegment(f, 10, 3<<10, 99)
	f.Add(s.log, s.index, int64(10), int64(0), 1000)
	f.Add(s.log, s.index, int64(10), s.batches[2].base, 1)
	f.Add(s.log, []byte{}, int64(10), s.batches[len(s.batches)-1].base, 1<<20)
	spoilt := bytes.Clone(s.log)
	spoilt[s.batches[1].pos+30] ^= 1
	f.Add(spoilt, s.index, int64(10), s.batches[0].base, 5000)
	binary.BigEndian.PutUint32(spoilt[s.batches[2].pos+8:], 1<<30)
	f.Add(spoilt, s.index, int64(10), s.batches[2].base, 5000)
	f.Add(s.log[:len(s.log)-10], s.index, int64(10), s.batches[len(s.batches)-1].base, 100)
	f.Add([]byte{}, []byte{}, int64(0), int64(0), 0)

	mem, c := fuzzCache(f)
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, log, index []byte, base, offset int64, maxBytes int) {
		// Bounded sizes: without a usable index a read scans headers from
		// byte 0 in small chunks, and the mutator can grow inputs to
		// megabytes, which would make each run slow without finding more.
		if len(log) == 0 || len(log) > 64<<10 || len(index) > 16<<10 || base < 0 || offset < base || offset-base > 1<<20 || maxBytes > 64<<10 {
			return
		}
		// A fresh key per input: objects are immutable under their key.
		n++
		key := segKey("fuzz", int64(n))
		rec := put(t, mem, key, &testSeg{log: log}, false)
		if _, err := mem.Put(ctx, IndexKey(key), bytes.NewReader(index), int64(len(index))); err != nil {
			t.Fatal(err)
		}
		rec.BaseOffset, rec.EndOffset = base, 0
		got, err := readJoined(c, ctx, rec, offset, maxBytes)
		if err != nil {
			if !errors.Is(err, logstore.ErrCorruptSegment) {
				t.Fatalf("error not marked corrupt: %v", err)
			}
			return
		}
		if got == nil {
			return
		}
		checkServed(t, log, got, offset)
	})
}

// checkServed checks what a fuzzed read served: bytes of log, whole valid
// batches in offset order, the first holding offset or a later one.
func checkServed(t *testing.T, log, got []byte, offset int64) {
	t.Helper()
	at := bytes.Index(log, got)
	if at < 0 {
		t.Fatalf("served %d bytes that are not in the log", len(got))
	}
	want := int64(-1)
	for b := got; len(b) > 0; {
		h, err := logstore.ValidateBatch(b[:min(len(b), max(0, int(binary.BigEndian.Uint32(b[8:min(len(b), 12)]))+12))])
		if err != nil {
			t.Fatalf("served an invalid batch: %v", err)
		}
		if want >= 0 && h.BaseOffset != want {
			t.Fatalf("served offsets %d after %d", h.BaseOffset, want)
		}
		want = h.NextOffset()
		b = b[h.Length:]
	}
	first, _ := logstore.ParseBatchHeader(got)
	if first.LastOffset() < offset {
		t.Fatalf("served batch ending at %d for offset %d", first.LastOffset(), offset)
	}
}

// FuzzReadBundle is FuzzReadRemote for bundled objects (tierd/segobj),
// with the record's log length fuzzed too: whatever the object's tail and
// the record say, a read serves only whole, valid batches from the log
// part, or an error marked corrupt or bad-object.
func FuzzReadBundle(f *testing.F) {
	s := buildSegment(f, 10, 3<<10, 99)
	tidx := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	obj := segobj.NewTrailer(int64(len(s.log)), s.index, tidx).Append(slices.Concat(s.log, s.index, tidx))
	f.Add(obj, int64(len(s.log)), int64(10), int64(0), 1000)
	f.Add(obj, int64(len(s.log)), int64(10), s.batches[len(s.batches)-1].base, 1<<20)
	f.Add(obj, int64(len(s.log)-1), int64(10), s.batches[1].base, 100)
	spoilt := bytes.Clone(obj)
	spoilt[len(s.log)+2] ^= 1
	f.Add(spoilt, int64(len(s.log)), int64(10), s.batches[2].base, 5000)
	f.Add(obj[:len(obj)-1], int64(len(s.log)), int64(10), int64(10), 5000)

	mem, c := fuzzCache(f)
	ctx := context.Background()
	n := 0
	f.Fuzz(func(t *testing.T, obj []byte, logBytes, base, offset int64, maxBytes int) {
		if len(obj) == 0 || len(obj) > 80<<10 || base < 0 || offset < base || offset-base > 1<<20 || maxBytes > 64<<10 {
			return
		}
		n++
		key := bundleKey("fuzz", int64(n))
		if _, err := mem.Put(ctx, key, bytes.NewReader(obj), int64(len(obj))); err != nil {
			t.Fatal(err)
		}
		rec := catalog.Segment{Topic: "t", BaseOffset: base, Bytes: logBytes, State: catalog.StateRemote,
			ObjectKey: key, ObjectSize: int64(len(obj))}
		got, err := readJoined(c, ctx, rec, offset, maxBytes)
		if err != nil {
			if !errors.Is(err, logstore.ErrCorruptSegment) && !errors.Is(err, segobj.ErrBadObject) {
				t.Fatalf("error not marked corrupt: %v", err)
			}
			return
		}
		if got != nil {
			checkServed(t, obj[:logBytes], got, offset)
		}
	})
}

// fuzzCache is the cache the fuzz targets read through, over an in-memory
// bucket, closed when the target ends. No readahead: background GETs would
// make coverage vary from run to run, and the fuzzer would keep minimising
// inputs that are not new.
func fuzzCache(f *testing.F) (objstore.Bucket, *Cache) {
	mem := objstore.NewMemBucket()
	c, err := New(mem, Options{ChunkSize: 256, MaxBytes: 1 << 20, Readahead: -1, Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	return mem, c
}
