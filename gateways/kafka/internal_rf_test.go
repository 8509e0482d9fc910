package kafka

import (
	"context"
	"fmt"
	"testing"
)

// twoStores refuses replication factors above 2, as the controller does
// with two live stores, and records what was asked.
type twoStores struct {
	Cluster
	asked []int16
}

func (c *twoStores) CreateTopic(_ context.Context, req CreateTopic) (Topic, error) {
	c.asked = append(c.asked, req.ReplicationFactor)
	if req.ReplicationFactor > 2 {
		return Topic{}, fmt.Errorf("%w: replication factor %d is larger than the 2 live store(s)", ErrInvalidReplicationFactor, req.ReplicationFactor)
	}
	return Topic{Name: req.Name, Partitions: req.Partitions, ReplicationFactor: req.ReplicationFactor, Internal: req.Internal}, nil
}

func TestInternalTopicsTakeAsManyReplicasAsStores(t *testing.T) {
	c := &twoStores{}
	g := &Gateway{cluster: c}
	got, err := g.createInternal(context.Background(), CreateTopic{Name: offsetsTopic, Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	if got.ReplicationFactor != 2 || !got.Internal {
		t.Fatalf("created %+v, want replication factor 2 and internal", got)
	}
	if fmt.Sprint(c.asked) != "[3 2]" {
		t.Fatalf("asked for replication factors %v, want [3 2]", c.asked)
	}
}
