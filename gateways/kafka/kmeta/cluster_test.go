package kmeta

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
)

// metadataAPI answers Metadata (what refresh asks) from a canned
// response; the rest of the controller's API is not used by these tests.
type metadataAPI struct {
	controller.API
	mu   sync.Mutex
	resp controller.MetadataResponse
}

func (a *metadataAPI) set(resp controller.MetadataResponse) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.resp = resp
}

func (a *metadataAPI) Metadata(context.Context, controller.MetadataRequest) (controller.MetadataResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resp, nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestCluster(api controller.API) *Cluster {
	return New(Options{API: api, NodeID: 7, Addr: "127.0.0.1:9092", Logger: quiet(), ReadyTimeout: 50 * time.Millisecond})
}

func topicInfo(name string, id byte, version uint64, partitions int) controller.TopicInfo {
	ti := controller.TopicInfo{Name: name, ReplicationFactor: 1, Version: version, Configs: map[string]string{"retention.ms": "1000"}}
	ti.ID[0] = id
	for p := 0; p < partitions; p++ {
		ti.Partitions = append(ti.Partitions, controller.PartitionInfo{Partition: int32(p), Leader: 1, LeaderEpoch: int32(p)})
	}
	return ti
}

func view(version uint64, topics ...controller.TopicInfo) *controller.View {
	v := &controller.View{
		ClusterID: "c1", Version: version, Topics: map[string]controller.TopicInfo{},
		Nodes: map[int32]controller.NodeInfo{
			1: {ID: 1, Kind: controller.KindStore, Live: true},
			5: {ID: 5, Kind: controller.KindGateway, Live: true, Addresses: map[string]string{"kafka": "h5:9095"}},
			// Not live, and an address that does not parse: neither is a
			// broker, nor the controller.
			3: {ID: 3, Kind: controller.KindGateway, Live: false, Addresses: map[string]string{"kafka": "h3:9093"}},
			4: {ID: 4, Kind: controller.KindGateway, Live: true, Addresses: map[string]string{"kafka": "no port"}},
			8: {ID: 8, Kind: controller.KindGateway, Live: true, Addresses: map[string]string{"kafka": "h8:9098"}},
		},
	}
	for _, t := range topics {
		v.Topics[t.Name] = t
	}
	return v
}

func TestMetadataWaitsForTheFirstView(t *testing.T) {
	c := newTestCluster(&metadataAPI{})
	if _, err := c.Metadata(context.Background()); !errors.Is(err, kafka.ErrUnavailable) {
		t.Fatalf("before any view: err %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.opts.ReadyTimeout = time.Hour
	if _, err := c.Topic(ctx, "a"); !errors.Is(err, kafka.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("before any view, with ctx done: err %v, want ErrUnavailable and Canceled", err)
	}
	if got := c.ControllerID(); got != 7 {
		t.Fatalf("ControllerID before any view: %d, want this gateway's 7", got)
	}

	done := make(chan error, 1)
	go func() {
		_, err := c.Metadata(context.Background())
		done <- err
	}()
	c.apply(view(1))
	if err := <-done; err != nil {
		t.Fatalf("a reader waiting for the first view: %v", err)
	}
}

func TestApplySwapsSnapshots(t *testing.T) {
	c := newTestCluster(&metadataAPI{})
	a, b := topicInfo("a", 1, 1, 2), topicInfo("b", 2, 1, 1)
	c.apply(view(1, a, b))
	ctx := context.Background()
	m1, err := c.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Version() != 1 || m1.ClusterID() != "c1" || c.ClusterID() != "c1" {
		t.Fatalf("snapshot version %d cluster %q", m1.Version(), m1.ClusterID())
	}
	ta, ok := m1.Topic("a")
	if !ok || ta.ID != a.ID || ta.Partitions != 2 || ta.Configs["retention.ms"] != "1000" {
		t.Fatalf("topic a: %+v", ta)
	}
	if p := ta.Partition(1); p.Leader != 1 || p.LeaderEpoch != 1 || ta.LeaderEpoch(1) != 1 {
		t.Fatalf("a/1 placement %+v", p)
	}
	if p := ta.Partition(2); p.Leader != kafka.NoLeader {
		t.Fatalf("a/2 does not exist, yet has placement %+v", p)
	}
	if tb, ok := m1.TopicByID(b.ID); !ok || tb.Name != "b" {
		t.Fatalf("topic b by id: %+v %v", tb, ok)
	}
	if _, ok := m1.Topic("nope"); ok {
		t.Fatal("unknown topic found")
	}
	if _, err := c.Topic(ctx, "nope"); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("Topic(nope): %v", err)
	}
	if _, err := c.TopicByID(ctx, [16]byte{9}); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("TopicByID(unknown): %v", err)
	}
	bs := m1.Brokers()
	if len(bs) != 2 || bs[0] != (kafka.Broker{NodeID: 5, Host: "h5", Port: 9095}) || bs[1].NodeID != 8 {
		t.Fatalf("brokers %+v, want the live gateways 5 and 8 with parsable addresses", bs)
	}
	if m1.ControllerID() != 5 || c.ControllerID() != 5 {
		t.Fatalf("controller %d, want the lowest live gateway, 5", m1.ControllerID())
	}

	// b is deleted, a did not change: a new snapshot, sharing a.
	c.apply(view(2, a))
	m2, _ := c.Metadata(ctx)
	if m2 == m1 || m2.Version() != 2 {
		t.Fatalf("no new snapshot (version %d)", m2.Version())
	}
	if _, ok := m2.Topic("b"); ok {
		t.Fatal("deleted topic b found by name")
	}
	if _, ok := m2.TopicByID(b.ID); ok {
		t.Fatal("deleted topic b found by id")
	}
	if _, err := c.Topic(ctx, "b"); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("Topic(b) after its deletion: %v", err)
	}
	if _, ok := m1.Topic("b"); !ok {
		t.Fatal("the older snapshot lost b")
	}
	ta2, _ := m2.Topic("a")
	if ta2 != ta {
		t.Fatal("an unchanged topic was converted again")
	}

	// a grows: a new topic value; the old snapshot keeps the old one.
	a.Version, a.Partitions = 3, append(a.Partitions, controller.PartitionInfo{Partition: 2, Leader: 1})
	c.apply(view(3, a))
	m3, _ := c.Metadata(ctx)
	if ta3, _ := m3.Topic("a"); ta3 == ta || ta3.Partitions != 3 {
		t.Fatalf("grown topic a: %+v", ta3)
	}
	if ta.Partitions != 2 {
		t.Fatalf("the older snapshot's a changed to %d partitions", ta.Partitions)
	}
}

func TestRefreshOverlay(t *testing.T) {
	api := &metadataAPI{}
	c := newTestCluster(api)
	ctx := context.Background()
	a := topicInfo("a", 1, 1, 1)
	c.apply(view(3, a))

	// A write the heartbeats have not brought yet shows at once.
	n := topicInfo("n", 2, 5, 2)
	api.set(controller.MetadataResponse{Version: 5, Topics: []controller.TopicInfo{n}})
	if _, ok, err := c.refresh(ctx, "n"); !ok || err != nil {
		t.Fatalf("refresh: %v %v", ok, err)
	}
	m, _ := c.Metadata(ctx)
	if tn, ok := m.TopicByID(n.ID); !ok || tn.Name != "n" || tn.Partitions != 2 || m.Version() != 5 {
		t.Fatalf("written topic not in the snapshot: %+v (version %d)", tn, m.Version())
	}
	if _, ok := m.Topic("a"); !ok {
		t.Fatal("the view's topic a is hidden by the overlay")
	}
	// An older heartbeat does not hide it...
	c.apply(view(4, a))
	if _, err := c.Topic(ctx, "n"); err != nil {
		t.Fatalf("an older view hid the written topic: %v", err)
	}
	// ...and one that has caught up takes over.
	c.apply(view(5, a, n))
	if _, err := c.Topic(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	left := len(c.mu.overlay)
	c.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d overlay entries left once the view caught up", left)
	}

	// A deletion shows at once too, by name and by id.
	api.set(controller.MetadataResponse{Version: 6})
	if _, ok, err := c.refresh(ctx, "n"); ok || err != nil {
		t.Fatalf("refresh of a deleted topic: %v %v", ok, err)
	}
	if _, err := c.Topic(ctx, "n"); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("deleted topic by name: %v", err)
	}
	if _, err := c.TopicByID(ctx, n.ID); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("deleted topic by id: %v", err)
	}
	c.apply(view(5, a, n)) // a heartbeat from before the deletion
	if _, err := c.Topic(ctx, "n"); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("an older view brought the deleted topic back: %v", err)
	}

	// A refresh older than the view changes nothing.
	c.apply(view(7, a))
	before, _ := c.Metadata(ctx)
	api.set(controller.MetadataResponse{Version: 6, Topics: []controller.TopicInfo{n}})
	if _, _, err := c.refresh(ctx, "n"); err != nil {
		t.Fatal(err)
	}
	if after, _ := c.Metadata(ctx); after != before {
		t.Fatal("a stale refresh published a snapshot")
	}
	if _, err := c.Topic(ctx, "n"); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("a stale refresh brought a deleted topic back: %v", err)
	}
}

// TestLookupAllocs: the hot path (take the snapshot, find a topic by name
// and by id) allocates nothing.
func TestLookupAllocs(t *testing.T) {
	c := newTestCluster(&metadataAPI{})
	a := topicInfo("a", 1, 1, 4)
	c.apply(view(1, a, topicInfo("b", 2, 1, 1)))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		m, err := c.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byName, _ := m.Topic("a")
		byID, _ := m.TopicByID(a.ID)
		if byName != byID || byName.LeaderEpoch(3) != 3 {
			t.Fatal("lookup mismatch")
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per lookup, want 0", allocs)
	}
}

func BenchmarkLookup(b *testing.B) {
	c := newTestCluster(&metadataAPI{})
	var topics []controller.TopicInfo
	for i := 0; i < 1000; i++ {
		ti := topicInfo("topic-"+strconv.Itoa(i), 0, 1, 8)
		ti.ID[0], ti.ID[1] = byte(i), byte(i>>8)
		topics = append(topics, ti)
	}
	c.apply(view(1, topics...))
	ctx := context.Background()
	want := topics[500]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		m, _ := c.Metadata(ctx)
		t1, _ := m.Topic(want.Name)
		t2, _ := m.TopicByID(want.ID)
		if t1 != t2 {
			b.Fatal("lookup mismatch")
		}
	}
}
