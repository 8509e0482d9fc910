package recbatch

import (
	"bytes"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// FuzzDecodeBatches: any bytes fed to the batch cutter and the record
// decoder give records or an error wrapping ErrBadRecord, never a panic
// or a record past its batch; a well-formed batch decodes to what was
// encoded.
func FuzzDecodeBatches(f *testing.F) {
	good := logtest.Batch(1000, logtest.Record{Key: []byte("k"), Value: []byte("v")},
		logtest.Record{Value: []byte("second"), TimestampDelta: 5})
	f.Add(good)
	f.Add(append(bytes.Clone(good), good...))
	f.Add(good[:40])
	f.Fuzz(func(t *testing.T, p []byte) {
		d := NewDecoder()
		for len(p) > 0 {
			b, rest, ok, err := NextBatch(p)
			if err != nil || !ok {
				return
			}
			p = rest
			recs, err := d.Records(0, &b)
			if err != nil {
				continue
			}
			for _, r := range recs {
				if r.Offset < b.Base || r.Offset >= b.Next() {
					t.Fatalf("record offset %d outside its batch [%d, %d)", r.Offset, b.Base, b.Next())
				}
			}
		}
	})
}

func TestDecodeBatch(t *testing.T) {
	raw := logtest.Batch(1000, logtest.Record{Key: []byte("k"), Value: []byte("v")},
		logtest.Record{Value: []byte("second"), TimestampDelta: 5})
	b, rest, ok, err := NextBatch(raw)
	if err != nil || !ok || len(rest) != 0 {
		t.Fatalf("nextBatch: %v %v %d", ok, err, len(rest))
	}
	recs, err := NewDecoder().Records(4, &b)
	if err != nil || len(recs) != 2 {
		t.Fatalf("records: %v, %v", recs, err)
	}
	if r := recs[1]; r.Partition != 4 || r.Offset != 1 || r.Timestamp != 1005 || r.Key != nil || string(r.Value) != "second" {
		t.Errorf("second record %+v", r)
	}
	raw[len(raw)-1] ^= 0xff
	if _, _, _, err := NextBatch(raw); err == nil {
		t.Error("a corrupted batch passed its CRC check")
	}
}
