package clustertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/kafka"
)

// Run checks c against the Cluster contract. c must hold no topic whose
// name starts with "conformance-" and must accept replication factor 1,
// retention.ms and the partition counts used here (up to 4).
func Run(t *testing.T, c kafka.Cluster) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, context.Context, kafka.Cluster)
	}{
		{"SnapshotAgreesWithReads", testSnapshotAgrees},
		{"UnknownTopic", testUnknownTopic},
		{"CreateIsVisible", testCreateIsVisible},
		{"CreateTwice", testCreateTwice},
		{"CreateInvalid", testCreateInvalid},
		{"ValidateOnly", testValidateOnly},
		{"SnapshotIsImmutable", testSnapshotImmutable},
		{"CreatePartitions", testCreatePartitions},
		{"Delete", testDelete},
		{"Configs", testConfigs},
		{"ConcurrentReaders", testConcurrentReaders},
		{"Reassignments", testReassignments},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tc.fn(t, ctx, c)
		})
	}
}

// name is a topic name unique to the calling subtest.
func name(t *testing.T, suffix string) string {
	n := "conformance-" + t.Name() + "-" + suffix
	out := []byte(n)
	for i, ch := range out {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			out[i] = '-'
		}
	}
	return string(out)
}

func metadata(t *testing.T, ctx context.Context, c kafka.Cluster) *kafka.Metadata {
	t.Helper()
	md, err := c.Metadata(ctx)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if md == nil {
		t.Fatal("Metadata returned nil without an error")
	}
	return md
}

func create(t *testing.T, ctx context.Context, c kafka.Cluster, topic string, partitions int32) kafka.Topic {
	t.Helper()
	got, err := c.CreateTopic(ctx, kafka.CreateTopic{Name: topic, Partitions: partitions, ReplicationFactor: 1})
	if err != nil {
		t.Fatalf("CreateTopic %s: %v", topic, err)
	}
	return got
}

// checkVisible asserts that want is found alike by every read, and
// returns the snapshot's copy.
func checkVisible(t *testing.T, ctx context.Context, c kafka.Cluster, want kafka.Topic) *kafka.Topic {
	t.Helper()
	md := metadata(t, ctx, c)
	byName, ok := md.Topic(want.Name)
	if !ok {
		t.Fatalf("snapshot (version %d) has no topic %s", md.Version(), want.Name)
	}
	byID, ok := md.TopicByID(want.ID)
	if !ok {
		t.Fatalf("snapshot has no topic with id %x (%s)", want.ID, want.Name)
	}
	if byName != byID {
		t.Fatalf("snapshot finds %s by name as %+v, by id as %+v", want.Name, *byName, *byID)
	}
	if byName.ID != want.ID || byName.Partitions != want.Partitions {
		t.Fatalf("snapshot has %s as id %x, %d partitions; want id %x, %d partitions",
			want.Name, byName.ID, byName.Partitions, want.ID, want.Partitions)
	}
	if !slices.Contains(md.Topics(), byName) {
		t.Fatalf("snapshot's Topics does not list %s", want.Name)
	}
	for p := int32(0); p < byName.Partitions; p++ {
		if e := byName.LeaderEpoch(p); e < 0 {
			t.Fatalf("%s partition %d has leader epoch %d", want.Name, p, e)
		}
	}
	got, err := c.Topic(ctx, want.Name)
	if err != nil {
		t.Fatalf("Topic %s: %v", want.Name, err)
	}
	if got.ID != want.ID || got.Partitions != want.Partitions {
		t.Fatalf("Topic %s: id %x, %d partitions; want id %x, %d", want.Name, got.ID, got.Partitions, want.ID, want.Partitions)
	}
	got, err = c.TopicByID(ctx, want.ID)
	if err != nil {
		t.Fatalf("TopicByID %x: %v", want.ID, err)
	}
	if got.Name != want.Name || got.Partitions != want.Partitions {
		t.Fatalf("TopicByID %x: %s with %d partitions; want %s with %d", want.ID, got.Name, got.Partitions, want.Name, want.Partitions)
	}
	all, err := c.Topics(ctx)
	if err != nil {
		t.Fatalf("Topics: %v", err)
	}
	if !slices.ContainsFunc(all, func(x kafka.Topic) bool { return x.Name == want.Name && x.ID == want.ID }) {
		t.Fatalf("Topics does not list %s", want.Name)
	}
	return byName
}

// checkGone asserts that no read finds topic by name, nor id by id.
func checkGone(t *testing.T, ctx context.Context, c kafka.Cluster, topic string, id [16]byte) {
	t.Helper()
	md := metadata(t, ctx, c)
	if got, ok := md.Topic(topic); ok {
		t.Fatalf("snapshot still has %s: %+v", topic, *got)
	}
	if got, ok := md.TopicByID(id); ok {
		t.Fatalf("snapshot still has id %x: %+v", id, *got)
	}
	if slices.ContainsFunc(md.Topics(), func(x *kafka.Topic) bool { return x.Name == topic }) {
		t.Fatalf("snapshot's Topics still lists %s", topic)
	}
	if _, err := c.Topic(ctx, topic); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("Topic %s: err %v, want ErrUnknownTopic", topic, err)
	}
	if _, err := c.TopicByID(ctx, id); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("TopicByID %x: err %v, want ErrUnknownTopicID", id, err)
	}
	all, err := c.Topics(ctx)
	if err != nil {
		t.Fatalf("Topics: %v", err)
	}
	if slices.ContainsFunc(all, func(x kafka.Topic) bool { return x.Name == topic }) {
		t.Fatalf("Topics still lists %s", topic)
	}
}

func testSnapshotAgrees(t *testing.T, ctx context.Context, c kafka.Cluster) {
	md := metadata(t, ctx, c)
	if got := c.ClusterID(); got != md.ClusterID() {
		t.Errorf("ClusterID %q, snapshot's %q", got, md.ClusterID())
	}
	if got := c.ControllerID(); got != md.ControllerID() {
		t.Errorf("ControllerID %d, snapshot's %d", got, md.ControllerID())
	}
	bs, err := c.Brokers(ctx)
	if err != nil {
		t.Fatalf("Brokers: %v", err)
	}
	if !slices.Equal(bs, md.Brokers()) {
		t.Errorf("Brokers %+v, snapshot's %+v", bs, md.Brokers())
	}
	if !slices.IsSortedFunc(md.Brokers(), func(a, b kafka.Broker) int { return cmp.Compare(a.NodeID, b.NodeID) }) {
		t.Errorf("snapshot's brokers are not in node id order: %+v", md.Brokers())
	}
	if !slices.IsSortedFunc(md.Topics(), func(a, b *kafka.Topic) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("snapshot's topics are not in name order")
	}
	// A returned Brokers slice is the caller's: changing it leaves the
	// snapshot alone.
	if len(bs) > 0 {
		bs[0].NodeID = -99
		if md2 := metadata(t, ctx, c); len(md2.Brokers()) > 0 && md2.Brokers()[0].NodeID == -99 {
			t.Error("changing the slice Brokers returned changed the snapshot")
		}
	}
}

func testUnknownTopic(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "nope")
	var id [16]byte
	copy(id[:], "conformance-nope")
	checkGone(t, ctx, c, topic, id)
	if err := c.DeleteTopic(ctx, topic); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Errorf("DeleteTopic of an unknown topic: err %v, want ErrUnknownTopic", err)
	}
	if err := c.CreatePartitions(ctx, topic, 3, false); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Errorf("CreatePartitions of an unknown topic: err %v, want ErrUnknownTopic", err)
	}
	checkGone(t, ctx, c, topic, id)
}

func testCreateIsVisible(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	got := create(t, ctx, c, topic, 3)
	if got.Name != topic || got.Partitions != 3 || got.ID == ([16]byte{}) || got.Internal {
		t.Fatalf("CreateTopic returned %+v, want %s with 3 partitions, an id, not internal", got, topic)
	}
	// Read your writes: the very next snapshot shows it.
	first := checkVisible(t, ctx, c, got)
	// Ids are stable: reading again gives the same id.
	again := checkVisible(t, ctx, c, got)
	if again.ID != first.ID {
		t.Fatalf("id moved from %x to %x", first.ID, again.ID)
	}
	other := create(t, ctx, c, name(t, "b"), 1)
	if other.ID == got.ID {
		t.Fatalf("two topics share id %x", got.ID)
	}
	checkVisible(t, ctx, c, other)
	checkVisible(t, ctx, c, got)
}

func testCreateTwice(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	got := create(t, ctx, c, topic, 2)
	_, err := c.CreateTopic(ctx, kafka.CreateTopic{Name: topic, Partitions: 4, ReplicationFactor: 1})
	if !errors.Is(err, kafka.ErrTopicExists) {
		t.Fatalf("second CreateTopic: err %v, want ErrTopicExists", err)
	}
	checkVisible(t, ctx, c, got) // same id, still 2 partitions
}

func testCreateInvalid(t *testing.T, ctx context.Context, c kafka.Cluster) {
	for _, tc := range []struct {
		req  kafka.CreateTopic
		want error
	}{
		{kafka.CreateTopic{Name: "bad/name", Partitions: 1, ReplicationFactor: 1}, kafka.ErrInvalidTopic},
		{kafka.CreateTopic{Name: "", Partitions: 1, ReplicationFactor: 1}, kafka.ErrInvalidTopic},
		{kafka.CreateTopic{Name: name(t, "zero"), Partitions: 0, ReplicationFactor: 1}, kafka.ErrInvalidPartitions},
		{kafka.CreateTopic{Name: name(t, "rf"), Partitions: 1, ReplicationFactor: 0}, kafka.ErrInvalidReplicationFactor},
		{kafka.CreateTopic{Name: name(t, "cfg"), Partitions: 1, ReplicationFactor: 1,
			Configs: map[string]*string{"no.such.config": ptr("1")}}, kafka.ErrInvalidConfig},
	} {
		_, err := c.CreateTopic(ctx, tc.req)
		if !errors.Is(err, tc.want) {
			t.Errorf("CreateTopic %+v: err %v, want %v", tc.req, err, tc.want)
			continue
		}
		if tc.req.Name != "" {
			if _, err := c.Topic(ctx, tc.req.Name); !errors.Is(err, kafka.ErrUnknownTopic) {
				t.Errorf("after a refused create, Topic %q: err %v, want ErrUnknownTopic", tc.req.Name, err)
			}
		}
	}
}

func testValidateOnly(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	got, err := c.CreateTopic(ctx, kafka.CreateTopic{Name: topic, Partitions: 2, ReplicationFactor: 1, ValidateOnly: true})
	if err != nil {
		t.Fatalf("validate-only CreateTopic: %v", err)
	}
	if got.Name != topic || got.Partitions != 2 {
		t.Errorf("validate-only CreateTopic returned %+v", got)
	}
	checkGone(t, ctx, c, topic, got.ID)
	real := create(t, ctx, c, topic, 2)
	if err := c.CreatePartitions(ctx, topic, 4, true); err != nil {
		t.Fatalf("validate-only CreatePartitions: %v", err)
	}
	checkVisible(t, ctx, c, real) // still 2
}

func testSnapshotImmutable(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	before := metadata(t, ctx, c)
	n := len(before.Topics())
	got := create(t, ctx, c, topic, 1)
	if _, ok := before.Topic(topic); ok {
		t.Fatal("a snapshot taken before the create shows the topic")
	}
	if _, ok := before.TopicByID(got.ID); ok {
		t.Fatal("a snapshot taken before the create finds the topic's id")
	}
	if len(before.Topics()) != n {
		t.Fatalf("a snapshot's topic list grew from %d to %d", n, len(before.Topics()))
	}
	mid := metadata(t, ctx, c)
	if mid.Version() < before.Version() {
		t.Fatalf("snapshot version went back from %d to %d", before.Version(), mid.Version())
	}
	if err := c.CreatePartitions(ctx, topic, 3, false); err != nil {
		t.Fatal(err)
	}
	if tp, ok := mid.Topic(topic); !ok || tp.Partitions != 1 {
		t.Fatalf("a snapshot taken before CreatePartitions changed: %+v", tp)
	}
	if err := c.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, ok := mid.Topic(topic); !ok {
		t.Fatal("a snapshot taken before the delete lost the topic")
	}
}

func testCreatePartitions(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	got := create(t, ctx, c, topic, 1)
	if err := c.CreatePartitions(ctx, topic, 3, false); err != nil {
		t.Fatalf("CreatePartitions to 3: %v", err)
	}
	got.Partitions = 3
	checkVisible(t, ctx, c, got) // same id, 3 partitions
	for _, n := range []int32{3, 2} {
		if err := c.CreatePartitions(ctx, topic, n, false); !errors.Is(err, kafka.ErrInvalidPartitions) {
			t.Errorf("CreatePartitions 3 -> %d: err %v, want ErrInvalidPartitions", n, err)
		}
	}
	checkVisible(t, ctx, c, got)
}

func testDelete(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	keep := create(t, ctx, c, name(t, "keep"), 1)
	got := create(t, ctx, c, topic, 2)
	if err := c.DeleteTopic(ctx, topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	checkGone(t, ctx, c, topic, got.ID)
	checkVisible(t, ctx, c, keep)
	if err := c.DeleteTopic(ctx, topic); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Errorf("second DeleteTopic: err %v, want ErrUnknownTopic", err)
	}
	// The name may be used again, for a new topic with a new id; the old
	// id stays unknown.
	again := create(t, ctx, c, topic, 1)
	if again.ID == got.ID {
		t.Fatalf("a topic created again kept the deleted one's id %x", got.ID)
	}
	checkVisible(t, ctx, c, again)
	if _, err := c.TopicByID(ctx, got.ID); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("the deleted topic's id: err %v, want ErrUnknownTopicID", err)
	}
}

func testConfigs(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "a")
	_, err := c.CreateTopic(ctx, kafka.CreateTopic{Name: topic, Partitions: 1, ReplicationFactor: 1,
		Configs: map[string]*string{"retention.ms": ptr("3600000")}})
	if err != nil {
		t.Fatal(err)
	}
	snapValue := func() string {
		tp, ok := metadata(t, ctx, c).Topic(topic)
		if !ok {
			t.Fatalf("no topic %s", topic)
		}
		return tp.Configs["retention.ms"]
	}
	if v := snapValue(); v != "3600000" {
		t.Fatalf("snapshot has retention.ms %q, want 3600000", v)
	}
	described := func() *kafka.ConfigEntry {
		es, err := c.DescribeConfigs(ctx, kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: topic})
		if err != nil {
			t.Fatalf("DescribeConfigs: %v", err)
		}
		for i := range es {
			if es[i].Name == "retention.ms" {
				return &es[i]
			}
		}
		t.Fatal("DescribeConfigs has no retention.ms")
		return nil
	}
	if e := described(); e.Value == nil || *e.Value != "3600000" || e.Source != kafka.ConfigSourceDynamicTopic {
		t.Fatalf("DescribeConfigs retention.ms: %+v", e)
	}
	err = c.IncrementalAlterConfigs(ctx, kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: topic},
		[]kafka.ConfigOp{{Name: "retention.ms", Op: kafka.ConfigOpSet, Value: ptr("7200000")}}, false)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if v := snapValue(); v != "7200000" {
		t.Fatalf("after IncrementalAlterConfigs the snapshot has retention.ms %q, want 7200000", v)
	}
	if err := c.AlterConfigs(ctx, kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: topic}, nil, false); err != nil {
		t.Fatalf("AlterConfigs: %v", err)
	}
	if v := snapValue(); v != "" {
		t.Fatalf("after AlterConfigs to nothing the snapshot has retention.ms %q", v)
	}
	if e := described(); e.Source == kafka.ConfigSourceDynamicTopic {
		t.Fatalf("after AlterConfigs to nothing, retention.ms is still the topic's: %+v", e)
	}
	err = c.IncrementalAlterConfigs(ctx, kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: topic},
		[]kafka.ConfigOp{{Name: "no.such.config", Op: kafka.ConfigOpSet, Value: ptr("1")}}, false)
	if !errors.Is(err, kafka.ErrInvalidConfig) {
		t.Errorf("setting an unknown config: err %v, want ErrInvalidConfig", err)
	}
	_, err = c.DescribeConfigs(ctx, kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: name(t, "nope")})
	if !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Errorf("DescribeConfigs of an unknown topic: err %v, want ErrUnknownTopic", err)
	}
}

// testConcurrentReaders reads snapshots while topics come and go: every
// snapshot must be whole (each listed topic found by name and by id, as
// the same topic) and versions must not go back. Run with -race, it also
// catches a snapshot written after it was published.
func testConcurrentReaders(t *testing.T, ctx context.Context, c kafka.Cluster) {
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		errs    = make(chan error, 4)
		created = make(chan kafka.Topic, 16)
	)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for !stop.Load() {
				md, err := c.Metadata(ctx)
				if err != nil {
					errs <- err
					return
				}
				if md.Version() < last {
					errs <- fmt.Errorf("snapshot version went back from %d to %d", last, md.Version())
					return
				}
				last = md.Version()
				for _, tp := range md.Topics() {
					byName, _ := md.Topic(tp.Name)
					byID, _ := md.TopicByID(tp.ID)
					if byName != tp || byID != tp {
						errs <- fmt.Errorf("snapshot %d: %s listed but found by name as %p, by id as %p", md.Version(), tp.Name, byName, byID)
						return
					}
					_ = tp.LeaderEpoch(0) + int32(len(tp.Configs))
				}
			}
		}()
	}
	for i := 0; i < 4; i++ {
		topic := name(t, fmt.Sprint(i))
		tp, err := c.CreateTopic(ctx, kafka.CreateTopic{Name: topic, Partitions: 1, ReplicationFactor: 1})
		if err != nil {
			t.Error(err)
			break
		}
		created <- tp
		if i%2 == 1 {
			if err := c.DeleteTopic(ctx, topic); err != nil {
				t.Error(err)
				break
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(created)
	i := 0
	for tp := range created {
		if i%2 == 0 {
			checkVisible(t, ctx, c, tp)
		} else {
			checkGone(t, ctx, c, tp.Name, tp.ID)
		}
		i++
	}
}

func ptr(s string) *string { return &s }

// testReassignments checks what any Cluster answers alike, whatever its
// stores: refusals name their cause, and a topic nobody moves lists
// nothing.
func testReassignments(t *testing.T, ctx context.Context, c kafka.Cluster) {
	topic := name(t, "moves")
	create(t, ctx, c, topic, 2)
	errs, err := c.AlterPartitionReassignments(ctx, []kafka.Reassignment{
		{Topic: name(t, "missing"), Partition: 0, Replicas: []int32{1}},
		{Topic: topic, Partition: 1, Replicas: nil},
	})
	if err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
	if len(errs) != 2 {
		t.Fatalf("%d answers for 2 reassignments", len(errs))
	}
	if code := kafka.ErrorFor(errs[0]); code == nil || code.Code != 3 {
		t.Fatalf("reassigning a missing topic: %v (Kafka %v), want UNKNOWN_TOPIC_OR_PARTITION", errs[0], code)
	}
	if code := kafka.ErrorFor(errs[1]); code == nil || code.Code != 85 {
		t.Fatalf("cancelling with nothing in progress: %v (Kafka %v), want NO_REASSIGNMENT_IN_PROGRESS", errs[1], code)
	}
	ongoing, err := c.ListPartitionReassignments(ctx, []kafka.TopicPartitions{{Topic: topic, Partitions: []int32{0, 1}}})
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	if len(ongoing) != 0 {
		t.Fatalf("a topic nobody moves lists %+v", ongoing)
	}
}
