package kmeta_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/kafka/clustertest"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
)

// TestConformance runs the Cluster suite over kmeta as serve wires it: a
// real controller (Raft in memory), a store behind the in-process ring
// with its StoreAgent, and the gateway registered as a member.
func TestConformance(t *testing.T) {
	clustertest.Run(t, newRealCluster(t))
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// ringPartitions is the store, reached through the ring, as the
// controller's StoreAgent drives it.
type ringPartitions struct{ b ring.Backend }

func (p ringPartitions) CreatePartition(ctx context.Context, topic string, partition int32, _ map[string]string) error {
	err := p.b.CreatePartition(ctx, topic, partition, ring.PartitionConfig{})
	if errors.Is(err, ring.ErrPartitionExists) {
		return nil
	}
	return err
}

func (p ringPartitions) DeletePartition(ctx context.Context, topic string, partition int32) error {
	err := p.b.DeletePartition(ctx, topic, partition)
	if errors.Is(err, ring.ErrUnknownPartition) {
		return nil
	}
	return err
}

func (p ringPartitions) ListPartitions(ctx context.Context) ([]controller.LocalPartition, error) {
	infos, err := p.b.ListPartitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]controller.LocalPartition, len(infos))
	for i, in := range infos {
		out[i] = controller.LocalPartition{Topic: in.Topic, Partition: in.Partition}
	}
	return out, nil
}

// newRealCluster starts a controller, a store and its agent, and a
// gateway's Cluster, all stopped (and waited for) when t ends; it returns
// once the gateway sees itself registered.
func newRealCluster(t *testing.T) *kmeta.Cluster {
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
	backend := ring.NewInProcess(st)
	_, trans := raft.NewInmemTransport("")
	logs := raft.NewInmemStore()
	ctl, err := controller.Open(controller.Options{
		NodeID: 100, Bootstrap: true, RaftTimeout: 200 * time.Millisecond,
		SessionTimeout: 10 * time.Second, HeartbeatInterval: 200 * time.Millisecond, Logger: quiet(),
		Raft: &controller.RaftDeps{Transport: trans, Logs: logs, Stable: logs, Snapshots: raft.NewInmemSnapshotStore()},
	})
	if err != nil {
		backend.Close()
		st.Close()
		cat.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := ctl.Close(); err != nil {
			t.Error(err)
		}
		backend.Close()
		st.Close()
		cat.Close()
	})

	agent := controller.NewStoreAgent(ctl, ringPartitions{backend}, controller.RegisterNodeRequest{
		ID: 1, Shards: 2, RingAddr: "in-process", Addresses: map[string]string{"ring": "in-process"},
	}, quiet())
	c := kmeta.New(kmeta.Options{API: ctl, Backend: backend, NodeID: 2, Addr: "127.0.0.1:9092", Logger: quiet()})
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = agent.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		_ = c.Run(ctx)
	}()

	// Wait until the gateway's own snapshot lists it: the controller has
	// a leader and the gateway is a member.
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := c.Metadata(ctx)
		if err == nil && slices.ContainsFunc(md.Brokers(), func(b kafka.Broker) bool { return b.NodeID == 2 }) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not see itself registered within 30s (last err %v)", err)
		}
		time.Sleep(10 * time.Millisecond) // polling observable state
	}
}
