package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// compress encodes records (the bytes after a batch header) with codec, as
// producers do.
func compress(t testing.TB, codec int, records []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	switch codec {
	case 0:
		return append([]byte(nil), records...)
	case 1:
		w := gzip.NewWriter(&out)
		w.Write(records)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case 2:
		return snappy.Encode(nil, records)
	case 3:
		w := lz4.NewWriter(&out)
		w.Write(records)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case 4:
		w, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		return w.EncodeAll(records, nil)
	case 5: // snappy as the Java client frames it (xerial)
		out.Write(xerialMagic)
		out.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		step := 32 << 10 // the Java client's block
		if len(records) < 4<<10 {
			step = 100 // small blocks, so a test's few records span them
		}
		for len(records) > 0 {
			n := min(len(records), step)
			blk := snappy.Encode(nil, records[:n])
			out.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
			out.Write(blk)
			records = records[n:]
		}
	}
	return out.Bytes()
}

// rebatch wraps body in the header of batch, with the codec, record count
// and last offset delta given, and a valid CRC.
func rebatch(batch []byte, codec int, body []byte, count, lastDelta int32) []byte {
	b := append(append([]byte(nil), batch[:BatchHeaderSize]...), body...)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLogOverhead))
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(codec&attrCompressionMask))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crcTable))
	return b
}

// codecBatch is a batch of the records of plain (an uncompressed batch)
// compressed with codec (5: snappy in xerial framing).
func codecBatch(t testing.TB, plain []byte, codec int, count, lastDelta int32) []byte {
	return rebatch(plain, codec%5+codec/5*2, compress(t, codec, plain[BatchHeaderSize:]), count, lastDelta)
}

var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd", "snappy-xerial"}

// TestValidateBatchesRecordCount: a batch's record count must match the
// records it holds, compressed or not; a batch that claims more or fewer,
// or holds bytes after its records, is refused as corrupt before it can
// take offsets.
func TestValidateBatchesRecordCount(t *testing.T) {
	two := logtest.Batch(1, logtest.Record{Key: []byte("k"), Value: []byte("v1")}, logtest.Record{Value: []byte("v2"), TimestampDelta: 3})
	one := logtest.Batch(1, logtest.Record{Value: []byte("v")})
	for codec, name := range codecNames {
		t.Run(name, func(t *testing.T) {
			if _, n, err := ValidateBatches(codecBatch(t, two, codec, 2, 1)); err != nil || n != 2 {
				t.Fatalf("an honest batch: %d records, %v", n, err)
			}
			for _, c := range []struct {
				what             string
				plain            []byte
				count, lastDelta int32
			}{
				{"one record claiming 2^31-1", one, math.MaxInt32, math.MaxInt32 - 1},
				{"two records claiming three", two, 3, 2},
				{"two records claiming one", two, 1, 0},
			} {
				_, _, err := ValidateBatches(codecBatch(t, c.plain, codec, c.count, c.lastDelta))
				if !errors.Is(err, ErrCorruptBatch) {
					t.Errorf("%s: got %v, want %v", c.what, err, ErrCorruptBatch)
				}
			}
		})
	}
}

// TestValidateBatchesKafkaRepro is the reported case: a 90-byte gzip batch
// claiming 2^31-1 records while holding one, with a valid CRC.
func TestValidateBatchesKafkaRepro(t *testing.T) {
	b := codecBatch(t, logtest.Batch(1, logtest.Record{Value: []byte("x")}), 1, math.MaxInt32, math.MaxInt32-1)
	if len(b) > 100 {
		t.Fatalf("the batch is %d bytes", len(b))
	}
	if _, _, err := ValidateBatches(b); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("got %v, want %v", err, ErrCorruptBatch)
	}
}

// TestValidateBatchesMalformedRecords: records whose fields do not fill
// their length, or whose offset deltas skip, are refused.
func TestValidateBatchesMalformedRecords(t *testing.T) {
	good := logtest.Batch(1, logtest.Record{Value: []byte("abc")}, logtest.Record{Value: []byte("def")})
	mutate := func(f func(body []byte) []byte) []byte {
		body := f(append([]byte(nil), good[BatchHeaderSize:]...))
		return rebatch(good, 0, body, 2, 1)
	}
	// Each record is: length 9 (1 byte), attributes, ts delta, offset
	// delta, key -1, value length 3, "abc", headers 0.
	cases := map[string][]byte{
		"offset delta skips":     mutate(func(b []byte) []byte { b[10+3] = 4; return b }),
		"value longer than rest": mutate(func(b []byte) []byte { b[5] = 20; return b }),
		"negative header count":  mutate(func(b []byte) []byte { b[9] = 1; return b }),
		"trailing bytes":         mutate(func(b []byte) []byte { return append(b, 0, 0) }),
		"record length too big":  mutate(func(b []byte) []byte { b[10] = 40; return b }),
	}
	for what, b := range cases {
		if _, _, err := ValidateBatches(b); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: got %v, want %v", what, err, ErrCorruptBatch)
		}
	}
	if _, _, err := ValidateBatches(good); err != nil {
		t.Fatalf("the unmutated batch: %v", err)
	}
}

// TestValidateBatchesBoundedMemory: records claiming huge sizes inside a
// small compressed batch are refused without memory taken from the claim,
// and a stream of zeros is read through a fixed buffer.
func TestValidateBatchesBoundedMemory(t *testing.T) {
	// No collection between the warm-up and the measure: a GC empties the
	// decoders' pools, and refilling them would count as this call's.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	plain := logtest.Batch(1, logtest.Record{Value: []byte("x")})
	huge := binary.AppendVarint(nil, 1<<40) // one record of 1 TiB
	huge = append(huge, make([]byte, 64)...)
	// One honest record with an 8 MiB value, in a batch claiming two: the
	// walk streams through the value to find the second record missing.
	big := logtest.Batch(1, logtest.Record{Value: make([]byte, 8<<20)})[BatchHeaderSize:]
	for codec, name := range codecNames {
		t.Run(name, func(t *testing.T) {
			cases := [][]byte{
				rebatch(plain, codec%5+codec/5*2, compress(t, codec, huge), 1, 0),
				rebatch(plain, codec%5+codec/5*2, compress(t, codec, big), 2, 1),
			}
			for i, b := range cases {
				ValidateBatches(b) // warm the pools
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				_, _, err := ValidateBatches(b)
				runtime.ReadMemStats(&after)
				if !errors.Is(err, ErrCorruptBatch) {
					t.Errorf("case %d: got %v, want %v", i, err, ErrCorruptBatch)
				}
				// Snappy decodes a block whole, and a block decodes to at
				// most 22 times its size: bounded by what arrived. An lz4
				// block (4 MiB at most) and a zstd window are bounded by
				// constants, and pooled unless the race detector dropped a
				// pooled decoder (it drops some on purpose); an lz4 reader
				// made anew holds two blocks.
				bound := 1<<20 + snappyMaxRatio*uint64(len(b))
				switch codec {
				case 3:
					bound += 2*4<<20 + 1<<20
				case 4:
					bound += zstdMaxWindow + 1<<20
				}
				if grew := after.TotalAlloc - before.TotalAlloc; grew > bound {
					t.Errorf("case %d: validating a %d-byte batch allocated %d bytes", i, len(b), grew)
				}
			}
		})
	}
}

// benchRecords are record values of middling compressibility, like JSON
// events: a few distinct words in varying order.
func benchRecords(size int) []logtest.Record {
	words := []string{"user", "event", "click", "view", "id", "ts", "page", "ok", "ref", "session"}
	var recs []logtest.Record
	seed := uint32(1)
	total := 0
	for total < size {
		var v []byte
		for len(v) < 100 {
			seed = seed*1664525 + 1013904223
			v = fmt.Appendf(v, "%s:%d,", words[seed>>28%uint32(len(words))], seed>>16)
		}
		recs = append(recs, logtest.Record{Value: v})
		total += len(v) + 8
	}
	return recs
}

// BenchmarkValidateBatches measures the produce-path validation of a 16 KiB
// batch (before compression) by codec: header and CRC, then the walk over
// the records, decompressing as it goes. Bytes per second count the
// uncompressed records.
func BenchmarkValidateBatches(b *testing.B) {
	plain := logtest.Batch(1, benchRecords(16<<10)...)
	n := int32(len(logtest.Records(plain)))
	b.Run("header-and-crc-only", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ValidateBatch(plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	for codec, name := range codecNames {
		batch := codecBatch(b, plain, codec, n, n-1)
		b.Run(fmt.Sprintf("codec=%s", name), func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ValidateBatches(batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(batch)), "batch-bytes")
		})
	}
}

// FuzzValidateBatchRecords: whatever the records bytes and the claimed
// count, validation neither panics nor takes memory from a claim; what it
// accepts uncompressed decodes to exactly the claimed number of records.
func FuzzValidateBatchRecords(f *testing.F) {
	plain := logtest.Batch(1, logtest.Record{Key: []byte("k"), Value: []byte("v")}, logtest.Record{Value: []byte("w")})
	for codec := range codecNames {
		f.Add(uint8(codec%5+codec/5*2), compress(f, codec, plain[BatchHeaderSize:]), int32(2))
	}
	f.Add(uint8(1), compress(f, 1, plain[BatchHeaderSize:]), int32(math.MaxInt32))
	f.Add(uint8(0), []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, int32(1))
	f.Fuzz(func(t *testing.T, codec uint8, body []byte, count int32) {
		if count <= 0 {
			return // refused by the header check before the records
		}
		b := rebatch(plain, int(codec%5), body, count, count-1)
		_, n, err := ValidateBatches(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptBatch) {
				t.Fatalf("refused with %v, want %v", err, ErrCorruptBatch)
			}
			return
		}
		if n != int64(count) {
			t.Fatalf("accepted %d records for a count of %d", n, count)
		}
		if codec%5 == 0 && len(logtest.Records(b)) != int(count) {
			t.Fatalf("accepted a batch whose records do not decode to its count %d", count)
		}
	})
}
