package kafka

import (
	"strconv"
	"testing"
)

func TestMetadataLookups(t *testing.T) {
	a := &Topic{Name: "a", ID: [16]byte{1}, Partitions: 2, Parts: []PartitionMeta{{Leader: 1}, {Leader: 2, LeaderEpoch: 4}}}
	b := &Topic{Name: "b", ID: [16]byte{2}, Partitions: 1}
	brokers := []Broker{{NodeID: 9}, {NodeID: 3}}
	m := NewMetadata(MetadataSource{Version: 7, ClusterID: "c", ControllerID: 3, Brokers: brokers, Topics: []*Topic{b, a}})
	if m.Version() != 7 || m.ClusterID() != "c" || m.ControllerID() != 3 {
		t.Fatalf("version %d cluster %q controller %d", m.Version(), m.ClusterID(), m.ControllerID())
	}
	if got, ok := m.Topic("a"); !ok || got != a {
		t.Fatalf("Topic(a) = %v, %v", got, ok)
	}
	if got, ok := m.TopicByID([16]byte{2}); !ok || got != b {
		t.Fatalf("TopicByID(2) = %v, %v", got, ok)
	}
	if _, ok := m.Topic("c"); ok {
		t.Fatal("unknown topic found by name")
	}
	if _, ok := m.TopicByID([16]byte{3}); ok {
		t.Fatal("unknown id found")
	}
	if ts := m.Topics(); len(ts) != 2 || ts[0] != a || ts[1] != b {
		t.Fatalf("Topics not in name order: %v", ts)
	}
	bs := m.Brokers()
	if len(bs) != 2 || bs[0].NodeID != 3 || bs[1].NodeID != 9 {
		t.Fatalf("Brokers not in node id order: %v", bs)
	}
	// The snapshot keeps its own brokers: the caller's slice may change.
	brokers[0].NodeID = 1
	if m.Brokers()[1].NodeID != 9 {
		t.Fatal("the snapshot shares the caller's broker slice")
	}
	// An append by a reader cannot write into the snapshot.
	_ = append(m.Brokers(), Broker{NodeID: 99})
	if bs := m.Brokers(); len(bs) != 2 || cap(bs) != 2 {
		t.Fatalf("brokers len %d cap %d", len(bs), cap(bs))
	}
	if got := a.Partition(1); got.Leader != 2 || got.LeaderEpoch != 4 || a.LeaderEpoch(1) != 4 {
		t.Fatalf("a/1: %+v", got)
	}
	if got := b.Partition(0); got.Leader != NoLeader || b.LeaderEpoch(0) != 0 {
		t.Fatalf("b/0 without placement: %+v", got)
	}
	if got := a.Partition(-1); got.Leader != NoLeader {
		t.Fatalf("a/-1: %+v", got)
	}
}

// TestMetadataReplacesByName: a topic deleted and created again under the
// same name between two versions leaves only the new one, by name and by
// id.
func TestMetadataReplacesByName(t *testing.T) {
	old := &Topic{Name: "a", ID: [16]byte{1}, Partitions: 1}
	cur := &Topic{Name: "a", ID: [16]byte{2}, Partitions: 3}
	m := NewMetadata(MetadataSource{Topics: []*Topic{old, cur}})
	if got, _ := m.Topic("a"); got != cur {
		t.Fatalf("Topic(a) = %+v", got)
	}
	if _, ok := m.TopicByID(old.ID); ok {
		t.Fatal("the replaced topic's id is still found")
	}
	if ts := m.Topics(); len(ts) != 1 || ts[0] != cur {
		t.Fatalf("Topics = %v", ts)
	}
}

func benchMetadata(n int) (*Metadata, *Topic) {
	topics := make([]*Topic, n)
	for i := range topics {
		topics[i] = &Topic{Name: "topic-" + strconv.Itoa(i), Partitions: 8}
		topics[i].ID[0], topics[i].ID[1] = byte(i), byte(i>>8)
	}
	return NewMetadata(MetadataSource{Topics: topics}), topics[n/2]
}

func TestMetadataLookupAllocs(t *testing.T) {
	m, want := benchMetadata(100)
	allocs := testing.AllocsPerRun(100, func() {
		t1, _ := m.Topic(want.Name)
		t2, _ := m.TopicByID(want.ID)
		if t1 != want || t2 != want {
			t.Fatal("lookup mismatch")
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per lookup, want 0", allocs)
	}
}

// BenchmarkMetadataLookup finds one topic by name and by id among 10,000.
func BenchmarkMetadataLookup(b *testing.B) {
	m, want := benchMetadata(10000)
	b.ReportAllocs()
	for b.Loop() {
		t1, _ := m.Topic(want.Name)
		t2, _ := m.TopicByID(want.ID)
		if t1 != t2 {
			b.Fatal("lookup mismatch")
		}
	}
}
