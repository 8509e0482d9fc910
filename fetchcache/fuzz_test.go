package fetchcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd/objstore"
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

	mem := objstore.NewMemBucket()
	// No readahead: background GETs would make coverage vary from run to
	// run, and the fuzzer would keep minimising inputs that are not new.
	c, err := New(mem, Options{ChunkSize: 256, MaxBytes: 1 << 20, Readahead: -1, Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
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
		got, err := c.ReadRemote(ctx, rec, offset, maxBytes)
		if err != nil {
			if !errors.Is(err, logstore.ErrCorruptSegment) {
				t.Fatalf("error not marked corrupt: %v", err)
			}
			return
		}
		if got == nil {
			return
		}
		at := bytes.Index(log, got)
		if at < 0 {
			t.Fatalf("served %d bytes that are not in the object", len(got))
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
	})
}
