package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	p := Produce{TopicID: [16]byte{1, 2}, Partition: 3, Acks: -1, TimeoutMs: 500, Records: []byte("abc")}
	f := AppendHeader(nil, OpProduce, 0)
	f = AppendU32(f, 7)
	f = p.Append(f)
	PutLength(f)
	op, payload, rest, err := SplitFrame(f, 1<<20)
	if err != nil || op != OpProduce || len(rest) != 0 {
		t.Fatalf("split: op %v rest %d err %v", op, len(rest), err)
	}
	r := NewReader(payload)
	if corr := r.U32("corr"); corr != 7 {
		t.Fatalf("corr %d", corr)
	}
	var got Produce
	if err := got.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if got.TopicID != p.TopicID || got.Partition != 3 || got.Acks != -1 || got.TimeoutMs != 500 || string(got.Records) != "abc" {
		t.Fatalf("got %+v", got)
	}
}

func TestHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		h    []byte
		want error
	}{
		{[]byte{0xAE, 1, 3}, ErrMalformed},
		{[]byte{0xAF, 1, 3, 0, 0, 0, 0}, ErrMalformed},
		{[]byte{0xAE, 2, 3, 0, 0, 0, 0}, ErrVersion},
		{[]byte{0xAE, 1, 3, 0x10, 0, 0, 0}, ErrTooLarge},
	} {
		if _, _, err := ParseHeader(c.h, 1<<20); !errors.Is(err, c.want) {
			t.Errorf("% x: err %v, want %v", c.h, err, c.want)
		}
	}
}

func TestBatchRoundTrip(t *testing.T) {
	for _, codec := range []int16{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		b := BatchBuilder{Compression: codec}
		b.Add(1000, []byte("k1"), []byte("v1"), []Header{{Key: "h", Value: []byte("x")}})
		b.Add(1005, nil, []byte("v2"), nil)
		batch, err := b.AppendBatch(nil)
		if err != nil {
			t.Fatal(err)
		}
		info, one, rest, ok, err := NextBatch(batch)
		if err != nil || !ok || len(rest) != 0 {
			t.Fatalf("codec %d: ok %v err %v", codec, ok, err)
		}
		var d Decoder
		recs, err := d.Records(nil, &info, one)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if len(recs) != 2 || string(recs[0].Key) != "k1" || string(recs[1].Value) != "v2" || recs[1].Key != nil ||
			recs[1].Offset != 1 || recs[1].Timestamp != 1005 || recs[0].Headers[0].Key != "h" {
			t.Fatalf("codec %d: %+v", codec, recs)
		}
	}
}

func TestFetchResponseRoundTrip(t *testing.T) {
	in := FetchResponse{Partitions: []FetchedPartition{{TopicID: [16]byte{9}, Partition: 1, HighWatermark: 5, Records: []byte("xyz")}}}
	b := in.Append(nil)
	r := NewReader(b)
	var out FetchResponse
	if err := out.Decode(&r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Partitions[0].Records, []byte("xyz")) || out.Partitions[0].HighWatermark != 5 {
		t.Fatalf("%+v", out)
	}
}

// TestVarintLen: the size Add computes ahead matches what it appends, or
// a record's length prefix would lie.
func TestVarintLen(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 8191, 8192, 1 << 20, -(1 << 40), math.MaxInt64, math.MinInt64} {
		if got, want := varintLen(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, want)
		}
	}
}
