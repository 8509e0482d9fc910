package native

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// testBatches returns RecordBatch v2 bytes: batches of the given record
// sizes, one record each, from offset 0.
func testBatches(t testing.TB, sizes ...int) (all []byte, ends []int) {
	t.Helper()
	for i, n := range sizes {
		var bb wire.BatchBuilder
		bb.Add(1, nil, bytes.Repeat([]byte{byte(i)}, n), nil)
		b, err := bb.AppendBatch(nil)
		if err != nil {
			t.Fatal(err)
		}
		binary.BigEndian.PutUint64(b, uint64(i)) // base offset i (not under the CRC)
		all = append(all, b...)
		ends = append(ends, len(all))
	}
	return all, ends
}

// recordsForms returns the same bytes as the store hands them out: a file
// range at a non-zero position, and memory split into chunks at cuts.
func recordsForms(t *testing.T, b []byte, cuts ...int) map[string]ring.Records {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if _, err := f.Write(append(make([]byte, 100), b...)); err != nil {
		t.Fatal(err)
	}
	mem := ring.Records{}
	prev := 0
	for _, c := range append(cuts, len(b)) {
		if prev == 0 {
			mem.Bytes = b[:c]
		} else {
			mem.More = append(mem.More, b[prev:c])
		}
		prev = c
	}
	return map[string]ring.Records{"file": {File: f, Pos: 100, Len: len(b)}, "memory": mem}
}

// TestWholeBatchesThroughTheWindow: small batches (many to a window),
// batches larger than the window, headers across the window's end and a
// chunk's end, and a partial batch at the end, which a push leaves out.
func TestWholeBatchesThroughTheWindow(t *testing.T) {
	sizes := []int{10, 500, 3 * scanWindow, 20}
	for range 300 {
		sizes = append(sizes, 30)
	}
	sizes = append(sizes, scanWindow+7, 1)
	b, ends := testBatches(t, sizes...)
	whole := ends[len(ends)-2]
	b = b[:whole+wire.BatchHeaderSize+3] // the last batch cut short
	for name, rc := range recordsForms(t, b, 7, ends[1]+30, ends[3]+1) {
		var sc pushScan
		n, next := sc.wholeBatches(&rc)
		if n != whole || next != int64(len(sizes)-1) {
			t.Errorf("%s: %d bytes up to offset %d, want %d up to %d", name, n, next, whole, len(sizes)-1)
		}
	}
}

// TestPushFrameAllocatesNothing: a push's frame, buffers and cuts come
// back for the next push once written. Before, each push allocated its
// Response, its cuts, a release closure, its fetch result and request,
// and (for records in memory) a slice per batch header read.
func TestPushFrameAllocatesNothing(t *testing.T) {
	b, ends := testBatches(t, 100, 200, 300, 400)
	for name, rc := range recordsForms(t, b, ends[1]+10) {
		sub := &subscription{id: 9, parts: make([]ring.FetchPartition, 2), ids: make([][16]byte, 2)}
		// A push releases its result's records: each push gets a fresh
		// copy, as each fetch returns one.
		fetched := []ring.FetchPartitionResult{{Partition: 0, Records: rc}, {Partition: 1, Records: rc}}
		res := ring.FetchResult{Partitions: make([]ring.FetchPartitionResult, 2)}
		s := &session{}
		var sc pushScan
		push := func() {
			copy(res.Partitions, fetched)
			po, spent, failed := s.pushFrame(sub, res, &sc)
			if po == nil || spent != 2*len(b) || failed {
				t.Fatalf("%s: push of %d bytes (failed %v)", name, spent, failed)
			}
			po.release()
		}
		push()
		if allocs := testing.AllocsPerRun(100, push); allocs != 0 {
			t.Errorf("%s: %v allocations per push", name, allocs)
		}
		if sub.parts[0].Offset != 4 || sub.parts[1].Offset != 4 {
			t.Errorf("%s: offsets moved to %d and %d, want 4", name, sub.parts[0].Offset, sub.parts[1].Offset)
		}
	}
}

// TestPushFrameIsAFetchResponse: what pushFrame writes decodes as the
// Subscribe push PROTOCOL.md describes, records byte for byte.
func TestPushFrameIsAFetchResponse(t *testing.T) {
	b, _ := testBatches(t, 100, 200)
	for name, rc := range recordsForms(t, b, 50) {
		sub := &subscription{id: 7, parts: make([]ring.FetchPartition, 2), ids: [][16]byte{{1}, {2}}}
		res := ring.FetchResult{Partitions: []ring.FetchPartitionResult{
			{Partition: 3, HighWatermark: 2, Records: rc},
			{Partition: 4, HighWatermark: 9}, // nothing there: left out
		}}
		po, _, _ := (&session{}).pushFrame(sub, res, &pushScan{})
		var out bytes.Buffer
		if _, err := po.resp.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		po.release()
		op, payload, rest, err := wire.SplitFrame(out.Bytes(), 1<<20)
		if err != nil || op != wire.OpSubscribe || len(rest) != 0 {
			t.Fatalf("%s: frame %v, %d bytes left, %v", name, op, len(rest), err)
		}
		r := wire.NewReader(payload)
		if h := wire.ReadHead(&r); h.Corr != 7 || h.Code != 0 {
			t.Fatalf("%s: head %+v", name, h)
		}
		var fr wire.FetchResponse
		if err := fr.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if len(fr.Partitions) != 1 || fr.Partitions[0].Partition != 3 || fr.Partitions[0].TopicID != [16]byte{1} ||
			fr.Partitions[0].HighWatermark != 2 || !bytes.Equal(fr.Partitions[0].Records, b) {
			t.Fatalf("%s: pushed %+v", name, fr.Partitions)
		}
	}
}

// BenchmarkPushFrame builds one push of 8 partitions of 64 batches of
// 1 KiB each, from a file as a hot fetch gives them.
func BenchmarkPushFrame(b *testing.B) {
	sizes := make([]int, 64)
	for i := range sizes {
		sizes[i] = 1 << 10
	}
	batches, _ := testBatches(b, sizes...)
	f, err := os.Create(filepath.Join(b.TempDir(), "seg"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(batches); err != nil {
		b.Fatal(err)
	}
	sub := &subscription{id: 1, parts: make([]ring.FetchPartition, 8), ids: make([][16]byte, 8)}
	res := ring.FetchResult{Partitions: make([]ring.FetchPartitionResult, 8)}
	for i := range res.Partitions {
		res.Partitions[i] = ring.FetchPartitionResult{Partition: int32(i), Records: ring.Records{File: f, Len: len(batches)}}
	}
	fetched := slices.Clone(res.Partitions)
	s := &session{}
	var sc pushScan
	b.ReportAllocs()
	for b.Loop() {
		copy(res.Partitions, fetched)
		po, _, _ := s.pushFrame(sub, res, &sc)
		po.release()
	}
}
