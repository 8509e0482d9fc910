package logstore

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// Store ids of the two-store replication tests.
const (
	storeA int32 = 1
	storeB int32 = 2
)

// replNode is one store of an in-process replication test.
type replNode struct {
	*testStore
	id int32
}

const replTopic = "r"

func newReplNode(t *testing.T, id int32, mod func(*Options)) *replNode {
	t.Helper()
	ts := openTestStore(t, t.TempDir(), mod)
	n := &replNode{testStore: ts, id: id}
	t.Cleanup(func() { n.close(t) }) // n.testStore, which a test may have reopened
	if err := ts.CreatePartition(context.Background(), replTopic, 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *replNode) lead(t *testing.T, epoch int32, isr []int32, minISR int) {
	t.Helper()
	err := n.SetReplicaState(context.Background(), replTopic, 0, ReplicaState{Role: RoleLeader, LeaderEpoch: epoch,
		Leader: n.id, LocalID: n.id, Replicas: []int32{storeA, storeB}, ISR: isr, MinISR: minISR})
	if err != nil {
		t.Fatal(err)
	}
}

func (n *replNode) follow(t *testing.T, leader int32, epoch int32) {
	t.Helper()
	err := n.SetReplicaState(context.Background(), replTopic, 0, ReplicaState{Role: RoleFollower, LeaderEpoch: epoch,
		Leader: leader, LocalID: n.id, Replicas: []int32{storeA, storeB}, ISR: []int32{storeA, storeB}, MinISR: 1})
	if err != nil {
		t.Fatal(err)
	}
}

func (n *replNode) info(t *testing.T) PartitionInfo {
	t.Helper()
	info, err := n.DescribePartition(context.Background(), replTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// replicate is one round of a follower's fetcher: a fetch from the
// leader at the local log end, then AppendReplica. It returns how many
// bytes it copied.
func replicate(t *testing.T, ctx context.Context, leader, follower *replNode, epoch int32, wait time.Duration) (int, error) {
	from := follower.info(t).LogEndOffset
	res, err := leader.Fetch(ctx, &FetchRequest{MaxWait: wait, MinBytes: 1, Partitions: []FetchPartition{{
		Topic: replTopic, Partition: 0, Offset: from, MaxBytes: 1 << 20, FollowerID: follower.id, LeaderEpoch: epoch}}})
	if err != nil {
		return 0, err
	}
	defer res.Release()
	pr := res.Partitions[0]
	if pr.Err != nil {
		return 0, pr.Err
	}
	b, err := pr.Records.ReadAll(nil)
	if err != nil {
		return 0, err
	}
	if _, err := follower.AppendReplica(ctx, replTopic, 0, b, pr.HighWatermark); err != nil {
		return 0, err
	}
	return len(b), nil
}

func mustReplicate(t *testing.T, leader, follower *replNode, epoch int32) int {
	t.Helper()
	n, err := replicate(t, context.Background(), leader, follower, epoch, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// consumerRead fetches as a consumer from offset and returns the bytes
// and the high watermark.
func consumerRead(t *testing.T, s *Store, from int64) ([]byte, int64, error) {
	t.Helper()
	res, err := s.Fetch(context.Background(), &FetchRequest{Partitions: []FetchPartition{{Topic: replTopic, Partition: 0,
		Offset: from, MaxBytes: 1 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	pr := res.Partitions[0]
	if pr.Err != nil {
		return nil, pr.HighWatermark, pr.Err
	}
	b, err := pr.Records.ReadAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b, pr.HighWatermark, nil
}

func waitLEO(t *testing.T, n *replNode, leo int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n.info(t).LogEndOffset >= leo {
			return
		}
	}
	t.Fatalf("log end never reached %d", leo)
}

// produceAcks1 produces to the replication tests' partition with acks=1,
// which does not wait for followers.
func produceAcks1(t *testing.T, s *Store, batch []byte) ProduceResult {
	t.Helper()
	res, err := s.Produce(context.Background(), &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: batch})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func batchEpoch(b []byte) int32 { return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])) }

// TestReplicationAcksAllWaitsForFollower: an acks=all produce is answered
// only once the follower's fetch shows it has the batch, and consumers of
// the leader see nothing above the high watermark meanwhile.
func TestReplicationAcksAllWaitsForFollower(t *testing.T) {
	a, b := newReplNode(t, storeA, nil), newReplNode(t, storeB, nil)
	a.lead(t, 1, []int32{storeA, storeB}, 2)
	b.follow(t, storeA, 1)
	ctx := context.Background()

	done := make(chan error, 1)
	var res ProduceResult
	go func() {
		var err error
		res, err = a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: logtest.Filler(1, 3, 20, 1)})
		done <- err
	}()
	waitLEO(t, a, 3)
	if got := a.info(t); got.HighWatermark != 0 {
		t.Fatalf("high watermark %d before the follower fetched", got.HighWatermark)
	}
	if data, hw, err := consumerRead(t, a.Store, 0); err != nil || len(data) != 0 || hw != 0 {
		t.Fatalf("consumer read above the high watermark: %d bytes, hw %d, %v", len(data), hw, err)
	}
	if lo, err := a.ListOffsets(ctx, replTopic, 0, TimestampLatest); err != nil || lo.Offset != 0 {
		t.Fatalf("ListOffsets latest %d, %v; want 0", lo.Offset, err)
	}
	if _, err := a.DeleteRecords(ctx, replTopic, 0, 2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("DeleteRecords above the high watermark: %v", err)
	}
	// The first fetch (at 0) copies the batch but tells the leader only
	// that the follower had nothing.
	if n := mustReplicate(t, a, b, 1); n == 0 {
		t.Fatal("follower fetch read nothing")
	}
	select {
	case err := <-done:
		t.Fatalf("acks=all answered (%v) before the follower confirmed", err)
	default:
	}
	// The next fetch, at 3, moves the high watermark.
	mustReplicate(t, a, b, 1)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.BaseOffset != 0 {
		t.Fatalf("base offset %d", res.BaseOffset)
	}
	data, hw, err := consumerRead(t, a.Store, 0)
	if err != nil || hw != 3 || len(data) == 0 {
		t.Fatalf("after replication: %d bytes, hw %d, %v", len(data), hw, err)
	}
	if e := batchEpoch(data); e != 1 {
		t.Fatalf("leader stamped epoch %d, want 1", e)
	}
	// The follower holds the same batch, epoch included, and its high
	// watermark follows the leader's.
	if got := b.info(t); got.LogEndOffset != 3 || got.HighWatermark != 3 {
		t.Fatalf("follower log end %d hw %d", got.LogEndOffset, got.HighWatermark)
	}
	st, err := a.ReplicaStatuses(ctx)
	if err != nil || len(st) != 1 || st[0].HighWatermark != 3 || len(st[0].Followers) != 1 ||
		st[0].Followers[0].LEO != 3 || st[0].Followers[0].LastCaughtUp.IsZero() {
		t.Fatalf("leader status %+v, %v", st, err)
	}
	// acks=1 answers after the local append alone.
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 20, 2)}); err != nil {
		t.Fatal(err)
	}
	if got := a.info(t); got.LogEndOffset != 4 || got.HighWatermark != 3 {
		t.Fatalf("after acks=1: log end %d hw %d", got.LogEndOffset, got.HighWatermark)
	}
}

// TestReplicationLoop runs a follower's fetcher as a goroutine that long
// polls: acks=all produces complete one after another, and both logs end
// up the same.
func TestReplicationLoop(t *testing.T) {
	for _, policy := range []FlushPolicy{FlushNone, FlushInterval, FlushAlways} {
		t.Run(string(policy), func(t *testing.T) {
			mod := func(o *Options) { o.Flush = policy; o.FlushInterval = 2 * time.Millisecond }
			a, b := newReplNode(t, storeA, mod), newReplNode(t, storeB, mod)
			a.lead(t, 3, []int32{storeA, storeB}, 2)
			b.follow(t, storeA, 3)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if _, err := replicate(t, ctx, a, b, 3, time.Second); err != nil && ctx.Err() == nil {
						t.Error(err)
						return
					}
				}
			}()
			for i := 0; i < 30; i++ {
				if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1,
					Records: logtest.Filler(1, 1+i%3, 30, byte(i))}); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			wg.Wait()
			la, lb := readAll(t, a.Store, replTopic, 0, 0), readAllRaw(t, b, 0)
			if len(la) != len(lb) {
				t.Fatalf("leader has %d batches, follower %d", len(la), len(lb))
			}
			for i := range la {
				if string(la[i]) != string(lb[i]) {
					t.Fatalf("batch %d differs", i)
				}
			}
		})
	}
}

// readAllRaw reads a follower's log, which consumers may not, by making it
// standalone for a moment on a copy of its state.
func readAllRaw(t *testing.T, n *replNode, from int64) [][]byte {
	t.Helper()
	var st ReplicaStatus
	all, err := n.ReplicaStatuses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		st = s
	}
	if err := n.SetReplicaState(context.Background(), replTopic, 0, ReplicaState{}); err != nil {
		t.Fatal(err)
	}
	waitHW(t, n.Store, replTopic, 0) // under flush=interval, the last sync may be to come
	out := readAll(t, n.Store, replTopic, 0, from)
	if st.Role == RoleFollower {
		n.follow(t, storeA, st.LeaderEpoch)
	}
	return out
}

func TestNotEnoughReplicas(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	a.lead(t, 0, []int32{storeA}, 2)
	ctx := context.Background()
	_, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: logtest.Filler(1, 2, 10, 1)})
	if !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 1 < min 2: %v", err)
	}
	if got := a.info(t); got.LogEndOffset != 0 {
		t.Fatalf("refused produce wrote: log end %d", got.LogEndOffset)
	}
	// acks=1 does not ask for the ISR.
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 2, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	// With the ISR shrinking below min.insync.replicas while a produce
	// waits, the produce fails once the high watermark passes it.
	a.lead(t, 0, []int32{storeA, storeB}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: logtest.Filler(1, 2, 10, 1)})
		done <- err
	}()
	waitLEO(t, a, 4)
	a.lead(t, 0, []int32{storeA}, 2)
	if err := <-done; !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("acks=all after the ISR shrank: %v", err)
	}
}

func TestFollowerFetchEpochs(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	a.lead(t, 5, []int32{storeA, storeB}, 1)
	fetch := func(follower, epoch int32) error {
		res, err := a.Fetch(context.Background(), &FetchRequest{Partitions: []FetchPartition{{Topic: replTopic,
			Offset: 0, FollowerID: follower, LeaderEpoch: epoch}}})
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
		return res.Partitions[0].Err
	}
	if err := fetch(storeB, 4); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	if err := fetch(storeB, 6); !errors.Is(err, ErrUnknownLeaderEpoch) {
		t.Fatalf("newer epoch: %v", err)
	}
	if err := fetch(storeB, 5); err != nil {
		t.Fatalf("current epoch: %v", err)
	}
	if err := fetch(9, 5); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a store that is no replica: %v", err)
	}
	// A follower, or a partition without a role, serves no follower.
	b := newReplNode(t, storeB, nil)
	for _, follow := range []bool{false, true} {
		if follow {
			b.follow(t, storeA, 5)
		}
		res, err := b.Fetch(context.Background(), &FetchRequest{Partitions: []FetchPartition{{Topic: replTopic,
			FollowerID: storeA, LeaderEpoch: 5}}})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res.Partitions[0].Err, ErrNotLeader) {
			t.Fatalf("follower fetch from a non-leader: %v", res.Partitions[0].Err)
		}
	}
}

// TestFollowerOnlyRoles: a follower refuses consumers and produce; only a
// follower takes AppendReplica, which checks where the records start.
func TestFollowerOnlyRoles(t *testing.T) {
	ctx := context.Background()
	b := newReplNode(t, storeB, nil)
	// Standalone: AppendReplica is refused.
	if _, err := b.AppendReplica(ctx, replTopic, 0, logtest.Filler(1, 1, 10, 1), 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("AppendReplica on a standalone partition: %v", err)
	}
	b.follow(t, storeA, 1)
	if _, err := b.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce on a follower: %v", err)
	}
	if _, _, err := consumerRead(t, b.Store, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("consumer fetch on a follower: %v", err)
	}
	if _, err := b.ListOffsets(ctx, replTopic, 0, TimestampLatest); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ListOffsets on a follower: %v", err)
	}
	batch := logtest.Filler(1, 2, 10, 1)
	setBaseOffset(batch, 5, 1)
	_, err := b.AppendReplica(ctx, replTopic, 0, batch, 0)
	if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "offset 5") || !strings.Contains(err.Error(), "ends at 0") {
		t.Fatalf("AppendReplica at the wrong offset: %v", err)
	}
	bad := append([]byte(nil), batch...)
	setBaseOffset(bad, 0, 1)
	bad[len(bad)-1] ^= 1
	if _, err := b.AppendReplica(ctx, replTopic, 0, bad, 0); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("AppendReplica of a corrupt batch: %v", err)
	}
	setBaseOffset(batch, 0, 1)
	if end, err := b.AppendReplica(ctx, replTopic, 0, batch, 1); err != nil || end != 2 {
		t.Fatalf("AppendReplica: end %d, %v", end, err)
	}
	if got := b.info(t); got.HighWatermark != 1 {
		t.Fatalf("follower hw %d, want the leader's 1", got.HighWatermark)
	}
	if end, err := b.AppendReplica(ctx, replTopic, 0, nil, 7); err != nil || end != 2 {
		t.Fatalf("empty AppendReplica: end %d, %v", end, err)
	}
	if got := b.info(t); got.HighWatermark != 2 {
		t.Fatalf("follower hw %d, want its log end 2", got.HighWatermark)
	}
	// The leader's high watermark is lower (this replica restarted with
	// its own at its log end): the follower's follows it down.
	if _, err := b.AppendReplica(ctx, replTopic, 0, nil, 1); err != nil {
		t.Fatal(err)
	}
	if got := b.info(t); got.HighWatermark != 1 {
		t.Fatalf("follower hw %d, want the leader's 1", got.HighWatermark)
	}
	if e, err := b.OffsetForLeaderEpoch(ctx, replTopic, 0, 1); err != nil || e != (EpochEnd{1, 2}) {
		t.Fatalf("follower epoch cache: %+v, %v", e, err)
	}
}

// TestFollowerLongPollWakesOnAppend: a follower waiting at the log end is
// woken by an append the high watermark has not passed, and a consumer
// waiting at the high watermark is not.
func TestFollowerLongPollWakesOnAppend(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	ctx := context.Background()
	consumer := &FetchRequest{MaxWait: time.Minute, MinBytes: 1, Partitions: []FetchPartition{{Topic: replTopic, MaxBytes: 1 << 20}}}
	res, cwaits, err := a.fetchOnce(ctx, consumer, true)
	if err != nil || len(cwaits) != 1 {
		t.Fatalf("consumer fetch: %d waits, %v", len(cwaits), err)
	}
	res.Release()
	got := make(chan int, 1)
	go func() {
		res, err := a.Fetch(ctx, &FetchRequest{MaxWait: time.Minute, MinBytes: 1, Partitions: []FetchPartition{{Topic: replTopic,
			MaxBytes: 1 << 20, FollowerID: storeB, LeaderEpoch: 1}}})
		if err != nil {
			t.Error(err)
		}
		got <- res.Partitions[0].Records.Size()
		res.Release()
	}()
	// Wait until the follower's long poll is registered, then append.
	for {
		registered := false
		if err := a.onShard(ctx, replTopic, 0, func(_ *shard, p *partition) error {
			registered = p.appendNotify != nil
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if registered {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)}); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n == 0 {
		t.Fatal("follower long poll answered empty")
	}
	select {
	case <-cwaits[0]:
		t.Fatal("a consumer was woken by an append below no high watermark move")
	default:
	}
}

func TestLastCaughtUp(t *testing.T) {
	p := &partition{topic: "t", rep: &replica{role: RoleLeader, localID: 1, isr: []int32{1}, minISR: 1,
		followers: []follower{{id: 2, leo: -1, lastFetchLEO: -1}}}}
	s := &shard{}
	f := &p.rep.followers[0]
	t0 := time.Unix(1000, 0)
	// Behind, first fetch: not caught up.
	s.noteFollowerFetch(p, f, 5, 10, t0)
	if !f.lastCaughtUp.IsZero() {
		t.Fatalf("caught up at %v while behind", f.lastCaughtUp)
	}
	// Past the leader's log end as of the previous fetch: caught up as of then.
	s.noteFollowerFetch(p, f, 10, 20, t0.Add(time.Second))
	if !f.lastCaughtUp.Equal(t0) {
		t.Fatalf("caught up at %v, want the previous fetch's %v", f.lastCaughtUp, t0)
	}
	// At the log end: caught up now.
	s.noteFollowerFetch(p, f, 20, 20, t0.Add(2*time.Second))
	if !f.lastCaughtUp.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("caught up at %v", f.lastCaughtUp)
	}
	// Falling behind keeps the time.
	s.noteFollowerFetch(p, f, 21, 40, t0.Add(3*time.Second))
	s.noteFollowerFetch(p, f, 22, 50, t0.Add(4*time.Second))
	if !f.lastCaughtUp.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("caught up at %v after falling behind", f.lastCaughtUp)
	}
	if f.leo != 22 {
		t.Fatalf("follower leo %d", f.leo)
	}
}

func TestStandaloneHasNoReplicaStatus(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	st, err := a.ReplicaStatuses(context.Background())
	if err != nil || len(st) != 0 {
		t.Fatalf("standalone statuses %+v, %v", st, err)
	}
	a.lead(t, 2, []int32{storeA}, 1)
	if err := a.SetReplicaState(context.Background(), replTopic, 0, ReplicaState{Role: RoleLeader, LeaderEpoch: 1,
		LocalID: storeA, ISR: []int32{storeA}}); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("an older epoch: %v", err)
	}
	if _, err := a.OffsetForLeaderEpoch(context.Background(), replTopic, 0, math.MaxInt32); err != nil {
		t.Fatal(err)
	}
}

// TestLease: once the store's lease on leadership has run out, a leader
// refuses produce and consumer fetches, still serves follower fetches, and
// a partition without a role is not concerned; a later lease restores
// service, and an earlier one does not cut the lease held.
func TestLease(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	ctx := context.Background()
	if err := a.CreatePartition(ctx, "solo", 0, PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	a.lead(t, 1, []int32{storeA}, 1)
	produceAcks1(t, a.Store, logtest.Filler(1, 1, 10, 1)) // no lease yet: served
	a.SetLease(time.Now().Add(-time.Second))
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce after the lease: %v", err)
	}
	if _, _, err := consumerRead(t, a.Store, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("consumer fetch after the lease: %v", err)
	}
	if _, err := a.ListOffsets(ctx, replTopic, 0, TimestampLatest); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("ListOffsets after the lease: %v", err)
	}
	res, err := a.Fetch(ctx, &FetchRequest{Partitions: []FetchPartition{{Topic: replTopic, MaxBytes: 1 << 20,
		FollowerID: storeB, LeaderEpoch: 1}}})
	if err != nil || res.Partitions[0].Err != nil || res.Partitions[0].Records.Size() == 0 {
		t.Fatalf("follower fetch after the lease: %+v, %v", res.Partitions[0], err)
	}
	res.Release()
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: "solo", Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)}); err != nil {
		t.Fatalf("produce to a partition without a role: %v", err)
	}
	a.SetLease(time.Now().Add(time.Hour))
	produceAcks1(t, a.Store, logtest.Filler(1, 1, 10, 1))
	if _, _, err := consumerRead(t, a.Store, 0); err != nil {
		t.Fatalf("consumer fetch under a lease: %v", err)
	}
	a.SetLease(time.Now().Add(-time.Second))
	produceAcks1(t, a.Store, logtest.Filler(1, 1, 10, 1))
}

// TestRequireRole: with Options.RequireRole a partition serves clients
// only once it has a role.
func TestRequireRole(t *testing.T) {
	a := newReplNode(t, storeA, func(o *Options) { o.RequireRole = true })
	ctx := context.Background()
	if _, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("produce without a role: %v", err)
	}
	if _, _, err := consumerRead(t, a.Store, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("fetch without a role: %v", err)
	}
	a.lead(t, 0, []int32{storeA}, 1)
	produceAcks1(t, a.Store, logtest.Filler(1, 1, 10, 1))
	if data, _, err := consumerRead(t, a.Store, 0); err != nil || len(data) == 0 {
		t.Fatalf("fetch as leader: %d bytes, %v", len(data), err)
	}
}

// TestLeaderDuplicateWaitsForHW: an idempotent retry with acks=all of a
// batch the leader holds but its follower does not yet is answered with
// the original offset only once the high watermark passes the batch; under
// flush=always an acks=1 produce waits for the local sync alone.
func TestLeaderDuplicateWaitsForHW(t *testing.T) {
	mod := func(o *Options) { o.Flush = FlushAlways }
	a, b := newReplNode(t, storeA, mod), newReplNode(t, storeB, mod)
	a.lead(t, 1, []int32{storeA, storeB}, 2)
	b.follow(t, storeA, 1)
	ctx := context.Background()
	first := produceAcks1(t, a.Store, idemBatch(5, 0, 0, 3))
	if got := a.info(t); got.LogEndOffset != 3 || got.HighWatermark != 0 {
		t.Fatalf("after acks=1 on a leader: log end %d hw %d", got.LogEndOffset, got.HighWatermark)
	}
	done := make(chan ProduceResult, 1)
	go func() {
		res, err := a.Produce(ctx, &ProduceRequest{Topic: replTopic, Partition: 0, Acks: -1, Records: idemBatch(5, 0, 0, 3)})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	// Wait until the retry is parked, then let the follower catch up.
	for {
		parked := false
		if err := a.onShard(ctx, replTopic, 0, func(_ *shard, p *partition) error {
			parked = len(p.waitAcks) == 1
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if parked {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if got := a.info(t); got.LogEndOffset != 3 {
		t.Fatalf("the retry was appended: log end %d", got.LogEndOffset)
	}
	mustReplicate(t, a, b, 1)
	mustReplicate(t, a, b, 1)
	if res := <-done; res.BaseOffset != first.BaseOffset {
		t.Fatalf("retry answered with offset %d, want %d", res.BaseOffset, first.BaseOffset)
	}
}

// TestConsumerAboveHWWaits: a consumer's offset between a leader's high
// watermark and its log end (read to the old leader's high watermark
// before a failover) gets an empty answer, not ErrOffsetOutOfRange.
func TestConsumerAboveHWWaits(t *testing.T) {
	a := newReplNode(t, storeA, nil)
	a.lead(t, 1, []int32{storeA, storeB}, 1)
	produceAcks1(t, a.Store, logtest.Filler(1, 3, 10, 1))
	if data, hw, err := consumerRead(t, a.Store, 2); err != nil || len(data) != 0 || hw != 0 {
		t.Fatalf("consumer at 2, hw 0, log end 3: %d bytes, hw %d, %v", len(data), hw, err)
	}
	if _, _, err := consumerRead(t, a.Store, 4); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("consumer past the log end: %v", err)
	}
}
