package tierd

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// bucketReader is a minimal cold reader for these tests (fetchcache is the
// real one): it reads the whole remote log and cuts the range out.
type bucketReader struct{ b objstore.Bucket }

func (r bucketReader) ReadRemote(ctx context.Context, seg catalog.Segment, offset int64, maxBytes int) ([][]byte, error) {
	body, err := readAll(ctx, r.b, seg.ObjectKey)
	if err != nil {
		return nil, err
	}
	if segobj.IsBundle(seg.ObjectKey) {
		body = body[:seg.Bytes] // the indexes and trailer follow the log
	}
	for pos := 0; pos < len(body); {
		h, err := logstore.ParseBatchHeader(body[pos:])
		if err != nil {
			return nil, err
		}
		if h.LastOffset() >= offset {
			end := min(len(body), max(pos+maxBytes, pos+int(h.Length)))
			return [][]byte{body[pos:end]}, nil
		}
		pos += int(h.Length)
	}
	return nil, nil
}

type node struct {
	store  *logstore.Store
	cat    *catalog.Catalog
	tier   *Daemon
	cancel context.CancelFunc
	done   chan struct{}
}

func startNode(t *testing.T, dir string, b objstore.Bucket) *node {
	t.Helper()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cat: cat, done: make(chan struct{})}
	proxy := &tierProxy{}
	n.store, err = logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quiet, Tier: proxy,
		Cold: bucketReader{b}, RetentionCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	n.tier, err = New(Options{Bucket: b, Store: n.store, Catalog: cat, Logger: quiet, MultipartThreshold: 6 << 20,
		Retry: objstore.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	proxy.d = n.tier
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { defer close(n.done); n.tier.Run(ctx) }()
	return n
}

// tierProxy lets the store be opened before the daemon exists (recovery
// notifications are queued by the daemon's Rescan anyway).
type tierProxy struct{ d *Daemon }

func (p *tierProxy) Sealed(seg catalog.Segment) {
	if p.d != nil {
		p.d.Sealed(seg)
	}
}

func (p *tierProxy) DeleteRemote(seg catalog.Segment) {
	if p.d != nil {
		p.d.DeleteRemote(seg)
	}
}

func (n *node) stop() {
	n.cancel()
	<-n.done
	n.store.Close()
	n.cat.Close()
}

func drain(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

func readAllBatches(t *testing.T, s *logstore.Store, topic string, p int32, from int64) [][]byte {
	t.Helper()
	var out [][]byte
	off := from
	for {
		res, err := s.Fetch(context.Background(), &logstore.FetchRequest{Partitions: []logstore.FetchPartition{{Topic: topic, Partition: p, Offset: off, MaxBytes: 1 << 20}}})
		if err != nil || res.Partitions[0].Err != nil {
			t.Fatalf("fetch %d: %v %v", off, err, res.Partitions[0].Err)
		}
		b, _ := res.Partitions[0].Records.ReadAll(nil)
		res.Release()
		if len(b) == 0 {
			return out
		}
		for len(b) >= logstore.BatchHeaderSize {
			h, err := logstore.ParseBatchHeader(b)
			if err != nil {
				t.Fatalf("fetch %d: %v", off, err)
			}
			if int(h.Length) > len(b) {
				break
			}
			if h.LastOffset() >= off {
				out = append(out, append([]byte(nil), b[:h.Length]...))
				off = h.NextOffset()
			}
			b = b[h.Length:]
		}
	}
}

func TestPipelineMemBucket(t *testing.T) {
	b := objstore.NewMemBucket()
	dir := t.TempDir()
	n := startNode(t, dir, b)
	ctx := context.Background()
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, LocalRetentionBytes: new(int64(128 << 10)), RetentionMs: -1, RetentionBytes: -1}
	for p := int32(0); p < 2; p++ {
		if err := n.store.CreatePartition(ctx, "tiered", p, cfg); err != nil {
			t.Fatal(err)
		}
	}
	sent := map[int32][][]byte{}
	for i := 0; i < 300; i++ {
		p := int32(i % 2)
		batch := logtest.Filler(int64(i), 4, 1000, byte(i))
		sent[p] = append(sent[p], append([]byte(nil), batch...))
		if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "tiered", Partition: p, Records: batch}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, n.tier)
	if err := n.store.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		info, _ := n.store.DescribePartition(ctx, "tiered", p)
		if info.Size > 192<<10 {
			t.Fatalf("partition %d keeps %d bytes locally", p, info.Size)
		}
		recs, _ := n.store.Segments(ctx, "tiered", p)
		remote := 0
		for _, r := range recs {
			if r.State == catalog.StateRemote {
				remote++
			}
			if r.State == catalog.StateSealed {
				t.Fatalf("segment %d sealed but not uploaded", r.BaseOffset)
			}
		}
		if remote < 3 {
			t.Fatalf("partition %d: %d remote segments", p, remote)
		}
		got := readAllBatches(t, n.store, "tiered", p, 0)
		if len(got) != len(sent[p]) {
			t.Fatalf("partition %d: read %d batches, sent %d", p, len(got), len(sent[p]))
		}
		for i := range got {
			if !bytes.Equal(got[i][12:], sent[p][i][12:]) {
				t.Fatalf("partition %d batch %d differs", p, i)
			}
		}
	}
	res, err := n.tier.Verify(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !r.OK {
			t.Fatalf("verify: %+v", r)
		}
	}
	orphans, err := n.tier.GC(ctx, true, 0)
	if err != nil || len(orphans) != 0 {
		t.Fatalf("gc found %v %v", orphans, err)
	}
	// An orphan (an upload whose record was lost) is found and removed.
	orphanKey := segmentKey("tiered", 0, 999999, "deadbeef", ".log")
	b.Put(ctx, orphanKey, bytes.NewReader([]byte("x")), 1)
	orphans, _ = n.tier.GC(ctx, false, 0)
	if len(orphans) != 1 || orphans[0].Key != orphanKey || !orphans[0].Deleted {
		t.Fatalf("gc: %+v", orphans)
	}
	n.stop()

	// Restore on an empty node from the manifests alone.
	fresh := startNode(t, t.TempDir(), b)
	defer fresh.stop()
	ms, err := ReadManifests(ctx, b, "tiered")
	if err != nil || len(ms) != 2 {
		t.Fatalf("manifests: %d %v", len(ms), err)
	}
	for _, m := range ms {
		if err := fresh.store.RestorePartition(ctx, m.Topic, m.Partition, cfg, m.LogStartOffset, m.Records()); err != nil {
			t.Fatal(err)
		}
		got := readAllBatches(t, fresh.store, m.Topic, m.Partition, 0)
		last := m.Segments[len(m.Segments)-1].EndOffset
		for i, g := range got {
			h, _ := logstore.ParseBatchHeader(g)
			if h.BaseOffset >= last {
				break
			}
			if !bytes.Equal(g[12:], sent[m.Partition][i][12:]) {
				t.Fatalf("restored partition %d batch %d differs", m.Partition, i)
			}
		}
	}
}

// TestUploadResumesAfterCrash: objects uploaded before a crash, with no
// record yet, are recognised by the conditional put (same name, same bytes)
// and not uploaded under a second name.
func TestUploadResumesAfterCrash(t *testing.T) {
	b := objstore.NewMemBucket()
	fb := objstore.NewFaultBucket(b, objstore.FaultConfig{})
	dir := t.TempDir()
	n := startNode(t, dir, fb)
	ctx := context.Background()
	if err := n.store.CreatePartition(ctx, "r", 0, logstore.PartitionConfig{SegmentBytes: 32 << 10}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "r", Partition: 0, Records: logtest.Filler(1, 2, 1000, byte(i))})
	}
	drain(t, n.tier)
	n.stop()
	// Simulate a crash after upload but before the record: clear the
	// pointers in the catalog (offline), leaving the objects.
	cat, _ := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet})
	recs, _ := cat.Segments("r", 0)
	cleared := 0
	for _, r := range recs {
		if r.ObjectKey != "" {
			r.ObjectKey, r.State, r.Checksum, r.ObjectSize = "", catalog.StateSealed, "", 0
			cat.PutSegment(r)
			cleared++
		}
	}
	cat.Close()
	before := countObjects(t, b)
	n = startNode(t, dir, b)
	defer n.stop()
	drain(t, n.tier)
	if after := countObjects(t, b); after != before {
		t.Fatalf("%d objects before resume, %d after: something was uploaded under a second name", before, after)
	}
	recs, _ = n.store.Segments(ctx, "r", 0)
	uploaded := 0
	for _, r := range recs {
		if r.ObjectKey != "" {
			uploaded++
		}
	}
	if uploaded != cleared {
		t.Fatalf("%d segments re-recorded, want %d", uploaded, cleared)
	}
}

// unverifiedBucket reports every put as not Verified, counts Heads, and
// can make Head report a stored size one byte short.
type unverifiedBucket struct {
	objstore.Bucket
	heads atomic.Int64
	short atomic.Bool
}

func (b *unverifiedBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (objstore.ObjectInfo, error) {
	info, err := b.Bucket.PutIfAbsent(ctx, key, r, size)
	info.Verified = false
	return info, err
}

func (b *unverifiedBucket) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	b.heads.Add(1)
	info, err := b.Bucket.Head(ctx, key)
	if b.short.Load() {
		info.Size--
	}
	return info, err
}

// TestUploadVerification: an upload the provider reports Verified is not
// read back; one it does not is checked with a Head, and a stored size
// that differs from the file's fails the upload, which stays sealed.
func TestUploadVerification(t *testing.T) {
	ctx := context.Background()
	cfg := logstore.PartitionConfig{SegmentBytes: 32 << 10, RetentionMs: -1, RetentionBytes: -1}
	upload := func(b objstore.Bucket) (remote, sealed int) {
		n := startNode(t, t.TempDir(), b)
		defer n.stop()
		if err := n.store.CreatePartition(ctx, "v", 0, cfg); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "v", Partition: 0, Records: logtest.Filler(1, 2, 1000, byte(i))})
		}
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = n.tier.Drain(dctx) // with the lying bucket the uploads keep failing
		recs, _ := n.store.Segments(ctx, "v", 0)
		for _, r := range recs {
			switch {
			case r.ObjectKey != "":
				remote++
			case r.State == catalog.StateSealed:
				sealed++
			}
		}
		return remote, sealed
	}
	var heads atomic.Int64
	if remote, sealed := upload(&headCounter{Bucket: objstore.NewMemBucket(), n: &heads}); remote == 0 || sealed != 0 || heads.Load() != 0 {
		t.Fatalf("verified puts: %d uploaded, %d left sealed, %d Heads (want none)", remote, sealed, heads.Load())
	}
	plain := &unverifiedBucket{Bucket: objstore.NewMemBucket()}
	if remote, sealed := upload(plain); remote == 0 || sealed != 0 || plain.heads.Load() < int64(remote) {
		t.Fatalf("unverified puts: %d uploaded, %d left sealed, %d Heads (want one per object)", remote, sealed, plain.heads.Load())
	}
	lying := &unverifiedBucket{Bucket: objstore.NewMemBucket()}
	lying.short.Store(true)
	if remote, sealed := upload(lying); remote != 0 || sealed == 0 {
		t.Fatalf("stored size short by a byte: %d uploaded, %d left sealed", remote, sealed)
	}
}

// headCounter counts Heads and passes everything through.
type headCounter struct {
	objstore.Bucket
	n *atomic.Int64
}

func (b *headCounter) Head(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	b.n.Add(1)
	return b.Bucket.Head(ctx, key)
}

func countObjects(t *testing.T, b objstore.Bucket) int {
	n := 0
	for _, err := range b.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func TestKeys(t *testing.T) {
	k := segmentKey("my.topic-1", 7, 1234, "abcd", ".log")
	p, ok := parseKey(k)
	if !ok || p.topic != "my.topic-1" || p.partition != 7 || p.base != 1234 || p.id != "abcd" || p.ext != ".log" {
		t.Fatalf("%s -> %+v %v", k, p, ok)
	}
	if b := segmentKey("my.topic-1", 7, 1234, "abcd", segobj.Ext); b != "my.topic-1/7/00000000000000001234-abcd.seg" {
		t.Fatal(b)
	} else if p, ok := parseKey(b); !ok || p.ext != ".seg" || p.id != "abcd" {
		t.Fatalf("%s -> %+v %v", b, p, ok)
	}
	for _, bad := range []string{"a/b/c", "a/1/123-x.log", "a/-1/00000000000000001234-abcd.log", "x", "a/1/00000000000000001234-.log"} {
		if _, ok := parseKey(bad); ok {
			t.Errorf("parseKey(%q) accepted", bad)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	m := buildManifest("t", 0, 0, []catalog.Segment{{Topic: "t", BaseOffset: 0, EndOffset: 10, Bytes: 100,
		ObjectKey: segmentKey("t", 0, 0, "ab", ".log"), SegmentID: "ab", State: catalog.StateRemote}})
	b, _ := jsonIndent(m)
	f.Add(b)
	f.Add([]byte(`{"version":1,"topic":"t","partition":0,"segments":[{"base_offset":5,"end_offset":1}]}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err != nil {
			return
		}
		again, _ := jsonIndent(m)
		if _, err := decodeManifest(again); err != nil {
			t.Fatalf("re-encoded manifest rejected: %v", err)
		}
		_ = m.Records()
	})
}
