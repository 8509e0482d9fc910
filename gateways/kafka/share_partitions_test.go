package kafka

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// spans makes batch spans of one record each for offsets [from, to).
func spans(from, to int64) []batchSpan {
	var out []batchSpan
	for o := from; o < to; o++ {
		out = append(out, batchSpan{base: o, last: o})
	}
	return out
}

var testLimits = shareLimits{lock: time.Minute, maxCount: 3, maxLocks: 100}

func TestSharePartitionAcquireAck(t *testing.T) {
	sp := newSharePartition("g", "t", 0)
	sp.initLocked(10)
	now := time.Now()
	// A takes 10-14, B gets what is left, never the same records.
	a := sp.acquireLocked("A", spans(10, 20), 5, true, now, testLimits)
	if len(a) != 1 || a[0] != (acquired{10, 14, 1}) {
		t.Fatalf("A acquired %v", a)
	}
	b := sp.acquireLocked("B", spans(10, 20), 100, true, now, testLimits)
	if len(b) != 1 || b[0] != (acquired{15, 19, 1}) {
		t.Fatalf("B acquired %v", b)
	}
	// B cannot acknowledge A's records; nothing of the request applies.
	err := sp.acknowledgeLocked("B", []ackBatch{{15, 15, []int8{ackAccept}}, {12, 12, []int8{ackAccept}}}, now, testLimits)
	if !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging another member's record: %v", err)
	}
	if sp.mu.recs[15].state != recAcquired {
		t.Fatal("a failed acknowledgement applied part of itself")
	}
	// Never acquired, and beyond the window.
	if err := sp.acknowledgeLocked("A", []ackBatch{{30, 30, []int8{ackAccept}}}, now, testLimits); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging an offset never acquired: %v", err)
	}
	// A accepts 10-11, releases 12, rejects 13, accepts 14.
	if err := sp.acknowledgeLocked("A", []ackBatch{{10, 14, []int8{ackAccept, ackAccept, ackRelease, ackReject, ackAccept}}}, now, testLimits); err != nil {
		t.Fatal(err)
	}
	if sp.mu.start != 12 {
		t.Fatalf("SPSO %d after accepting 10-11, want 12", sp.mu.start)
	}
	// Twice is INVALID_RECORD_STATE.
	if err := sp.acknowledgeLocked("A", []ackBatch{{14, 14, []int8{ackAccept}}}, now, testLimits); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging twice: %v", err)
	}
	if len(sp.mu.pending) != 1 || sp.mu.pending[0].offset != 13 || sp.mu.pending[0].reason != "rejected" {
		t.Fatalf("DLQ pending %v", sp.mu.pending)
	}
	// The released record is delivered again, with count 2.
	c := sp.acquireLocked("C", spans(10, 20), 100, true, now, testLimits)
	if len(c) != 1 || c[0] != (acquired{12, 12, 2}) {
		t.Fatalf("redelivery %v", c)
	}
	if err := sp.acknowledgeLocked("C", []ackBatch{{12, 12, []int8{ackAccept}}}, now, testLimits); err != nil {
		t.Fatal(err)
	}
	// The rejected record holds the SPSO until its DLQ write is done.
	if sp.mu.start != 13 {
		t.Fatalf("SPSO %d, want 13 (the rejected record not yet in the DLQ)", sp.mu.start)
	}
	sp.dlqWrittenLocked(sp.mu.pending)
	if sp.mu.start != 15 {
		t.Fatalf("SPSO %d after the DLQ write, want 15", sp.mu.start)
	}
}

func TestSharePartitionLockTimeoutAndDeliveryLimit(t *testing.T) {
	sp := newSharePartition("g", "t", 0)
	sp.initLocked(0)
	now := time.Now()
	for round := int16(1); round <= testLimits.maxCount; round++ {
		got := sp.acquireLocked("A", spans(0, 1), 10, true, now, testLimits)
		if len(got) != 1 || got[0].count != round {
			t.Fatalf("round %d: acquired %v", round, got)
		}
		// Not expired yet: nobody else gets it.
		if other := sp.acquireLocked("B", spans(0, 1), 10, true, now, testLimits); len(other) != 0 {
			t.Fatalf("round %d: a locked record went to another member: %v", round, other)
		}
		now = now.Add(testLimits.lock + time.Millisecond)
		if !sp.expireLocked(now, testLimits) {
			t.Fatalf("round %d: the lock did not expire", round)
		}
	}
	// Delivered maxCount times: archived for the DLQ, never again.
	if len(sp.mu.pending) != 1 || sp.mu.pending[0].count != testLimits.maxCount {
		t.Fatalf("pending %v", sp.mu.pending)
	}
	if got := sp.acquireLocked("A", spans(0, 1), 10, true, now, testLimits); len(got) != 0 {
		t.Fatalf("an archived record was delivered again: %v", got)
	}
	// An acknowledgement after the lock expired is refused.
	sp2 := newSharePartition("g", "t", 1)
	sp2.initLocked(0)
	sp2.acquireLocked("A", spans(0, 2), 10, true, now, testLimits)
	sp2.expireLocked(now.Add(2*testLimits.lock), testLimits)
	if err := sp2.acknowledgeLocked("A", []ackBatch{{0, 1, []int8{ackAccept}}}, now, testLimits); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("acknowledging after the lock expired: %v", err)
	}
}

func TestSharePartitionWindowAndBadInput(t *testing.T) {
	sp := newSharePartition("g", "t", 0)
	sp.initLocked(0)
	now := time.Now()
	lim := shareLimits{lock: time.Minute, maxCount: 5, maxLocks: 4}
	if got := sp.acquireLocked("A", spans(0, 10), 100, true, now, lim); len(got) != 1 || got[0].last != 3 {
		t.Fatalf("window of 4: acquired %v", got)
	}
	// A control batch and a gap move the end, and acquire nothing.
	sp2 := newSharePartition("g", "t", 1)
	sp2.initLocked(0)
	got := sp2.acquireLocked("A", []batchSpan{{base: 0, last: 0, control: true}, {base: 5, last: 6}}, 100, true, now, lim)
	if len(got) != 1 || got[0] != (acquired{5, 6, 1}) || sp2.mu.end != 7 {
		t.Fatalf("acquired %v, end %d", got, sp2.mu.end)
	}
	// A gap acknowledgement where there is no record is fine.
	if err := sp2.acknowledgeLocked("A", []ackBatch{{1, 6, []int8{ackGap, ackGap, ackGap, ackGap, ackAccept, ackAccept}}}, now, lim); err != nil {
		t.Fatal(err)
	}
	if sp2.mu.start != 7 {
		t.Fatalf("SPSO %d, want 7", sp2.mu.start)
	}
	for _, bs := range [][]ackBatch{
		{{5, 4, []int8{1}}},
		{{0, 3, []int8{1, 1}}},
		{{0, 0, []int8{9}}},
		{{0, 0, []int8{ackRenew}}},
		{{2, 3, []int8{1}}, {3, 4, []int8{1}}},
	} {
		if err := checkAckBatches(bs, false); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%v: %v, want INVALID_REQUEST", bs, err)
		}
	}
	if err := checkAckBatches([]ackBatch{{0, 0, []int8{ackRenew}}}, true); err != nil {
		t.Errorf("renew allowed: %v", err)
	}
}

func TestAssignShare(t *testing.T) {
	counts := map[string]int32{"a": 2}
	ms := []assignMember{{id: "m1", topics: []string{"a"}}, {id: "m2", topics: []string{"a"}}, {id: "m3", topics: []string{"a"}}}
	out := assignShare(ms, counts)
	seen := map[int32]int{}
	for _, m := range ms {
		if out[m.id].size() != 1 {
			t.Fatalf("%s got %v", m.id, out[m.id])
		}
		seen[out[m.id]["a"][0]]++
	}
	if seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("a partition has no member: %v", out)
	}
}

func FuzzShareStateKey(f *testing.F) {
	f.Add(shareStateRecord(shareKey{"g", "t", 3}, 5).key)
	f.Add([]byte{0x7a, 0xe2, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, ok := readShareKey(b)
		if ok {
			if again, ok2 := readShareKey(shareStateRecord(k, 0).key); !ok2 || again != k {
				t.Fatalf("round trip of %v", k)
			}
		}
	})
}

// FuzzShareWindow: a share-state value read back never panics, and the
// window it restores stays bounded and ascending.
func FuzzShareWindow(f *testing.F) {
	f.Add(int64(3), []byte(`{"end":9,"win":[[3,4,0,1],[5,6,2,1],[7,8,3,2]]}`))
	f.Add(int64(0), []byte(`{"end":9223372036854775807,"win":[[0,9223372036854775807,0,1]]}`))
	f.Fuzz(func(t *testing.T, start int64, b []byte) {
		var w shareWindow
		if json.Unmarshal(b, &w) != nil || start < 0 {
			return
		}
		sp := newSharePartition("g", "t", 0)
		sp.initLocked(start)
		sp.restoreLocked(w)
		if len(sp.mu.offs) > shareMaxWindow || !slices.IsSorted(sp.mu.offs) || len(sp.mu.offs) != len(sp.mu.recs) {
			t.Fatalf("window of %d offsets (%d records) from %s", len(sp.mu.offs), len(sp.mu.recs), b)
		}
	})
}

func FuzzConsumerGroupSnapshot(f *testing.F) {
	cg := newConsumerGroup()
	cg.Members["m"] = &cgMember{ID: "m", Topics: []string{"t"}, Assigned: topicParts{"t": {0, 1}}}
	_, v := cgSnapshotRecord("g", cg)
	f.Add(v)
	f.Add([]byte(`{"v":1,"members":{"x":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeConsumerGroup(b) // must not panic
	})
}

// TestShareResetReachesOpenPartition: an admin's move of a share
// partition's start offset, written through another gateway (here: the
// record that gateway writes, appended directly), reaches the gateway
// holding the partition open: it reads it on its next persist round and
// reopens the partition from the new start. A deletion drops the open
// partition the same way.
func TestShareResetReachesOpenPartition(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "share-reset", 1)
	produceN(t, cl, "share-reset", 0, 10)
	s := e.gw.shares
	waitFor(t, "the group coordinator to load", func() bool {
		select {
		case <-e.gw.groups.ready:
			return true
		default:
			return false
		}
	})
	k := shareKey{"share-reset-group", "share-reset", 0}
	if _, err := s.partition(ctx, k.group, k.topic, k.part); err != nil {
		t.Fatal(err)
	}
	if start, ok := s.startOffset(k); !ok || start != 10 {
		t.Fatalf("opened at %d (%v), want the high watermark 10", start, ok)
	}
	c := e.gw.groups
	if err := c.write(ctx, c.partitionFor(k.group), []record{shareResetRecord(k, 3)}); err != nil {
		t.Fatal(err)
	}
	s.persist(ctx)
	if start, ok := s.startOffset(k); !ok || start != 3 {
		t.Fatalf("after another gateway's reset to 3: start %d (%v)", start, ok)
	}
	sp, err := s.partition(ctx, k.group, k.topic, k.part)
	if err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	start := sp.mu.start
	sp.mu.Unlock()
	if start != 3 {
		t.Fatalf("reopened at %d, want 3", start)
	}
	if err := c.write(ctx, c.partitionFor(k.group), []record{shareResetRecord(k, -1)}); err != nil {
		t.Fatal(err)
	}
	s.persist(ctx)
	if s.loaded(k) != nil {
		t.Fatal("a deleted share partition is still open")
	}
	if start, ok := s.startOffset(k); ok {
		t.Fatalf("a deleted share partition still has start %d", start)
	}
}

// TestShareMemberGoneReleasesElsewhere: a share member's departure,
// announced by the group's coordinator (here: the tombstone another
// gateway's coordinator writes, appended directly), releases the records
// it acquired in a share partition held by this gateway on its next
// persist round, so other members get them without waiting for the
// acquisition locks to run out.
func TestShareMemberGoneReleasesElsewhere(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "share-gone", 1)
	s := e.gw.shares
	waitFor(t, "the group coordinator to load", func() bool {
		select {
		case <-e.gw.groups.ready:
			return true
		default:
			return false
		}
	})
	k := shareKey{"share-gone-group", "share-gone", 0}
	sp, err := s.partition(ctx, k.group, k.topic, k.part)
	if err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	sp.initLocked(0)
	got := sp.acquireLocked("A", spans(0, 5), 100, true, time.Now(), testLimits)
	sp.mu.Unlock()
	if len(got) != 1 || got[0] != (acquired{0, 4, 1}) {
		t.Fatalf("A acquired %v", got)
	}
	c := e.gw.groups
	if err := c.write(ctx, c.partitionFor(k.group), []record{shareMemberGoneRecord(k.group, "A")}); err != nil {
		t.Fatal(err)
	}
	s.persist(ctx)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for off := int64(0); off < 5; off++ {
		if st := sp.mu.recs[off].state; st != recAvailable {
			t.Fatalf("record %d in state %d after its member left elsewhere, want available", off, st)
		}
	}
}

func FuzzShareMemberGoneKey(f *testing.F) {
	f.Add(shareMemberGoneRecord("g", "member-1").key)
	f.Add([]byte{0x7a, 0xe3, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		group, member, ok := readShareMemberGone(b)
		if !ok {
			return
		}
		if g2, m2, ok := readShareMemberGone(shareMemberGoneRecord(group, member).key); !ok || g2 != group || m2 != member {
			t.Fatalf("re-encoded key: %q %q, was %q %q", g2, m2, group, member)
		}
	})
}
