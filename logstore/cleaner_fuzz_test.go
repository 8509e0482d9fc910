package logstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// FuzzCleanBatches: the cleaner's reading of stored batches never panics;
// what it accepts as records it can rewrite, keeping any subset, into a
// batch that the checks of a stored batch accept and that holds exactly
// the records kept, at the same offsets; and what the segment reader,
// fed the same bytes as a file, takes, ValidateStoredBatches takes too.
func FuzzCleanBatches(f *testing.F) {
	f.Add(logtest.Batch(1, logtest.Record{Key: []byte("k"), Value: []byte("v")}, logtest.Record{Key: []byte("k2")}), uint8(1))
	f.Add(logtest.Filler(7, 3, 20, 1), uint8(2))
	f.Add(append(logtest.Batch(5, logtest.Record{Key: []byte("a"), Value: []byte("b")}), logtest.Batch(6, logtest.Record{Value: []byte("c")})...), uint8(0))
	f.Add([]byte{}, uint8(0))
	f.Add(make([]byte, BatchHeaderSize), uint8(3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, keep uint8) {
		_, _, verr := ValidateStoredBatches(b)
		path := filepath.Join(dir, "seg.log")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		base := int64(-1 << 62)
		if len(b) >= 8 {
			h, _ := ParseBatchHeader(b)
			base = h.BaseOffset
		}
		rd := newSegReader(fh, path, int64(len(b)), base, make([]byte, 64), nil)
		var rerr error
		var enc encoder
		n := 0
		for {
			raw, h, err := rd.batch()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rerr = err
				break
			}
			n++
			recs, _, err := batchRecords(raw, &h, nil, nil)
			if err != nil {
				rerr = err
				break
			}
			var kept []cleanRecord
			for i, r := range recs {
				if keep>>(i%8)&1 == 1 {
					kept = append(kept, r)
				}
			}
			out, err := rewriteBatch(nil, raw, &h, kept, &enc)
			if err != nil {
				t.Fatalf("rewrite: %v", err)
			}
			h2, err := ValidateStoredBatch(out)
			if err != nil {
				t.Fatalf("rewritten batch rejected: %v", err)
			}
			if h2.BaseOffset != h.BaseOffset || h2.LastOffsetDelta != h.LastOffsetDelta || h2.ProducerID != h.ProducerID ||
				h2.BaseSequence != h.BaseSequence || int(h2.RecordCount) != len(kept) {
				t.Fatalf("rewrite changed the header: %+v, was %+v", h2, h)
			}
			got, _, err := batchRecords(out, &h2, nil, nil)
			if err != nil || len(got) != len(kept) {
				t.Fatalf("rewritten records: %d, %v; kept %d", len(got), err, len(kept))
			}
			for i := range got {
				if got[i].offDelta != kept[i].offDelta || !bytes.Equal(got[i].key, kept[i].key) || got[i].tombstone != kept[i].tombstone {
					t.Fatalf("record %d changed in the rewrite", i)
				}
			}
		}
		// What the segment reader takes whole, ValidateStoredBatches
		// takes too; the reader also wants offsets that go up, which a
		// follower's append checks on its own.
		if rerr == nil && n > 0 && verr != nil {
			t.Fatalf("segment reader: %d batches, %v; ValidateStoredBatches: %v", n, rerr, verr)
		}
	})
}
