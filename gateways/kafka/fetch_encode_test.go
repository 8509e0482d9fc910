package kafka

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// TestFetchEncodeMatchesKmsg encodes the same response with the hand-made
// encoder and with kmsg, at every served version, and wants the same bytes.
func TestFetchEncodeMatchesKmsg(t *testing.T) {
	fileData := bytes.Repeat([]byte("0123456789abcdef"), 600) // 9600 bytes
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append([]byte("header--"), fileData...)); err != nil {
		t.Fatal(err)
	}
	small := []byte("small in-memory records")
	large := bytes.Repeat([]byte{7}, 5000)

	topics := []fetchRespTopic{
		{name: "alpha", id: [16]byte{1, 2, 3}, parts: []fetchRespPartition{
			{partition: 0, hw: 10, lso: 10, logStart: 0, records: ring.Records{File: f, Pos: 8, Len: len(fileData)}},
			{partition: 1, errCode: 1, hw: -1, lso: -1, logStart: -1},
			{partition: 2, hw: 5, lso: 5, logStart: 2, records: ring.Records{Bytes: small}},
		}},
		{name: "beta", id: [16]byte{9}, parts: []fetchRespPartition{
			{partition: 7, hw: 99, lso: 99, logStart: 3, records: ring.Records{Bytes: large}},
			{partition: 8, hw: 0, lso: 0, logStart: 0},
			// Cold reads over chunk boundaries come in parts, small and large.
			{partition: 9, hw: 7, lso: 7, logStart: 0, records: ring.Records{Bytes: small[:5], More: [][]byte{small[5:9], small[9:]}}},
			{partition: 10, hw: 7, lso: 7, logStart: 0, records: ring.Records{Bytes: large[:3000], More: [][]byte{large[3000:]}}},
		}},
	}
	want := func(version int16) []byte {
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		resp.SessionID = 42
		for _, t := range topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.name, t.id
			for _, p := range t.parts {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.partition, p.errCode, p.hw, p.lso, p.logStart
				rp.PreferredReadReplica = -1
				switch {
				case p.records.File != nil:
					rp.RecordBatches = fileData
				case p.records.Bytes != nil:
					rp.RecordBatches, _ = p.records.ReadAll(nil)
				default:
					rp.RecordBatches = []byte{}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp.AppendTo(nil)
	}
	for v := apiKeys[1].min; v <= apiKeys[1].max; v++ {
		var got bytes.Buffer
		r := encodeFetchResponse(v, 0, 42, topics)
		if _, err := r.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if w := want(v); !bytes.Equal(got.Bytes(), w) {
			t.Errorf("v%d: encoded %d bytes, kmsg %d; they differ", v, got.Len(), len(w))
			continue
		}
		if r.Len() != got.Len() {
			t.Errorf("v%d: Len %d, wrote %d", v, r.Len(), got.Len())
		}
		// And kmsg reads it back.
		dec := kmsg.NewPtrFetchResponse()
		dec.Version = v
		if err := dec.ReadFrom(got.Bytes()); err != nil {
			t.Errorf("v%d: kmsg cannot read it: %v", v, err)
		}
	}
}

// BenchmarkFetchResponse compares the two ways to answer a fetch of 16
// partitions with 64 KiB of hot records each: the hand encoder around file
// ranges (what the gateway does; the records then go out with sendfile)
// against reading the ranges into memory and encoding with kmsg. Only the
// user-space work is measured; sendfile also saves the kernel-to-user copy.
func BenchmarkFetchResponse(b *testing.B) {
	const parts, size = 16, 64 << 10
	f, err := os.Create(filepath.Join(b.TempDir(), "seg"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte{1}, parts*size)); err != nil {
		b.Fatal(err)
	}
	topics := []fetchRespTopic{{name: "bench", id: [16]byte{1}}}
	for p := 0; p < parts; p++ {
		topics[0].parts = append(topics[0].parts, fetchRespPartition{
			partition: int32(p), hw: 1000, lso: 1000, records: ring.Records{File: f, Pos: int64(p * size), Len: size},
		})
	}
	b.Run("ranges", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := encodeFetchResponse(17, 0, 1, topics)
			if r.Len() < parts*size {
				b.Fatal("short")
			}
		}
	})
	b.Run("kmsg-copy", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = 17
			rt := kmsg.NewFetchResponseTopic()
			rt.TopicID = topics[0].id
			for _, p := range topics[0].parts {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.HighWatermark = p.partition, p.hw
				data, err := p.records.ReadAll(nil)
				if err != nil {
					b.Fatal(err)
				}
				rp.RecordBatches = data
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			buf = resp.AppendTo(buf[:0])
		}
	})
}
