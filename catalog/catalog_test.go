package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
)

func openTest(t *testing.T, dir string) *Catalog {
	t.Helper()
	c, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fullSegment sets every field to a distinct non-zero value so a field the
// codec forgets shows up as a mismatch.
func fullSegment() Segment {
	return Segment{
		Topic:        "orders.v2_eu-west",
		Partition:    7,
		BaseOffset:   1 << 40,
		EndOffset:    1<<40 + 12345,
		Bytes:        128 << 20,
		MinTimestamp: -1, // Kafka's "no timestamp"
		MaxTimestamp: 1732870000123,
		State:        StateLocalRemote,
		LocalPath:    "/data/orders.v2_eu-west-7/00000001099511627776.log",
		SegmentID:    "01JDXYZ6QK3W",
		ObjectKey:    "prefix/orders.v2_eu-west/7/00000001099511627776-01JDXYZ6QK3W.log",
		ObjectSize:   128<<20 + 17,
		Checksum:     "crc32c:0a1b2c3d",
		ETag:         `"9b2cf535f27731c974343645a3985328-3"`,
		Epoch:        -3,
		UploadedAt:   1732870001000000001,
	}
}

func TestStateString(t *testing.T) {
	want := map[State]string{
		StateActive: "active", StateSealed: "sealed", StateUploading: "uploading",
		StateRemote: "remote", StateLocalRemote: "local+remote", StateDeleting: "deleting",
	}
	for s, w := range want {
		if got := s.String(); got != w {
			t.Errorf("State(%d).String() = %q, want %q", s, got, w)
		}
		if !s.Valid() {
			t.Errorf("State(%d) not valid", s)
		}
	}
	if State(0).Valid() || State(7).Valid() {
		t.Error("out-of-range state reported valid")
	}
	if got := State(9).String(); got != "State(9)" {
		t.Errorf("unknown state String() = %q", got)
	}
}

func TestSegmentRoundTrip(t *testing.T) {
	c := openTest(t, t.TempDir())
	want := fullSegment()
	if err := c.PutSegment(want); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSegment(want.Topic, want.Partition, want.BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Replacing a record (tierd recording the cloud pointer) overwrites it.
	want.State, want.LocalPath = StateRemote, ""
	if err := c.PutSegment(want); err != nil {
		t.Fatal(err)
	}
	if got, _ = c.GetSegment(want.Topic, want.Partition, want.BaseOffset); got != want {
		t.Fatalf("after update:\n got %+v\nwant %+v", got, want)
	}
	// Zero-valued optional fields survive too.
	zero := Segment{Topic: "t", Partition: 0, BaseOffset: 0, EndOffset: 0, State: StateActive}
	if err := c.PutSegment(zero); err != nil {
		t.Fatal(err)
	}
	if got, _ = c.GetSegment("t", 0, 0); got != zero {
		t.Fatalf("zero segment: got %+v want %+v", got, zero)
	}
}

// TestPutSegmentUnsynced checks that an unsynced record reads back at once
// and is still there after a clean close and reopen.
func TestPutSegmentUnsynced(t *testing.T) {
	dir := t.TempDir()
	c := openTest(t, dir)
	want := fullSegment()
	if err := c.PutSegmentUnsynced(want); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetSegment(want.Topic, want.Partition, want.BaseOffset); err != nil || got != want {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if err := c.PutSegmentUnsynced(Segment{Topic: "", BaseOffset: 1}); err == nil {
		t.Fatal("an invalid record was accepted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openTest(t, dir)
	if got, err := c.GetSegment(want.Topic, want.Partition, want.BaseOffset); err != nil || got != want {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

func TestPartitionRoundTrip(t *testing.T) {
	c := openTest(t, t.TempDir())
	want := Partition{Topic: "__consumer_offsets", Partition: 49, LogStartOffset: 98765, Config: []byte{0, 1, 2, 0xff}, CreatedAt: 1732870000000000000}
	if err := c.PutPartition(want); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetPartition(want.Topic, want.Partition)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if err := c.SetLogStart(want.Topic, want.Partition, 100000); err != nil {
		t.Fatal(err)
	}
	want.LogStartOffset = 100000
	if got, _ = c.GetPartition(want.Topic, want.Partition); !reflect.DeepEqual(got, want) {
		t.Fatalf("after SetLogStart:\n got %+v\nwant %+v", got, want)
	}
	// Empty config reads back as nil (documented).
	if err := c.PutPartition(Partition{Topic: "e", Config: []byte{}}); err != nil {
		t.Fatal(err)
	}
	if got, _ = c.GetPartition("e", 0); got.Config != nil {
		t.Fatalf("empty config read back as %#v", got.Config)
	}
}

func TestNotFound(t *testing.T) {
	c := openTest(t, t.TempDir())
	if _, err := c.GetSegment("a", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSegment on empty catalog: %v, want ErrNotFound", err)
	}
	if _, err := c.GetPartition("a", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetPartition on empty catalog: %v, want ErrNotFound", err)
	}
	if err := c.SetLogStart("a", 0, 5); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetLogStart on missing partition: %v, want ErrNotFound", err)
	}
	segs, err := c.Segments("a", 0)
	if err != nil || len(segs) != 0 {
		t.Errorf("Segments of unknown partition = %v, %v; want empty, nil", segs, err)
	}
	parts, err := c.Partitions()
	if err != nil || len(parts) != 0 {
		t.Errorf("Partitions on empty catalog = %v, %v", parts, err)
	}
	// Deletes are idempotent.
	if err := c.DeleteSegment("a", 0, 0); err != nil {
		t.Errorf("DeleteSegment of missing record: %v", err)
	}
	if err := c.DeletePartition("a", 0); err != nil {
		t.Errorf("DeletePartition of missing record: %v", err)
	}
	// After a delete the record is gone.
	s := Segment{Topic: "a", BaseOffset: 10, EndOffset: 20, State: StateSealed}
	if err := c.PutSegment(s); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteSegment("a", 0, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSegment("a", 0, 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetSegment after delete: %v, want ErrNotFound", err)
	}
}

func TestInvalidArguments(t *testing.T) {
	c := openTest(t, t.TempDir())
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'x'
	}
	bad := []Segment{
		{Topic: "", State: StateActive},
		{Topic: "a/b", State: StateActive},
		{Topic: "a b", State: StateActive},
		{Topic: "..", State: StateActive},
		{Topic: string(long), State: StateActive},
		{Topic: "a", Partition: -1, State: StateActive},
		{Topic: "a", BaseOffset: -1, EndOffset: 0, State: StateActive},
		{Topic: "a", BaseOffset: 10, EndOffset: 9, State: StateActive},
		{Topic: "a", State: 0},
		{Topic: "a", State: StateDeleting + 1},
	}
	for _, s := range bad {
		if err := c.PutSegment(s); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("PutSegment(%+v) = %v, want ErrInvalidArgument", s, err)
		}
	}
	if err := c.PutPartition(Partition{Topic: "a/b"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("PutPartition with '/' in topic: %v", err)
	}
	if _, err := c.Segments("a", -2); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Segments with negative partition: %v", err)
	}
	if err := c.PutPartition(Partition{Topic: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLogStart("a", 0, -1); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("SetLogStart(-1): %v", err)
	}
	if err := c.PutSegment(Segment{Topic: string(long[:249]), State: StateActive}); err != nil {
		t.Errorf("249-byte topic rejected: %v", err)
	}
}

// TestOrdering checks that big-endian keys give numeric order where decimal
// or little-endian keys would not (255 vs 256, 1 vs 256), and that Partitions
// sorts by topic name although key order does not.
func TestOrdering(t *testing.T) {
	c := openTest(t, t.TempDir())
	offsets := []int64{256, 0, 255, 1, 65536, 65535, 1 << 32, 1<<32 - 1, 1<<63 - 1, 4096, 10, 9}
	partitions := []int32{256, 1, 0, 255, 2, 65536, 1<<31 - 1, 16777216}
	topics := []string{"a", "a.b", "a-b", "ab", "A", "a_b", "b", "a0"}
	for _, topic := range topics {
		for _, p := range partitions {
			if err := c.PutPartition(Partition{Topic: topic, Partition: p, CreatedAt: int64(p)}); err != nil {
				t.Fatal(err)
			}
			for _, off := range offsets {
				s := Segment{Topic: topic, Partition: p, BaseOffset: off, EndOffset: off, State: StateSealed, LocalPath: fmt.Sprintf("%s-%d-%d", topic, p, off)}
				if err := c.PutSegment(s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	wantOffsets := slices.Clone(offsets)
	slices.Sort(wantOffsets)
	for _, topic := range topics {
		for _, p := range partitions {
			segs, err := c.Segments(topic, p)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, s := range segs {
				if s.Topic != topic || s.Partition != p || s.LocalPath != fmt.Sprintf("%s-%d-%d", topic, p, s.BaseOffset) {
					t.Fatalf("Segments(%q,%d) returned foreign record %+v", topic, p, s)
				}
				got = append(got, s.BaseOffset)
			}
			if !slices.Equal(got, wantOffsets) {
				t.Fatalf("Segments(%q,%d) offsets = %v, want %v", topic, p, got, wantOffsets)
			}
		}
	}
	parts, err := c.Partitions()
	if err != nil {
		t.Fatal(err)
	}
	wantTopics := slices.Clone(topics)
	slices.Sort(wantTopics)
	wantParts := slices.Clone(partitions)
	slices.Sort(wantParts)
	var want []Partition
	for _, topic := range wantTopics {
		for _, p := range wantParts {
			want = append(want, Partition{Topic: topic, Partition: p, CreatedAt: int64(p)})
		}
	}
	if !reflect.DeepEqual(parts, want) {
		t.Fatalf("Partitions order:\n got %v\nwant %v", parts, want)
	}
}

func TestDeletePartitionIsolation(t *testing.T) {
	c := openTest(t, t.TempDir())
	type tp struct {
		topic string
		p     int32
	}
	all := []tp{{"a", 0}, {"a", 1}, {"a", 256}, {"ab", 0}, {"a.b", 0}, {"a-", 0}, {"b", 0}}
	for _, x := range all {
		if err := c.PutPartition(Partition{Topic: x.topic, Partition: x.p}); err != nil {
			t.Fatal(err)
		}
		for off := int64(0); off < 300; off += 100 {
			if err := c.PutSegment(Segment{Topic: x.topic, Partition: x.p, BaseOffset: off, EndOffset: off + 100, State: StateSealed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.DeletePartition("a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPartition("a", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted partition still readable: %v", err)
	}
	if segs, err := c.Segments("a", 0); err != nil || len(segs) != 0 {
		t.Errorf("deleted partition still has segments: %v %v", segs, err)
	}
	for _, x := range all[1:] {
		if _, err := c.GetPartition(x.topic, x.p); err != nil {
			t.Errorf("partition %v lost: %v", x, err)
		}
		if segs, err := c.Segments(x.topic, x.p); err != nil || len(segs) != 3 {
			t.Errorf("partition %v: %d segments, err %v; want 3", x, len(segs), err)
		}
	}
	parts, _ := c.Partitions()
	if len(parts) != len(all)-1 {
		t.Errorf("Partitions after delete: %v", parts)
	}
	// A partition can be recreated after deletion and starts empty.
	if err := c.PutPartition(Partition{Topic: "a", Partition: 0, LogStartOffset: 7}); err != nil {
		t.Fatal(err)
	}
	if segs, _ := c.Segments("a", 0); len(segs) != 0 {
		t.Errorf("recreated partition inherited segments: %v", segs)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	seg := fullSegment()
	part := Partition{Topic: seg.Topic, Partition: seg.Partition, LogStartOffset: 3, Config: []byte("retention.ms=1")}
	if err := c.PutSegment(seg); err != nil {
		t.Fatal(err)
	}
	if err := c.PutPartition(part); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed catalog refuses calls instead of panicking inside pebble.
	if _, err := c.GetSegment(seg.Topic, seg.Partition, seg.BaseOffset); !errors.Is(err, ErrClosed) {
		t.Errorf("GetSegment after Close: %v, want ErrClosed", err)
	}
	if err := c.PutPartition(part); !errors.Is(err, ErrClosed) {
		t.Errorf("PutPartition after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Partitions(); !errors.Is(err, ErrClosed) {
		t.Errorf("Partitions after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	c = openTest(t, dir)
	got, err := c.GetSegment(seg.Topic, seg.Partition, seg.BaseOffset)
	if err != nil || got != seg {
		t.Fatalf("after reopen: %+v, %v; want %+v", got, err, seg)
	}
	gotP, err := c.GetPartition(part.Topic, part.Partition)
	if err != nil || !reflect.DeepEqual(gotP, part) {
		t.Fatalf("partition after reopen: %+v, %v; want %+v", gotP, err, part)
	}
}

func TestOpenTwiceFails(t *testing.T) {
	dir := t.TempDir()
	_ = openTest(t, dir)
	if c2, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)}); err == nil {
		_ = c2.Close()
		t.Fatal("second Open of the same dir succeeded; pebble's lock should refuse it")
	}
}

func TestCorruptValue(t *testing.T) {
	c := openTest(t, t.TempDir())
	if err := c.db.Set(segmentKey("a", 0, 5), []byte{segmentVersion, 0x80}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSegment("a", 0, 5); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("GetSegment of garbage: %v, want ErrCorruptRecord", err)
	}
	if _, err := c.Segments("a", 0); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("Segments over garbage: %v, want ErrCorruptRecord", err)
	}
	if err := c.db.Set(partitionKey("a", 0), []byte{99}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPartition("a", 0); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("GetPartition of unknown version: %v, want ErrCorruptRecord", err)
	}
	if _, err := c.Partitions(); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("Partitions over garbage: %v, want ErrCorruptRecord", err)
	}
}

// TestConcurrent runs writers and readers together (meant for -race) and
// checks that SetLogStart's read-modify-write keeps the partition's config.
func TestConcurrent(t *testing.T) {
	c := openTest(t, t.TempDir())
	if err := c.PutPartition(Partition{Topic: "c", Config: []byte("cfg")}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				off := int64(w*1000 + i)
				if err := c.PutSegment(Segment{Topic: "c", BaseOffset: off, EndOffset: off + 1, State: StateSealed}); err != nil {
					t.Error(err)
				}
				if err := c.SetLogStart("c", 0, off); err != nil {
					t.Error(err)
				}
				if _, err := c.Segments("c", 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	segs, _ := c.Segments("c", 0)
	if len(segs) != 160 {
		t.Errorf("%d segments, want 160", len(segs))
	}
	p, _ := c.GetPartition("c", 0)
	if string(p.Config) != "cfg" {
		t.Errorf("config lost: %q", p.Config)
	}
}

func TestKeys(t *testing.T) {
	k := segmentKey("a", 1, 256)
	want := []byte("s/a/\x00\x00\x00\x01/\x00\x00\x00\x00\x00\x00\x01\x00")
	if string(k) != string(want) {
		t.Errorf("segmentKey = %q, want %q", k, want)
	}
	pk := partitionKey("a", 47) // 47 == '/': parsing must not split on it
	if string(pk) != "p/a/\x00\x00\x00/" {
		t.Errorf("partitionKey = %q", pk)
	}
	topic, p, err := parsePartitionKey(pk)
	if err != nil || topic != "a" || p != 47 {
		t.Errorf("parsePartitionKey(%q) = %q %d %v", pk, topic, p, err)
	}
	for _, bad := range []string{"p/", "p//\x00\x00\x00\x00", "x/a/\x00\x00\x00\x00", "p/a:\x00\x00\x00\x00", "p/a/\x80\x00\x00\x00"} {
		if _, _, err := parsePartitionKey([]byte(bad)); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("parsePartitionKey(%q) = %v, want ErrCorruptRecord", bad, err)
		}
	}
	if got := prefixEnd([]byte("s/a/")); string(got) != "s/a0" {
		t.Errorf("prefixEnd = %q", got)
	}
	if got := prefixEnd([]byte{'a', 0xff, 0xff}); string(got) != "b" {
		t.Errorf("prefixEnd over 0xff = %q", got)
	}
	if got := prefixEnd([]byte{0xff}); got != nil {
		t.Errorf("prefixEnd(0xff) = %q, want nil", got)
	}
}
