package logstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore/logtest"
)

// fillLog produces n batches of 1..3 records into a small-segment
// partition and returns them as read back.
func fillLog(t *testing.T, ts *testStore, n int) [][]byte {
	t.Helper()
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{SegmentBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		produce(t, ts.Store, "t", 0, logtest.Filler(int64(i), 1+i%3, 60, byte(i)))
	}
	return readAll(t, ts.Store, "t", 0, 0)
}

// checkTruncatedLog checks that the partition holds exactly want, that
// its catalog records agree with its segments, and that it takes appends
// at the right offset.
func checkTruncatedLog(t *testing.T, ts *testStore, want [][]byte) {
	t.Helper()
	got := readAll(t, ts.Store, "t", 0, 0)
	if len(got) != len(want) {
		t.Fatalf("log holds %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	end := int64(0)
	if len(want) > 0 {
		end = nextOffset(want[len(want)-1])
	}
	info, err := ts.DescribePartition(context.Background(), "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if info.LogEndOffset != end || info.HighWatermark != end {
		t.Fatalf("log end %d hw %d, want %d", info.LogEndOffset, info.HighWatermark, end)
	}
	recs, err := ts.cat.Segments("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != info.Segments {
		t.Fatalf("%d catalog records for %d segments", len(recs), info.Segments)
	}
	last := recs[len(recs)-1]
	if last.State != catalog.StateActive || last.EndOffset != end || last.BaseOffset > end {
		t.Fatalf("last record %+v, log end %d", last, end)
	}
	for _, r := range recs {
		if r.State == catalog.StateDeleting || r.BaseOffset > end {
			t.Fatalf("record %+v survives a truncation to %d", r, end)
		}
	}
	res := produce(t, ts.Store, "t", 0, logtest.Filler(1, 2, 10, 9))
	if res.BaseOffset != end {
		t.Fatalf("append after truncation at %d, want %d", res.BaseOffset, end)
	}
}

func TestTruncate(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	all := fillLog(t, ts, 40)
	info, _ := ts.DescribePartition(ctx, "t", 0)
	if info.Segments < 4 {
		t.Fatalf("only %d segments; the test needs several", info.Segments)
	}
	// Past the end: nothing changes.
	if err := ts.Truncate(ctx, "t", 0, info.LogEndOffset+5); err != nil {
		t.Fatal(err)
	}
	// Inside a batch of a sealed segment: that batch goes too.
	k := 17
	h, _ := ParseBatchHeader(all[k])
	if h.LastOffsetDelta == 0 {
		k++
		h, _ = ParseBatchHeader(all[k])
	}
	if err := ts.Truncate(ctx, "t", 0, h.BaseOffset+1); err != nil {
		t.Fatal(err)
	}
	checkTruncatedLog(t, ts, all[:k])
	kept := readAll(t, ts.Store, "t", 0, 0)
	ts = ts.reopen(t)
	got := readAll(t, ts.Store, "t", 0, 0)
	if len(got) != len(kept) {
		t.Fatalf("after restart %d batches, want %d", len(got), len(kept))
	}
	// At a segment's base, and to empty.
	if err := ts.Truncate(ctx, "t", 0, 0); err != nil {
		t.Fatal(err)
	}
	checkTruncatedLog(t, ts, nil)
	// Below the log start: refused.
	for i := 0; i < 10; i++ {
		produce(t, ts.Store, "t", 0, logtest.Filler(1, 2, 60, 1))
	}
	if _, err := ts.DeleteRecords(ctx, "t", 0, 6); err != nil {
		t.Fatal(err)
	}
	if err := ts.Truncate(ctx, "t", 0, 5); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("truncate below the log start: %v", err)
	}
}

// TestTruncateProducerState: a producer's batches above the cut are
// forgotten, so its retry of one is appended again, not acknowledged with
// an offset that no longer holds it.
func TestTruncateProducerState(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{SegmentBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for i := int32(0); i < 8; i++ {
		offs = append(offs, produce(t, ts.Store, "t", 0, idemBatch(3, 0, i*2, 2)).BaseOffset)
	}
	if err := ts.Truncate(ctx, "t", 0, offs[5]); err != nil {
		t.Fatal(err)
	}
	// The batch at seq 8 (the fifth) is still there: its retry is a duplicate.
	if res := produce(t, ts.Store, "t", 0, idemBatch(3, 0, 8, 2)); res.BaseOffset != offs[4] {
		t.Fatalf("retry of a kept batch at %d, want %d", res.BaseOffset, offs[4])
	}
	// The one at seq 10 is gone: it is appended anew at the log end.
	if res := produce(t, ts.Store, "t", 0, idemBatch(3, 0, 10, 2)); res.BaseOffset != offs[5] {
		t.Fatalf("retry of a truncated batch at %d, want %d", res.BaseOffset, offs[5])
	}
}

// TestTruncateCrash stops a truncation after each of its steps, as a crash
// would, and checks that the store recovers a valid log: a prefix of the
// whole one no shorter than the truncated one, with catalog records that
// agree, taking appends.
func TestTruncateCrash(t *testing.T) {
	for step := 1; step <= 3; step++ {
		t.Run(fmt.Sprint("step", step), func(t *testing.T) {
			ts := openTestStore(t, t.TempDir(), nil)
			defer func() { ts.close(t) }()
			all := fillLog(t, ts, 30)
			cut := nextOffset(all[11]) // a batch boundary
			truncateHook = func(p *partition, s int) bool { return s != step }
			err := ts.Truncate(context.Background(), "t", 0, cut)
			truncateHook = nil
			if !errors.Is(err, errTruncateStopped) {
				t.Fatalf("truncate stopped at step %d: %v", step, err)
			}
			ts = ts.reopen(t)
			// A prefix of the log, from the whole of it down to the
			// truncated one: segments the catalog marked deleting go.
			got := readAll(t, ts.Store, "t", 0, 0)
			if len(got) < 12 || len(got) > len(all) {
				t.Fatalf("recovered %d batches; want 12 to %d", len(got), len(all))
			}
			checkTruncatedLog(t, ts, all[:len(got)])
			// The truncation, done again, completes.
			if err := ts.Truncate(context.Background(), "t", 0, cut); err != nil {
				t.Fatal(err)
			}
			checkTruncatedLog(t, ts, all[:12])
		})
	}
}

// TestFailoverTruncatesByEpoch: a leader appends batches its follower never
// copies; the follower takes over at a new epoch and appends others. When
// the old leader returns as a follower it truncates to where its epoch
// ends on the new leader, then copies the new leader's log, so both logs
// end up the same.
func TestFailoverTruncatesByEpoch(t *testing.T) {
	a, b := newReplNode(t, storeA, nil), newReplNode(t, storeB, nil)
	ctx := context.Background()
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	b.follow(t, storeA, 1)
	for i := 0; i < 5; i++ {
		produceAcks1(t, a.Store, logtest.Filler(1, 2, 20, byte(i)))
	}
	for b.info(t).LogEndOffset < a.info(t).LogEndOffset {
		mustReplicate(t, a, b, 1)
	}
	shared := a.info(t).LogEndOffset
	// Appended on a alone (acks=1), then a fails.
	for i := 0; i < 3; i++ {
		if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 20, 0xa0)}); err != nil {
			t.Fatal(err)
		}
	}
	b.lead(t, 2, []int32{storeB}, 1)
	for i := 0; i < 2; i++ {
		produce(t, b.Store, replTopic, 0, logtest.Filler(1, 3, 20, 0xb0))
	}
	// a returns as b's follower: truncation by epoch first.
	a.follow(t, storeB, 2)
	local, err := a.OffsetForLeaderEpoch(ctx, replTopic, 0, math.MaxInt32)
	if err != nil || local.LeaderEpoch != 1 {
		t.Fatalf("a's latest epoch %+v, %v", local, err)
	}
	remote, err := b.OffsetForLeaderEpoch(ctx, replTopic, 0, local.LeaderEpoch)
	if err != nil || remote != (EpochEnd{1, shared}) {
		t.Fatalf("b's end of epoch 1: %+v, %v; want (1, %d)", remote, err, shared)
	}
	if err := a.Truncate(ctx, replTopic, 0, min(remote.EndOffset, local.EndOffset)); err != nil {
		t.Fatal(err)
	}
	if got := a.info(t); got.LogEndOffset != shared {
		t.Fatalf("a truncated to %d, want %d", got.LogEndOffset, shared)
	}
	b.lead(t, 2, []int32{storeB, storeA}, 1)
	for a.info(t).LogEndOffset < b.info(t).LogEndOffset {
		mustReplicate(t, b, a, 2)
	}
	la, lb := readAllRaw(t, a, 0), readAll(t, b.Store, replTopic, 0, 0)
	if len(la) != len(lb) {
		t.Fatalf("a holds %d batches, b %d", len(la), len(lb))
	}
	for i := range la {
		if !bytes.Equal(la[i], lb[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if e := batchEpoch(la[len(la)-1]); e != 2 {
		t.Fatalf("last batch epoch %d", e)
	}
	for _, n := range []*replNode{a, b} {
		if got, _ := n.OffsetForLeaderEpoch(ctx, replTopic, 0, 1); got != (EpochEnd{1, shared}) {
			t.Fatalf("store %d: end of epoch 1 %+v", n.id, got)
		}
		if got, _ := n.OffsetForLeaderEpoch(ctx, replTopic, 0, 7); got != (EpochEnd{2, nextOffset(lb[len(lb)-1])}) {
			t.Fatalf("store %d: end of epoch 7 (the latest, 2) %+v", n.id, got)
		}
		if got, _ := n.OffsetForLeaderEpoch(ctx, replTopic, 0, 0); got != (EpochEnd{-1, -1}) {
			t.Fatalf("store %d: epoch 0, older than every one: %+v", n.id, got)
		}
	}
}

// TestFailoverDedup: an idempotent producer's retry, sent to the new
// leader after a failover, is acknowledged with the original offset: the
// follower rebuilt the producer state from the batches it copied.
func TestFailoverDedup(t *testing.T) {
	a, b := newReplNode(t, storeA, nil), newReplNode(t, storeB, nil)
	ctx := context.Background()
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	b.follow(t, storeA, 1)
	var offs []int64
	for i := int32(0); i < 3; i++ {
		res, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: idemBatch(11, 0, i*2, 2)})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, res.BaseOffset)
	}
	for b.info(t).LogEndOffset < a.info(t).LogEndOffset {
		mustReplicate(t, a, b, 1)
	}
	b.lead(t, 2, []int32{storeB}, 1)
	end := b.info(t).LogEndOffset
	res, err := b.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: idemBatch(11, 0, 4, 2)})
	if err != nil || res.BaseOffset != offs[2] {
		t.Fatalf("retry on the new leader: offset %d, %v; want %d", res.BaseOffset, err, offs[2])
	}
	if got := b.info(t).LogEndOffset; got != end {
		t.Fatalf("the retry was appended: log end %d, was %d", got, end)
	}
	if _, err := b.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: idemBatch(11, 0, 7, 2)}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a gap on the new leader: %v", err)
	}
	if res, err := b.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: idemBatch(11, 0, 6, 2)}); err != nil || res.BaseOffset != end {
		t.Fatalf("the next batch: %d, %v", res.BaseOffset, err)
	}
}

// TestTruncateFully: a follower starts over at its leader's log start,
// and a restart (or a crash after the catalog recorded it) keeps the new
// start.
func TestTruncateFully(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	fillLog(t, ts, 20)
	if err := ts.SetReplicaState(ctx, "t", 0, ReplicaState{Role: RoleLeader, LeaderEpoch: 1, LocalID: 1, ISR: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	if err := ts.TruncateFully(ctx, "t", 0, 100); !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("TruncateFully on a leader: %v", err)
	}
	if err := ts.SetReplicaState(ctx, "t", 0, ReplicaState{Role: RoleFollower, LeaderEpoch: 2, Leader: 2, LocalID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ts.TruncateFully(ctx, "t", 0, 100); err != nil {
		t.Fatal(err)
	}
	check := func() {
		t.Helper()
		info, err := ts.DescribePartition(ctx, "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if info.LogStartOffset != 100 || info.LogEndOffset != 100 || info.Segments != 1 {
			t.Fatalf("after TruncateFully: %+v", info)
		}
		if e, _ := ts.OffsetForLeaderEpoch(ctx, "t", 0, math.MaxInt32); e != (EpochEnd{-1, -1}) {
			t.Fatalf("epoch cache kept %+v", e)
		}
	}
	check()
	batch := logtest.Filler(1, 2, 10, 1)
	setBaseOffset(batch, 100, 2)
	if end, err := ts.AppendReplica(ctx, "t", 0, batch, 102); err != nil || end != 102 {
		t.Fatalf("AppendReplica at the new start: %d, %v", end, err)
	}
	// Stopped once the catalog holds the new start, as by a crash: the
	// restart finishes it.
	truncateHook = func(p *partition, step int) bool { return step != 2 }
	err := ts.TruncateFully(ctx, "t", 0, 100)
	truncateHook = nil
	if !errors.Is(err, errTruncateStopped) {
		t.Fatalf("TruncateFully stopped: %v", err)
	}
	ts = ts.reopen(t)
	check()
}

// TestTruncateAtSegmentBoundary: a cut at a segment boundary leaves the
// segments below whole (their records, and so their uploads, stay valid)
// and an empty active segment at the cut, and the producer state knows
// nothing of the batches cut, after a restart too.
func TestTruncateAtSegmentBoundary(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), nil)
	defer func() { ts.close(t) }()
	ctx := context.Background()
	if err := ts.CreatePartition(ctx, "t", 0, PartitionConfig{SegmentBytes: 1024}); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for i := int32(0); i < 12; i++ {
		offs = append(offs, produce(t, ts.Store, "t", 0, idemBatch(3, 0, i*2, 2)).BaseOffset)
	}
	recs, err := ts.cat.Segments("t", 0)
	if err != nil || len(recs) < 3 {
		t.Fatalf("%d segments, %v", len(recs), err)
	}
	cut := recs[1].EndOffset
	k := 0
	for offs[k] < cut {
		k++
	}
	if err := ts.Truncate(ctx, "t", 0, cut); err != nil {
		t.Fatal(err)
	}
	after, err := ts.cat.Segments("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 3 || after[1].BaseOffset != recs[1].BaseOffset || after[1].EndOffset != cut ||
		after[1].SegmentID != recs[1].SegmentID || after[2].BaseOffset != cut {
		t.Fatalf("segments after a cut at %d: %+v", cut, after)
	}
	ts = ts.reopen(t)
	// The first batch cut is appended anew, not taken for a duplicate.
	if res := produce(t, ts.Store, "t", 0, idemBatch(3, 0, int32(k)*2, 2)); res.BaseOffset != cut {
		t.Fatalf("retry of a cut batch at %d, want %d", res.BaseOffset, cut)
	}
	if info, _ := ts.DescribePartition(ctx, "t", 0); info.LogEndOffset != cut+2 {
		t.Fatalf("log end %d after the retry, want %d: taken for a duplicate", info.LogEndOffset, cut+2)
	}
}
