package kmeta

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
)

// twoStores is a Router over two real stores, each behind its in-process
// ring under the address "s1" or "s2"; dials counts the clients made.
type twoStores struct {
	r      *Router
	stores map[string]*logstore.Store
	mu     sync.Mutex
	dials  map[string]int
	open   map[string]int // clients not closed yet
}

func openStore(t *testing.T) *logstore.Store {
	t.Helper()
	dir := t.TempDir()
	cat, err := catalog.Open(filepath.Join(dir, "catalog"), catalog.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := logstore.Open(logstore.Options{Dir: dir, Catalog: cat, Shards: 2, Logger: quiet()})
	if err != nil {
		cat.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		cat.Close()
	})
	return st
}

// countingBackend reports its Close to the test.
type countingBackend struct {
	ring.Backend
	onClose func()
	once    sync.Once
}

func (b *countingBackend) Close() error {
	b.once.Do(b.onClose)
	return b.Backend.Close()
}

func newTwoStores(t *testing.T) *twoStores {
	ts := &twoStores{stores: map[string]*logstore.Store{"s1": openStore(t), "s2": openStore(t)}, dials: map[string]int{}, open: map[string]int{}}
	ts.r = NewRouter(RouterOptions{Logger: quiet(), LeaderWait: -1, Dial: func(_ context.Context, addr string) (ring.Backend, error) {
		st := ts.stores[addr]
		if st == nil {
			return nil, fmt.Errorf("no store at %s", addr)
		}
		ts.mu.Lock()
		ts.dials[addr]++
		ts.open[addr]++
		ts.mu.Unlock()
		return &countingBackend{Backend: ring.NewInProcess(st), onClose: func() {
			ts.mu.Lock()
			ts.open[addr]--
			ts.mu.Unlock()
		}}, nil
	}})
	t.Cleanup(func() { ts.r.Close() })
	return ts
}

func (ts *twoStores) counts(addr string) (dials, open int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.dials[addr], ts.open[addr]
}

var bothStores = []StoreRing{{ID: 1, Addr: "s1", Version: 1}, {ID: 2, Addr: "s2", Version: 1}}

// snapshot is a topic "t" whose partition p is led by leaders[p].
func snapshot(version uint64, leaders ...int32) *kafka.Metadata {
	tp := &kafka.Topic{Name: "t", Partitions: int32(len(leaders)), ReplicationFactor: 1}
	for _, l := range leaders {
		tp.Parts = append(tp.Parts, kafka.PartitionMeta{Leader: l})
	}
	return kafka.NewMetadata(kafka.MetadataSource{Version: version, Topics: []*kafka.Topic{tp}})
}

func rctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func produceOne(t *testing.T, b ring.Backend, p int32, seed byte) {
	t.Helper()
	_, err := b.Produce(rctx(t), &ring.ProduceRequest{Topic: "t", Partition: p, Acks: 1, Records: logtest.Filler(1, 1, 10+int(seed), seed)})
	if err != nil {
		t.Fatalf("produce t/%d: %v", p, err)
	}
}

func hw(t *testing.T, st *logstore.Store, p int32) int64 {
	t.Helper()
	info, err := st.DescribePartition(rctx(t), "t", p)
	if err != nil {
		t.Fatalf("describe t/%d on the store: %v", p, err)
	}
	return info.HighWatermark
}

func TestRouterSendsEachPartitionToItsLeader(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2, 1, 2), bothStores)
	for p := int32(0); p < 4; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
		produceOne(t, ts.r, p, byte(p))
	}
	for p := int32(0); p < 4; p++ {
		on, off := ts.stores["s1"], ts.stores["s2"]
		if p%2 == 1 {
			on, off = off, on
		}
		if got := hw(t, on, p); got != 1 {
			t.Fatalf("t/%d: leader store holds %d records, want 1", p, got)
		}
		if _, err := off.DescribePartition(rctx(t), "t", p); !errors.Is(err, ring.ErrUnknownPartition) {
			t.Fatalf("t/%d reached the store that does not lead it: %v", p, err)
		}
	}
	if d, _ := ts.counts("s1"); d != 1 {
		t.Fatalf("store 1 dialled %d times, want once for every call", d)
	}
}

func TestRouterFollowsLeaderChange(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1), bothStores)
	for _, st := range ts.stores {
		if err := st.CreatePartition(rctx(t), "t", 0, logstore.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	produceOne(t, ts.r, 0, 1)
	ts.r.Update(snapshot(2, 2), bothStores)
	produceOne(t, ts.r, 0, 2)
	produceOne(t, ts.r, 0, 3)
	if a, b := hw(t, ts.stores["s1"], 0), hw(t, ts.stores["s2"], 0); a != 1 || b != 2 {
		t.Fatalf("records per store after the leader moved: %d and %d, want 1 and 2", a, b)
	}
}

func TestRouterWithoutLeaderAnswersNotLeader(t *testing.T) {
	ts := newTwoStores(t)
	if _, err := ts.r.ListOffsets(rctx(t), "t", 0, ring.TimestampLatest); !errors.Is(err, ring.ErrNotLeader) {
		t.Fatalf("before any metadata: %v, want ErrNotLeader", err)
	}
	// Partition 0 has no leader, 1 is led by a store that is not live.
	ts.r.Update(snapshot(1, kafka.NoLeader, 3, 1), bothStores)
	for p := int32(0); p < 2; p++ {
		_, err := ts.r.Produce(rctx(t), &ring.ProduceRequest{Topic: "t", Partition: p, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)})
		if !errors.Is(err, ring.ErrNotLeader) {
			t.Fatalf("produce to t/%d: %v, want ErrNotLeader", p, err)
		}
		if ke := kafka.ErrorFor(err); ke.Code != 6 {
			t.Fatalf("t/%d answers Kafka code %v, want NOT_LEADER_OR_FOLLOWER", p, ke)
		}
	}
	if _, err := ts.r.DescribePartition(rctx(t), "nope", 0); !errors.Is(err, ring.ErrUnknownPartition) {
		t.Fatalf("a topic not in the metadata: %v, want ErrUnknownPartition", err)
	}
	// Nothing was dialled for them.
	if d, _ := ts.counts("s1"); d != 0 {
		t.Fatalf("store 1 dialled %d times", d)
	}
}

func TestRouterReplacesClientWhenRingMoves(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2), bothStores)
	for p := int32(0); p < 2; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	// Store 1's ring version moves: a new client; store 2 keeps its own.
	ts.r.Update(snapshot(2, 1, 2), []StoreRing{{ID: 1, Addr: "s1", Version: 5}, bothStores[1]})
	produceOne(t, ts.r, 0, 1)
	produceOne(t, ts.r, 1, 1)
	if d, _ := ts.counts("s1"); d != 2 {
		t.Fatalf("store 1 dialled %d times, want 2 (its ring moved)", d)
	}
	if d, _ := ts.counts("s2"); d != 1 {
		t.Fatalf("store 2 dialled %d times, want 1", d)
	}
	// Store 2 leaves: its client is closed, and its partition has no
	// route.
	ts.r.Update(snapshot(3, 1, 2), bothStores[:1])
	waitFor(t, "store 2's client closed", func() bool { _, open := ts.counts("s2"); return open == 0 })
	if _, err := ts.r.DescribePartition(rctx(t), "t", 1); !errors.Is(err, ring.ErrNotLeader) {
		t.Fatalf("partition of a store that left: %v, want ErrNotLeader", err)
	}
	ts.r.Close()
	if _, open := ts.counts("s1"); open != 0 {
		t.Fatalf("%d clients of store 1 open after Close", open)
	}
	if _, err := ts.r.DescribePartition(rctx(t), "t", 0); !errors.Is(err, ring.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling observable state
	}
}

func TestRouterFanOutFetchKeepsRequestOrder(t *testing.T) {
	ts := newTwoStores(t)
	// Partitions alternate between the stores; 4 has no leader.
	ts.r.Update(snapshot(1, 1, 2, 1, 2, kafka.NoLeader), bothStores)
	for p := int32(0); p < 4; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= int(p); i++ { // p+1 records in partition p
			produceOne(t, ts.r, p, byte(p))
		}
	}
	req := &ring.FetchRequest{MaxWait: 10 * time.Second, MinBytes: 1}
	for _, p := range []int32{3, 0, 4, 2, 1} {
		req.Partitions = append(req.Partitions, ring.FetchPartition{Topic: "t", Partition: p, MaxBytes: 1 << 20})
	}
	res, err := ts.r.Fetch(rctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.Partitions) != len(req.Partitions) {
		t.Fatalf("%d results for %d partitions", len(res.Partitions), len(req.Partitions))
	}
	for i, fp := range req.Partitions {
		r := res.Partitions[i]
		if r.Topic != "t" || r.Partition != fp.Partition {
			t.Fatalf("result %d is t/%d, asked for t/%d", i, r.Partition, fp.Partition)
		}
		if fp.Partition == 4 {
			if !errors.Is(r.Err, ring.ErrNotLeader) {
				t.Fatalf("leaderless partition: %v, want ErrNotLeader", r.Err)
			}
			continue
		}
		if r.Err != nil || r.HighWatermark != int64(fp.Partition)+1 || r.Records.Size() == 0 {
			t.Fatalf("t/%d: err %v, high watermark %d, %d bytes", fp.Partition, r.Err, r.HighWatermark, r.Records.Size())
		}
	}
}

// A long poll over two stores ends when one of them has data, and still
// reports the other's partitions.
func TestRouterFanOutLongPollWakes(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2), bothStores)
	for p := int32(0); p < 2; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	produceOne(t, ts.r, 0, 1) // t/0 at 1: fetching from 1 waits
	req := &ring.FetchRequest{MaxWait: time.Minute, MinBytes: 1, Partitions: []ring.FetchPartition{
		{Topic: "t", Partition: 0, Offset: 1, MaxBytes: 1 << 20},
		{Topic: "t", Partition: 1, Offset: 0, MaxBytes: 1 << 20},
	}}
	type result struct {
		res ring.FetchResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := ts.r.Fetch(rctx(t), req)
		done <- result{res, err}
	}()
	produceOne(t, ts.r, 1, 2)
	r := <-done // a minute-long wait here fails the test by its timeout
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.res.Release()
	p0, p1 := r.res.Partitions[0], r.res.Partitions[1]
	if p1.Err != nil || p1.Records.Size() == 0 {
		t.Fatalf("t/1: %v, %d bytes; want the record that ended the wait", p1.Err, p1.Records.Size())
	}
	if p0.Err != nil || p0.HighWatermark != 1 || p0.Records.Size() != 0 {
		t.Fatalf("t/0: %v, high watermark %d, %d bytes; want its state with no records", p0.Err, p0.HighWatermark, p0.Records.Size())
	}
}

func TestRouterFanOutMaxBytes(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2), bothStores)
	for p := int32(0); p < 2; p++ {
		if err := ts.r.CreatePartition(rctx(t), "t", p, ring.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
		produceOne(t, ts.r, p, byte(p))
	}
	res, err := ts.r.Fetch(rctx(t), &ring.FetchRequest{MaxBytes: 1, Partitions: []ring.FetchPartition{
		{Topic: "t", Partition: 0, MaxBytes: 1 << 20},
		{Topic: "t", Partition: 1, MaxBytes: 1 << 20},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if a, b := res.Partitions[0].Records.Size(), res.Partitions[1].Records.Size(); a == 0 || b != 0 {
		t.Fatalf("request MaxBytes 1: %d and %d bytes, want the first partition's batch only", a, b)
	}
}

func TestRouterListPartitionsFromLeaders(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.Update(snapshot(1, 1, 2), bothStores)
	// Both stores hold both partitions (say, leader and follower).
	for _, st := range ts.stores {
		for p := int32(0); p < 2; p++ {
			if err := st.CreatePartition(rctx(t), "t", p, logstore.PartitionConfig{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	infos, err := ts.r.ListPartitions(rctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Fatalf("listed %d partitions, want each of the 2 once: %+v", len(infos), infos)
	}
}

// nopBackend answers every call at once with nothing, so that what is
// measured is the router's own work.
type nopBackend struct{ ring.Backend }

func (nopBackend) Produce(context.Context, *ring.ProduceRequest) (ring.ProduceResult, error) {
	return ring.ProduceResult{}, nil
}

func (nopBackend) Fetch(context.Context, *ring.FetchRequest) (ring.FetchResult, error) {
	return ring.FetchResult{}, nil
}

func (nopBackend) Close() error { return nil }

// Routing a request whose partitions share a leader costs no allocation:
// one table load, map lookups, and the request passed through as it is.
func TestRouterHotPathAllocs(t *testing.T) {
	r := NewRouter(RouterOptions{Logger: quiet(), Dial: func(context.Context, string) (ring.Backend, error) { return nopBackend{}, nil }})
	defer r.Close()
	r.Update(snapshot(1, 1, 1, 2), bothStores)
	ctx := context.Background()
	produce := &ring.ProduceRequest{Topic: "t", Partition: 1, Acks: 1}
	fetch := &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}}
	if _, err := r.Produce(ctx, produce); err != nil { // dials store 1 once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := r.Produce(ctx, produce); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Fetch(ctx, fetch); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per routed produce and fetch, want 0", allocs)
	}
}

// BenchmarkRouterFanOutFetch measures what a fetch over two stores costs
// the router beyond the stores' own work.
func BenchmarkRouterFanOutFetch(b *testing.B) {
	r := NewRouter(RouterOptions{Logger: quiet(), Dial: func(context.Context, string) (ring.Backend, error) { return &fixedBackend{}, nil }})
	defer r.Close()
	r.Update(snapshot(1, 1, 2), bothStores)
	ctx := context.Background()
	fetch := &ring.FetchRequest{Partitions: []ring.FetchPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Fetch(ctx, fetch); err != nil {
			b.Fatal(err)
		}
	}
}

// fixedBackend answers a fetch with one empty result per partition.
type fixedBackend struct{ nopBackend }

func (fixedBackend) Fetch(_ context.Context, req *ring.FetchRequest) (ring.FetchResult, error) {
	return ring.FetchResult{Partitions: make([]ring.FetchPartitionResult, len(req.Partitions))}, nil
}

// A call whose partition lost its leader waits for the metadata to name
// the next one, and then goes there: the client never sees the failover.
func TestRouterWaitsForTheNextLeader(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.leaderWait = time.Minute // the test's own timeout bounds it
	for _, st := range ts.stores {
		if err := st.CreatePartition(rctx(t), "t", 0, logstore.PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	ts.r.Update(snapshot(1, kafka.NoLeader), bothStores)
	produced := make(chan error, 1)
	go func() {
		_, err := ts.r.Produce(rctx(t), &ring.ProduceRequest{Topic: "t", Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)})
		produced <- err
	}()
	fetched := make(chan error, 1)
	go func() {
		res, err := ts.r.Fetch(rctx(t), &ring.FetchRequest{MaxWait: time.Minute, MinBytes: 1,
			Partitions: []ring.FetchPartition{{Topic: "t", Partition: 0, MaxBytes: 1 << 20}}})
		if err == nil {
			err = res.Partitions[0].Err
			if err == nil && res.Partitions[0].Records.Size() == 0 {
				err = errors.New("no records")
			}
			res.Release()
		}
		fetched <- err
	}()
	// An unrelated change wakes the waiters, which find no leader yet
	// and wait again.
	ts.r.Update(snapshot(2, kafka.NoLeader), bothStores)
	ts.r.Update(snapshot(3, 2), bothStores)
	if err := <-produced; err != nil {
		t.Fatalf("produce across the leader change: %v", err)
	}
	if err := <-fetched; err != nil {
		t.Fatalf("fetch across the leader change: %v", err)
	}
	if got := hw(t, ts.stores["s2"], 0); got != 1 {
		t.Fatalf("the new leader holds %d records, want 1", got)
	}
	// Without a wait budget the same call fails at once.
	ts.r.leaderWait = -1
	ts.r.Update(snapshot(4, kafka.NoLeader), bothStores)
	if _, err := ts.r.DescribePartition(rctx(t), "t", 0); !errors.Is(err, ring.ErrNotLeader) {
		t.Fatalf("without a wait: %v, want ErrNotLeader", err)
	}
}

// TestRouterRetriesALeaderNotYetInRole: the table already names the new
// leader, but that store has not taken the role from its own copy of the
// metadata yet. No newer table will come, so the call retries on the same
// one and succeeds as soon as the store leads, well within LeaderWait.
func TestRouterRetriesALeaderNotYetInRole(t *testing.T) {
	ts := newTwoStores(t)
	ts.r.leaderWait = time.Hour // rctx's 30 s bounds the test
	s2 := ts.stores["s2"]
	if err := s2.CreatePartition(rctx(t), "t", 0, logstore.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := s2.SetReplicaState(rctx(t), "t", 0, logstore.ReplicaState{Role: logstore.RoleFollower, Leader: 1, LocalID: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	ts.r.Update(snapshot(1, 2), bothStores)
	produced := make(chan error, 1)
	go func() {
		_, err := ts.r.Produce(rctx(t), &ring.ProduceRequest{Topic: "t", Partition: 0, Acks: 1, Records: logtest.Filler(1, 1, 10, 1)})
		produced <- err
	}()
	select {
	case err := <-produced:
		t.Fatalf("produce answered (%v) while the store still follows", err)
	case <-time.After(3 * retryTick):
	}
	if err := s2.SetReplicaState(rctx(t), "t", 0, logstore.ReplicaState{Role: logstore.RoleLeader, Leader: 2, LocalID: 2, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{2}, MinISR: 1}); err != nil {
		t.Fatal(err)
	}
	if err := <-produced; err != nil {
		t.Fatalf("produce once the store leads: %v", err)
	}
}
