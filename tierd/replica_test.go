package tierd

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/objstore/filesystem"
)

// roleStore is a store whose high watermark the test sets.
type roleStore struct {
	*logstore.Store
	mu    sync.Mutex
	role  string
	epoch int32
	hw    int64
}

func (s *roleStore) TierRole(ctx context.Context, topic string, partition int32) (string, int32, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role, s.epoch, s.hw, nil
}

func (s *roleStore) set(role string, epoch int32, hw int64) {
	s.mu.Lock()
	s.role, s.epoch, s.hw = role, epoch, hw
	s.mu.Unlock()
}

var (
	_ Replicas = (*roleStore)(nil)
	_ Replicas = (*logstore.Store)(nil)
)

type replicaNode struct {
	*node
	roles *roleStore
	dir   string
}

// startReplica is startNode for a cluster store, with no background
// ticks: the test calls syncFollowers itself. With fake, tierd sees the
// roles and high watermark the test sets on roles; otherwise the store's.
// requireRole is logstore's Options.RequireRole, as a cluster store sets it.
func startReplica(t *testing.T, dir string, b objstore.Bucket, fake, requireRole bool) *replicaNode {
	t.Helper()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{cat: cat, done: make(chan struct{})}
	proxy := &tierProxy{}
	n.store, err = logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quiet, Tier: proxy,
		Cold: bucketReader{b}, RetentionCheckInterval: time.Hour, RequireRole: requireRole})
	if err != nil {
		t.Fatal(err)
	}
	rs := &roleStore{Store: n.store, role: roleStandalone}
	var st Store = n.store
	if fake {
		st = rs
	}
	n.tier, err = New(Options{Bucket: b, Store: st, Catalog: cat, Logger: quiet,
		RescanInterval: time.Hour, ManifestInterval: time.Hour,
		Retry: objstore.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	proxy.d = n.tier
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { defer close(n.done); n.tier.Run(ctx) }()
	return &replicaNode{node: n, roles: rs, dir: dir}
}

func fsBucket(t *testing.T) objstore.Bucket {
	t.Helper()
	b, err := filesystem.New(filesystem.Config{RootPath: t.TempDir()}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bucketSegments lists the segment objects in the bucket by key, with the
// offsets their manifest entries or scans give.
func bucketKeys(t *testing.T, b objstore.Bucket) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for info, err := range b.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := parseKey(info.Key); ok && k.ext != "manifest.json" {
			out[info.Key] = true
		}
	}
	return out
}

func localLogs(t *testing.T, dir, topic string) int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "logs", topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(logs)
}

// TestTieringWithReplicas: only the leader uploads; a follower learns the
// cloud pointers from the manifest and evicts under its own local
// retention only what the cold tier holds, though its segments lie on
// other boundaries; after a change of leader the new one uploads nothing
// the bucket holds already, and serves offsets it evicted from the bucket.
func TestTieringWithReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		// batches written before the change of leader: 150 ends both
		// replicas' sealed segments at one offset, 130 leaves a follower
		// segment straddling the end of the cold tier.
		batches int
		// sync: the follower reads the manifest before it leads. Without
		// it, the new leader finds covered segments that its local
		// retention (-1 here) would keep, and evicts them at takeover.
		sync bool
	}{
		{"aligned end", 150, true},
		{"straddling segment", 130, true},
		{"leads before syncing", 130, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testTieringWithReplicas(t, tc.batches, tc.sync) })
	}
}

func testTieringWithReplicas(t *testing.T, batches int, sync bool) {
	ctx := context.Background()
	b := fsBucket(t)
	a := startReplica(t, t.TempDir(), b, false, false)
	defer a.stop()
	f := startReplica(t, t.TempDir(), b, false, false)
	defer f.stop()
	// Store ids 1 (a) and 2 (f).
	role := func(n *replicaNode, local, leader, epoch int32) {
		t.Helper()
		st := logstore.ReplicaState{Role: logstore.RoleFollower, LeaderEpoch: epoch, Leader: leader, LocalID: local,
			Replicas: []int32{1, 2}, ISR: []int32{leader}, MinISR: 1}
		if local == leader {
			st.Role = logstore.RoleLeader
		}
		if err := n.store.SetReplicaState(ctx, "r", 0, st); err != nil {
			t.Fatal(err)
		}
	}

	// Different segment sizes: the replicas' segments do not line up.
	evictAll := new(int64(0))
	if err := a.store.CreatePartition(ctx, "r", 0, logstore.PartitionConfig{SegmentBytes: 64 << 10,
		LocalRetentionBytes: evictAll, RetentionMs: -1, RetentionBytes: -1}); err != nil {
		t.Fatal(err)
	}
	followerLocal := evictAll
	if !sync {
		followerLocal = new(int64(-1))
	}
	if err := f.store.CreatePartition(ctx, "r", 0, logstore.PartitionConfig{SegmentBytes: 40 << 10,
		LocalRetentionBytes: followerLocal, RetentionMs: -1, RetentionBytes: -1}); err != nil {
		t.Fatal(err)
	}
	role(a, 1, 1, 1)
	role(f, 2, 1, 1)
	var sent [][]byte
	// produce writes to the leader and copies what it wrote to the
	// follower, as the replica manager's fetcher would.
	produce := func(batches int, leader, follower *replicaNode) {
		t.Helper()
		from := int64(len(sent)) * 4
		for i := 0; i < batches; i++ {
			batch := logtest.Filler(int64(len(sent)), 4, 1000, byte(len(sent)))
			sent = append(sent, append([]byte(nil), batch...))
			if _, err := leader.store.Produce(ctx, &logstore.ProduceRequest{Topic: "r", Partition: 0, Records: batch, Acks: 1}); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range readAllBatches(t, leader.store, "r", 0, from) {
			h, _ := logstore.ParseBatchHeader(b)
			if _, err := follower.store.AppendReplica(ctx, "r", 0, b, h.NextOffset()); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(n *replicaNode, what string) {
		t.Helper()
		got := readAllBatches(t, n.store, "r", 0, 0)
		if len(got) != len(sent) {
			t.Fatalf("%s: read %d batches from offset 0, sent %d", what, len(got), len(sent))
		}
		for i := range got {
			if !bytes.Equal(got[i][16:], sent[i][16:]) { // from the magic: the leader stamps its epoch
				t.Fatalf("%s: batch %d differs", what, i)
			}
		}
	}
	produce(batches, a, f)
	drain(t, a.tier)
	drain(t, f.tier)

	owned := map[string]bool{}
	recs, err := a.store.Segments(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ObjectKey != "" {
			owned[r.ObjectKey] = true
		}
	}
	before := bucketKeys(t, b)
	if len(before) < 3 {
		t.Fatalf("the leader uploaded %d segments", len(before))
	}
	for k := range before {
		if !owned[k] {
			t.Fatalf("object %s is not the leader's: the follower uploaded", k)
		}
	}
	if n := localLogs(t, f.dir, "r"); n < 5 {
		t.Fatalf("the follower evicted before learning the cold tier: %d local logs", n)
	}

	m, err := f.tier.readCold(ctx, "r", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	coldEnd := m.Segments[len(m.Segments)-1].EndOffset
	if sync {
		// The follower learns the cold tier and evicts what it covers.
		f.tier.syncFollowers(ctx)
		if err := f.store.Settle(ctx, "r", 0); err != nil {
			t.Fatal(err)
		}
		if n := localLogs(t, f.dir, "r"); n > 3 {
			t.Fatalf("the follower kept %d local logs after learning the cold tier", n)
		}
		frecs, err := f.store.Segments(ctx, "r", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range frecs {
			if r.State == catalog.StateRemote && r.EndOffset > coldEnd {
				t.Fatalf("follower segment %d..%d evicted beyond the cold tier's end %d", r.BaseOffset, r.EndOffset, coldEnd)
			}
			if r.State == catalog.StateRemote && !owned[r.ObjectKey] {
				t.Fatalf("follower's remote record %d names %q, not a leader's object", r.BaseOffset, r.ObjectKey)
			}
		}

	}
	// Change of leader: the follower leads at epoch 2, and more is written.
	role(f, 2, 2, 2)
	role(a, 1, 2, 2)
	produce(150, f, a)
	if err := f.store.RollPartition(ctx, "r", 0); err != nil {
		t.Fatal(err)
	}
	drain(t, f.tier)
	drain(t, a.tier)
	after := bucketKeys(t, b)
	for k := range before {
		if !after[k] {
			t.Fatalf("the old leader's object %s is gone", k)
		}
	}
	newRecs, err := f.store.Segments(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]catalog.Segment{}
	for _, r := range newRecs {
		byKey[r.ObjectKey] = r
	}
	added := 0
	for k := range after {
		if before[k] {
			continue
		}
		added++
		r, ok := byKey[k]
		if !ok {
			t.Fatalf("object %s is in no record of the new leader (the old one uploaded as follower?)", k)
		}
		if r.EndOffset <= coldEnd {
			t.Fatalf("the new leader uploaded %d..%d, which the cold tier held to %d", r.BaseOffset, r.EndOffset, coldEnd)
		}
	}
	if added == 0 {
		t.Fatal("the new leader uploaded nothing")
	}
	// The manifest the new leader wrote names every object, with no gap.
	m, err = f.tier.readCold(ctx, "r", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Segments) != len(after) {
		t.Fatalf("manifest lists %d segments, the bucket holds %d", len(m.Segments), len(after))
	}
	overlaps := 0
	for i := 1; i < len(m.Segments); i++ {
		if m.Segments[i].BaseOffset < m.Segments[i-1].EndOffset {
			overlaps++
		}
		if m.Segments[i].BaseOffset > m.Segments[i-1].EndOffset {
			t.Fatalf("manifest gap between %d and %d", m.Segments[i-1].EndOffset, m.Segments[i].BaseOffset)
		}
	}
	// The follower's 40 KiB segments hold 9 batches of 4 records: when the
	// cold tier ends between two of their boundaries, one straddles it and
	// the new leader uploads it whole, overlapping the cold tier's last.
	if straddles := coldEnd%36 != 0; straddles != (overlaps > 0) {
		t.Fatalf("cold tier ended at %d; the manifest has %d overlapping segments", coldEnd, overlaps)
	}
	// Offset 0, evicted locally, comes from the bucket.
	if n := localLogs(t, f.dir, "r"); sync && n > 3 {
		t.Fatalf("the new leader keeps %d local logs", n)
	}
	if logs, _ := filepath.Glob(filepath.Join(f.dir, "logs", "r-0", "*.log")); len(logs) == 0 || filepath.Base(logs[0]) == "00000000000000000000.log" {
		t.Fatalf("the new leader did not evict offset 0: local logs %v", logs)
	}
	check(f, "new leader")
	// The old leader, now following, takes the new leader's pointers and
	// evicts what they cover.
	a.tier.syncFollowers(ctx)
	if err := a.store.Settle(ctx, "r", 0); err != nil {
		t.Fatal(err)
	}
	if n := localLogs(t, a.dir, "r"); n > 3 {
		t.Fatalf("the old leader keeps %d local logs as a follower", n)
	}
}

// TestLeaderUploadsBelowHighWatermark: a sealed segment reaching past the
// leader's high watermark waits; it is uploaded once the watermark passes.
func TestLeaderUploadsBelowHighWatermark(t *testing.T) {
	ctx := context.Background()
	b := fsBucket(t)
	a := startReplica(t, t.TempDir(), b, true, false)
	defer a.stop()
	a.roles.set(roleLeader, 1, 0)
	if err := a.store.CreatePartition(ctx, "h", 0, logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := a.store.Produce(ctx, &logstore.ProduceRequest{Topic: "h", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i))}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, a.tier)
	if n := len(bucketKeys(t, b)); n != 0 {
		t.Fatalf("%d segments uploaded above the high watermark", n)
	}
	a.roles.set(roleLeader, 1, math.MaxInt64)
	a.tier.releaseHeld()
	drain(t, a.tier)
	if n := len(bucketKeys(t, b)); n == 0 {
		t.Fatal("nothing uploaded once the high watermark passed")
	}
}

// TestManifestOverlap: a segment may start inside the previous one if it
// ends after it (a new leader's own segment); one inside it may not.
func TestManifestOverlap(t *testing.T) {
	seg := func(base, end int64) ManifestSegment {
		return ManifestSegment{BaseOffset: base, EndOffset: end, SegmentID: "x", ObjectKey: segmentKey("t", 0, base, "x", ".seg")}
	}
	for _, tc := range []struct {
		segs []ManifestSegment
		ok   bool
	}{
		{[]ManifestSegment{seg(0, 10), seg(10, 20)}, true},
		{[]ManifestSegment{seg(0, 10), seg(5, 20)}, true},
		{[]ManifestSegment{seg(0, 10), seg(5, 10)}, false},
		{[]ManifestSegment{seg(0, 10), seg(0, 20)}, false},
	} {
		body, err := jsonIndent(Manifest{Version: manifestVersion, Topic: "t", Segments: tc.segs})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeManifest(body); (err == nil) != tc.ok {
			t.Errorf("%v: err %v, want ok %v", tc.segs, err, tc.ok)
		}
	}
}

// TestRestartedClusterStoreWaitsForItsRole: a cluster store restarted with
// sealed segments it never uploaded leaves them alone until it knows its
// role (it may be a follower now), and uploads them once it leads.
func TestRestartedClusterStoreWaitsForItsRole(t *testing.T) {
	ctx := context.Background()
	b := fsBucket(t)
	dir := t.TempDir()
	// Before the restart tierd sees a follower (and uploads nothing); the
	// store itself takes produce as a single copy.
	n := startReplica(t, dir, b, true, false)
	n.roles.set(roleFollower, 1, math.MaxInt64)
	if err := n.store.CreatePartition(ctx, "w", 0, logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "w", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i)), Acks: 1}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, n.tier)
	n.cancel()
	<-n.done
	n.store.Close()
	n.cat.Close()
	if k := bucketKeys(t, b); len(k) != 0 {
		t.Fatalf("uploaded before the restart: %v", k)
	}

	n = startReplica(t, dir, b, false, true)
	defer n.stop()
	drain(t, n.tier)
	if k := bucketKeys(t, b); len(k) != 0 {
		t.Fatalf("uploaded with no role: %v", k)
	}
	st := logstore.ReplicaState{Role: logstore.RoleLeader, LeaderEpoch: 2, Leader: 1, LocalID: 1, Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1}
	if err := n.store.SetReplicaState(ctx, "w", 0, st); err != nil {
		t.Fatal(err)
	}
	n.tier.syncFollowers(ctx)
	drain(t, n.tier)
	if k := bucketKeys(t, b); len(k) < 2 {
		t.Fatalf("%d segments uploaded once leading", len(k))
	}
}

// TestRemovedFollowerKeepsLeaderObjects: a replica removed from a follower
// store (reassignment, drain) holds the leader's cloud pointers; deleting
// it must not delete the leader's objects.
func TestRemovedFollowerKeepsLeaderObjects(t *testing.T) {
	ctx := context.Background()
	b := fsBucket(t)
	a := startReplica(t, t.TempDir(), b, false, false)
	defer a.stop()
	f := startReplica(t, t.TempDir(), b, false, false)
	defer f.stop()
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}
	for i, n := range []*replicaNode{a, f} {
		if err := n.store.CreatePartition(ctx, "d", 0, cfg); err != nil {
			t.Fatal(err)
		}
		st := logstore.ReplicaState{Role: logstore.RoleFollower, LeaderEpoch: 1, Leader: 1, LocalID: int32(i + 1),
			Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}
		if i == 0 {
			st.Role = logstore.RoleLeader
		}
		if err := n.store.SetReplicaState(ctx, "d", 0, st); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		if _, err := a.store.Produce(ctx, &logstore.ProduceRequest{Topic: "d", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i)), Acks: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, batch := range readAllBatches(t, a.store, "d", 0, 0) {
		h, _ := logstore.ParseBatchHeader(batch)
		if _, err := f.store.AppendReplica(ctx, "d", 0, batch, h.NextOffset()); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, a.tier)
	f.tier.syncFollowers(ctx)
	recs, err := f.store.Segments(ctx, "d", 0)
	if err != nil {
		t.Fatal(err)
	}
	pointers := 0
	for _, r := range recs {
		if r.ObjectKey != "" {
			pointers++
		}
	}
	before := bucketKeys(t, b)
	if pointers == 0 || len(before) == 0 {
		t.Fatalf("the follower took %d pointers of %d objects", pointers, len(before))
	}
	if err := f.store.DeletePartition(ctx, "d", 0); err != nil {
		t.Fatal(err)
	}
	drain(t, f.tier)
	if after := bucketKeys(t, b); len(after) != len(before) {
		t.Fatalf("deleting the follower's replica left %d of the leader's %d objects", len(after), len(before))
	}
}

// TestFollowerForgetsWhatLeaderRetentionDeleted: the leader's remote
// retention deletes the oldest objects; a follower's next sync drops its
// records of them, so it would not serve or list them as leader.
func TestFollowerForgetsWhatLeaderRetentionDeleted(t *testing.T) {
	ctx := context.Background()
	b := fsBucket(t)
	a := startReplica(t, t.TempDir(), b, false, false)
	defer a.stop()
	f := startReplica(t, t.TempDir(), b, false, false)
	defer f.stop()
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, LocalRetentionBytes: new(int64(0)), RetentionMs: -1, RetentionBytes: -1}
	for i, n := range []*replicaNode{a, f} {
		if err := n.store.CreatePartition(ctx, "k", 0, cfg); err != nil {
			t.Fatal(err)
		}
		st := logstore.ReplicaState{Role: logstore.RoleFollower, LeaderEpoch: 1, Leader: 1, LocalID: int32(i + 1),
			Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}
		if i == 0 {
			st.Role = logstore.RoleLeader
		}
		if err := n.store.SetReplicaState(ctx, "k", 0, st); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		if _, err := a.store.Produce(ctx, &logstore.ProduceRequest{Topic: "k", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i)), Acks: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, batch := range readAllBatches(t, a.store, "k", 0, 0) {
		h, _ := logstore.ParseBatchHeader(batch)
		if _, err := f.store.AppendReplica(ctx, "k", 0, batch, h.NextOffset()); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, a.tier)
	f.tier.syncFollowers(ctx)
	remote := func(n *replicaNode) []catalog.Segment {
		t.Helper()
		recs, err := n.store.Segments(ctx, "k", 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []catalog.Segment
		for _, r := range recs {
			if r.State == catalog.StateRemote {
				out = append(out, r)
			}
		}
		return out
	}
	if n := len(remote(f)); n < 4 {
		t.Fatalf("the follower holds %d remote segments", n)
	}
	// The leader keeps about two segments.
	cfg.RetentionBytes = 150 << 10
	if err := a.store.SetPartitionConfig(ctx, "k", 0, cfg); err != nil {
		t.Fatal(err)
	}
	if err := a.store.RunRetention(ctx); err != nil {
		t.Fatal(err)
	}
	drain(t, a.tier)
	kept := remote(a)
	f.tier.syncFollowers(ctx)
	got := remote(f)
	if len(kept) == 0 || len(got) != len(kept) || got[0].BaseOffset != kept[0].BaseOffset {
		t.Fatalf("leader keeps %d remote segments from %v, the follower %d from %v", len(kept), kept, len(got), got)
	}
	info, err := f.store.DescribePartition(ctx, "k", 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.LogStartOffset != kept[0].BaseOffset {
		t.Fatalf("follower's log start %d, the leader's cold tier starts at %d", info.LogStartOffset, kept[0].BaseOffset)
	}
}

// TestGCInSharedBucket: the stores of a cluster share the bucket, and each
// catalog knows only its own partitions: tier gc on a follower, or on a
// leader for partitions it does not lead or hold, deletes nothing that
// another store's catalog may reference.
func TestGCInSharedBucket(t *testing.T) {
	ctx := context.Background()
	b := fsBucket(t)
	a := startReplica(t, t.TempDir(), b, false, false)
	defer a.stop()
	f := startReplica(t, t.TempDir(), b, false, false)
	defer f.stop()
	cfg := logstore.PartitionConfig{SegmentBytes: 64 << 10, RetentionMs: -1, RetentionBytes: -1}
	for i, n := range []*replicaNode{a, f} {
		if err := n.store.CreatePartition(ctx, "g", 0, cfg); err != nil {
			t.Fatal(err)
		}
		st := logstore.ReplicaState{Role: logstore.RoleFollower, LeaderEpoch: 1, Leader: 1, LocalID: int32(i + 1),
			Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}
		if i == 0 {
			st.Role = logstore.RoleLeader
		}
		if err := n.store.SetReplicaState(ctx, "g", 0, st); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 60; i++ {
		if _, err := a.store.Produce(ctx, &logstore.ProduceRequest{Topic: "g", Partition: 0, Records: logtest.Filler(int64(i), 4, 1000, byte(i)), Acks: 1}); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, a.tier)
	orphan := segmentKey("g", 0, 7, "0123456789abcdef", ".seg")
	elsewhere := segmentKey("other", 0, 0, "0123456789abcdef", ".seg")
	for _, k := range []string{orphan, elsewhere} {
		if _, err := b.Put(ctx, k, bytes.NewReader([]byte("x")), 1); err != nil {
			t.Fatal(err)
		}
	}
	before := bucketKeys(t, b)
	// The follower has not synced: its catalog names none of the leader's
	// objects.
	if gone, err := f.tier.GC(ctx, false, 0); err != nil || len(gone) != 0 {
		t.Fatalf("gc on the follower: %v, %v", gone, err)
	}
	gone, err := a.tier.GC(ctx, false, 0)
	if err != nil || len(gone) != 1 || gone[0].Key != orphan {
		t.Fatalf("gc on the leader deleted %v (%v), want only %s", gone, err, orphan)
	}
	if after := bucketKeys(t, b); len(after) != len(before)-1 || !after[elsewhere] {
		t.Fatalf("bucket had %d objects, has %d after gc", len(before), len(after))
	}
}
