package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeStore is a PartitionManager in memory.
type fakeStore struct {
	mu    sync.Mutex
	parts map[LocalPartition]map[string]string
	fail  bool
}

var (
	_ PartitionManager = (*fakeStore)(nil)
	_ ConfigUpdater    = (*fakeStore)(nil)
)

func (s *fakeStore) UpdatePartitionConfig(_ context.Context, topic string, p int32, cfg map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.parts[LocalPartition{topic, p}]; !ok {
		return fmt.Errorf("no partition %s/%d", topic, p)
	}
	s.parts[LocalPartition{topic, p}] = cfg
	return nil
}

func newFakeStore() *fakeStore { return &fakeStore{parts: map[LocalPartition]map[string]string{}} }

func (s *fakeStore) CreatePartition(_ context.Context, topic string, p int32, cfg map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return fmt.Errorf("disk full")
	}
	s.parts[LocalPartition{topic, p}] = cfg
	return nil
}

func (s *fakeStore) DeletePartition(_ context.Context, topic string, p int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parts, LocalPartition{topic, p})
	return nil
}

func (s *fakeStore) ListPartitions(context.Context) ([]LocalPartition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []LocalPartition
	for p := range s.parts {
		out = append(out, p)
	}
	return out, nil
}

func (s *fakeStore) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.parts {
		out = append(out, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
	}
	sort.Strings(out)
	return out
}

func (s *fakeStore) config(topic string, p int32) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts[LocalPartition{topic, p}]
}

func runAgent(t *testing.T, api Members, pm PartitionManager, id int32) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a := NewStoreAgent(api, pm, RegisterNodeRequest{ID: id, Shards: 2, RingAddr: fmt.Sprintf("127.0.0.1:%d", 7100+id)}, testLogger(t))
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

func wantParts(t *testing.T, s *fakeStore, want ...string) {
	t.Helper()
	sort.Strings(want)
	waitFor(t, 10*time.Second, fmt.Sprintf("store holds %v", want), func() bool {
		got := s.list()
		return reflect.DeepEqual(got, want) || len(got) == 0 && len(want) == 0
	})
}

func TestStoreAgent(t *testing.T) {
	defer goleak.VerifyNone(t)
	mc := newMemCluster(t, 1, nil, nil)
	c := mc.leader().c
	ctx := context.Background()

	// Created before any store: placed on the first to register.
	mustCreate(t, c, "early")
	s1 := newFakeStore()
	// A partition from before the controller: left alone.
	s1.parts[LocalPartition{"legacy", 0}] = nil
	stop1 := runAgent(t, c, s1, 1)
	wantParts(t, s1, "early/0", "early/1", "legacy/0")

	// Spread over two stores; configs travel with the create, cluster
	// defaults included.
	s2 := newFakeStore()
	stop2 := runAgent(t, c, s2, 2)
	waitFor(t, 10*time.Second, "store 2 registered", func() bool { n, ok := c.fsm.Node(2); return ok && n.Live })
	if _, err := c.AlterConfigs(ctx, AlterConfigsRequest{Resources: []AlterConfigsResource{{Type: ResourceBroker, Configs: map[string]string{"log.segment.bytes": "1048576"}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := c.CreateTopics(ctx, CreateTopicsRequest{Topics: []NewTopic{{Name: "spread", Partitions: 4, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "60000"}}}})
	if err != nil || resp.Topics[0].Err() != nil {
		t.Fatal(err, resp)
	}
	// Least-loaded: store 2 starts empty, store 1 holds two partitions.
	wantParts(t, s1, "early/0", "early/1", "legacy/0", "spread/2")
	wantParts(t, s2, "spread/0", "spread/1", "spread/3")
	if cfg := s2.config("spread", 0); cfg["retention.ms"] != "60000" || cfg["segment.bytes"] != "1048576" {
		t.Errorf("partition config %v", cfg)
	}
	// A topic config change reaches the partitions the stores hold.
	if _, err := c.AlterConfigs(ctx, AlterConfigsRequest{Resources: []AlterConfigsResource{{Type: ResourceTopic, Name: "spread",
		Incremental: true, Ops: []ConfigOp{{Name: "retention.ms", Op: OpSet, Value: "120000"}}}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "altered config applied on both stores", func() bool {
		return s1.config("spread", 2)["retention.ms"] == "120000" && s2.config("spread", 3)["retention.ms"] == "120000"
	})

	// With WaitMs the answer comes once the stores have the partitions.
	resp, err = c.CreateTopics(ctx, CreateTopicsRequest{WaitMs: 10000, Topics: []NewTopic{{Name: "waited", Partitions: 2, ReplicationFactor: 1}}})
	if err != nil || resp.Topics[0].Err() != nil {
		t.Fatal(err, resp)
	}
	if got := len(s1.list()) + len(s2.list()); got != 9 {
		t.Errorf("after a waited create the stores hold %d partitions, want 9: %v %v", got, s1.list(), s2.list())
	}
	dresp, err := c.DeleteTopics(ctx, DeleteTopicsRequest{WaitMs: 10000, Topics: []TopicRef{{Name: "waited"}}})
	if err != nil || dresp.Topics[0].Err() != nil {
		t.Fatal(err, dresp)
	}
	if got := len(s1.list()) + len(s2.list()); got != 7 {
		t.Errorf("after a waited delete the stores hold %d partitions, want 7", got)
	}
	// A store that cannot create: the create is answered REQUEST_TIMED_OUT.
	s2.mu.Lock()
	s2.fail = true
	s2.mu.Unlock()
	resp, err = c.CreateTopics(ctx, CreateTopicsRequest{WaitMs: 300, Topics: []NewTopic{{Name: "stuck", Partitions: 2, ReplicationFactor: 1}}})
	if err != nil || !errors.Is(resp.Topics[0].Err(), ErrTimeout) || !strings.Contains(resp.Topics[0].Err().Error(), "stores [2]") {
		t.Fatalf("create on a failing store: %v %+v", err, resp)
	}
	s2.mu.Lock()
	s2.fail = false
	s2.mu.Unlock()
	if _, err := c.DeleteTopics(ctx, DeleteTopicsRequest{WaitMs: 10000, Topics: []TopicRef{{Name: "stuck"}}}); err != nil {
		t.Fatal(err)
	}

	// Deleted, and created again under the same name: the old partitions go,
	// new ones come.
	if _, err := c.DeleteTopics(ctx, DeleteTopicsRequest{Topics: []TopicRef{{Name: "early"}}}); err != nil {
		t.Fatal(err)
	}
	wantParts(t, s1, "legacy/0", "spread/2")
	if _, err := c.CreatePartitions(ctx, CreatePartitionsRequest{Topics: []PartitionCount{{"spread", 6}}}); err != nil {
		t.Fatal(err)
	}
	wantParts(t, s2, "spread/0", "spread/1", "spread/3")
	wantParts(t, s1, "legacy/0", "spread/2", "spread/4", "spread/5")

	// Store 1 goes away; its topic is deleted meanwhile; it comes back and
	// deletes what it holds of it (the full state's tombstones say so).
	stop1()
	if _, err := c.DeleteTopics(ctx, DeleteTopicsRequest{Topics: []TopicRef{{Name: "spread"}}}); err != nil {
		t.Fatal(err)
	}
	wantParts(t, s2)
	s1.fail = true // creates fail and are retried at the next heartbeat
	mustCreate(t, c, "retry")
	stop1 = runAgent(t, c, s1, 1)
	wantParts(t, s1, "legacy/0")
	s1.mu.Lock()
	s1.fail = false
	s1.mu.Unlock()
	md, _ := c.Metadata(ctx, MetadataRequest{Topics: []string{"retry"}})
	var want []string
	for _, p := range md.Topics[0].Partitions {
		if p.Leader == 1 {
			want = append(want, fmt.Sprintf("retry/%d", p.Partition))
		}
	}
	wantParts(t, s1, append(want, "legacy/0")...)
	stop1()
	stop2()
	mc.stop(mc.nodes[0])
}

// A refused registration is usually a controller still electing itself,
// which in serve leads within milliseconds: the first retry must come after
// minPoll, not after a long backoff that holds back every restart. Later
// retries still back off, up to the heartbeat interval.
func TestRegisterRetryStartsAtMinPoll(t *testing.T) {
	if got := registerRetry(1, DefaultHeartbeatInterval); got != minPoll {
		t.Errorf("first retry after %v, want minPoll (%v)", got, minPoll)
	}
	prev := time.Duration(0)
	for f := 1; f <= 10; f++ {
		got := registerRetry(f, DefaultHeartbeatInterval)
		if got < prev {
			t.Errorf("retry %d after %v, shorter than retry %d's %v", f, got, f-1, prev)
		}
		if got > DefaultHeartbeatInterval {
			t.Errorf("retry %d after %v, longer than the interval %v", f, got, DefaultHeartbeatInterval)
		}
		prev = got
	}
	if got := registerRetry(10, 10*time.Millisecond); got != 10*time.Millisecond {
		t.Errorf("retry with a 10ms interval after %v, want 10ms", got)
	}
}

// beatCounter is a controller that answers every registration and
// heartbeat at once, asking for 5 ms heartbeats, and counts them.
type beatCounter struct{ beats atomic.Int64 }

func (b *beatCounter) RegisterNode(context.Context, RegisterNodeRequest) (HeartbeatResponse, error) {
	return HeartbeatResponse{HeartbeatIntervalMs: 5, SessionTimeoutMs: 50}, nil
}

func (b *beatCounter) Heartbeat(context.Context, HeartbeatRequest) (HeartbeatResponse, error) {
	b.beats.Add(1)
	return HeartbeatResponse{HeartbeatIntervalMs: 5, SessionTimeoutMs: 50}, nil
}

// TestUnhealthyMemberStopsHeartbeating: while Healthy answers an error the
// member sends no heartbeat, so the controller fences it when its session
// runs out (a store whose disk failed gives up its leaderships so).
func TestUnhealthyMemberStopsHeartbeating(t *testing.T) {
	api := &beatCounter{}
	var sick atomic.Bool
	var asked atomic.Int64
	healthy := func() error {
		asked.Add(1)
		if sick.Load() {
			return errors.New("disk failed")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunMember(ctx, api, MemberOptions{Registration: RegisterNodeRequest{ID: 7, Kind: KindStore}, Healthy: healthy,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("heartbeats", func() bool { return api.beats.Load() >= 3 })
	sick.Store(true)
	from := asked.Load()
	waitFor("the first check while sick", func() bool { return asked.Load() > from })
	beats := api.beats.Load()
	from = asked.Load()
	waitFor("five more checks while sick", func() bool { return asked.Load() >= from+5 })
	if got := api.beats.Load(); got != beats {
		t.Fatalf("%d heartbeats sent while unhealthy", got-beats)
	}
	sick.Store(false)
	waitFor("heartbeats again once healthy", func() bool { return api.beats.Load() > beats+2 })
}

// slowApplyAPI answers the registration with a change (version 1) and
// every heartbeat with none; it records the heartbeats' long polls and
// holds, and says it held each long poll an hour.
type slowApplyAPI struct {
	beats, polls atomic.Int64
	known        atomic.Uint64
}

func (b *slowApplyAPI) RegisterNode(context.Context, RegisterNodeRequest) (HeartbeatResponse, error) {
	return HeartbeatResponse{Delta: Delta{Version: 1}, HeartbeatIntervalMs: 5, SessionTimeoutMs: 1000}, nil
}

func (b *slowApplyAPI) Heartbeat(_ context.Context, req HeartbeatRequest) (HeartbeatResponse, error) {
	b.beats.Add(1)
	b.known.Store(req.KnownVersion)
	resp := HeartbeatResponse{Delta: Delta{Version: 1}, HeartbeatIntervalMs: 5, SessionTimeoutMs: 1000}
	if req.WaitMs > 0 {
		b.polls.Add(1)
		resp.HeldMs = time.Hour.Milliseconds()
	}
	return resp, nil
}

// TestSlowApplyKeepsSession: while OnDelta is busy (a store creating many
// partitions), the member keeps heartbeating, so the controller does not
// fence it, but those heartbeats renew no lease: the changes being
// applied may depose the store. A long poll's lease counts from when the
// controller last renewed the session (sent + HeldMs).
func TestSlowApplyKeepsSession(t *testing.T) {
	defer goleak.VerifyNone(t)
	api := &slowApplyAPI{}
	release := make(chan struct{})
	var inDelta atomic.Bool
	var leases, leasesInDelta atomic.Int64
	var lastLease atomic.Int64
	onDelta := func(ctx context.Context, v *View, d Delta) error {
		inDelta.Store(true)
		defer inDelta.Store(false)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	onHeartbeat := func(sent time.Time, _ time.Duration) {
		lastLease.Store(sent.UnixNano())
		if inDelta.Load() {
			leasesInDelta.Add(1)
		}
		leases.Add(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunMember(ctx, api, MemberOptions{Registration: RegisterNodeRequest{ID: 7, Kind: KindStore},
			OnDelta: onDelta, OnHeartbeat: onHeartbeat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, 10*time.Second, "heartbeats while OnDelta is busy", func() bool { return api.beats.Load() >= 3 })
	if !inDelta.Load() || api.polls.Load() != 0 || api.known.Load() != 1 {
		t.Fatalf("in OnDelta %v, long polls %d, known version %d: want true, 0 and 1", inDelta.Load(), api.polls.Load(), api.known.Load())
	}
	if n := leasesInDelta.Load(); n != 0 {
		t.Fatalf("%d leases renewed by heartbeats sent while OnDelta was busy", n)
	}
	close(release)
	waitFor(t, 10*time.Second, "a long poll's lease", func() bool { return api.polls.Load() >= 1 && leases.Load() >= 2 })
	if got := time.Unix(0, lastLease.Load()); time.Until(got) < 50*time.Minute {
		t.Fatalf("lease counted from %v, want an hour after the poll was sent (HeldMs)", got)
	}
}

// TestHeartbeatHeldMs: a long poll says how long the leader held it after
// renewing the session, which it renews again when it answers; a store's
// lease counts from sent + HeldMs, so HeldMs must never exceed the time
// the request really took. A heartbeat without a long poll holds nothing.
func TestHeartbeatHeldMs(t *testing.T) {
	defer goleak.VerifyNone(t)
	mc := newMemCluster(t, 1, nil, nil)
	l := mc.leader()
	ctx := context.Background()
	reg, err := l.c.RegisterNode(ctx, RegisterNodeRequest{ID: 5, Kind: KindStore, Shards: 1, RingAddr: "127.0.0.1:7005"})
	if err != nil {
		t.Fatal(err)
	}
	known := reg.Delta.Version
	for try := 0; ; try++ {
		sent := time.Now()
		hb, err := l.c.Heartbeat(ctx, HeartbeatRequest{ID: 5, KnownVersion: known, WaitMs: 10000})
		took := time.Since(sent)
		if err != nil {
			t.Fatal(err)
		}
		if hb.Delta.Version != known && try < 10 {
			known = hb.Delta.Version // answered early, for a change: poll again
			continue
		}
		if hb.HeldMs <= 0 || time.Duration(hb.HeldMs)*time.Millisecond > took {
			t.Errorf("long poll held %d ms by its reply, in a request of %v", hb.HeldMs, took)
		}
		break
	}
	hb, err := l.c.Heartbeat(ctx, HeartbeatRequest{ID: 5, KnownVersion: known})
	if err != nil || hb.HeldMs != 0 {
		t.Errorf("heartbeat without a long poll: held %d ms, %v", hb.HeldMs, err)
	}
	mc.stop(mc.nodes[0])
}
