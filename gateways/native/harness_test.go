package native_test

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
)

// memCluster is a Cluster over one in-process store: what kmeta does
// against the controller, without one.
type memCluster struct {
	b  ring.Backend
	mu sync.Mutex
	ts map[string]native.Topic
}

func (m *memCluster) ClusterID() string { return "test-cluster" }

func (m *memCluster) Topic(_ context.Context, name string) (native.Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.ts[name]
	if !ok {
		return t, native.ErrUnknownTopic
	}
	return t, nil
}

func (m *memCluster) TopicByID(_ context.Context, id [16]byte) (native.Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.ts {
		if t.ID == id {
			return t, nil
		}
	}
	return native.Topic{}, native.ErrUnknownTopic
}

func (m *memCluster) Topics(context.Context) ([]native.Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []native.Topic
	for _, t := range m.ts {
		out = append(out, t)
	}
	return out, nil
}

func (m *memCluster) CreateTopic(ctx context.Context, name string, n int32, rf int16, _ map[string]*string) (native.Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ts[name]; ok {
		return native.Topic{}, ring.ErrPartitionExists
	}
	t := native.Topic{Name: name, Partitions: n, ReplicationFactor: rf}
	_, _ = rand.Read(t.ID[:])
	for p := range n {
		if err := m.b.CreatePartition(ctx, name, p, ring.PartitionConfig{}); err != nil {
			return native.Topic{}, err
		}
	}
	m.ts[name] = t
	return t, nil
}

func (m *memCluster) AlterConfigs(_ context.Context, name string, set map[string]*string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.ts[name]
	if !ok {
		return native.ErrUnknownTopic
	}
	cfg := map[string]string{}
	for k, v := range t.Configs {
		cfg[k] = v
	}
	for k, v := range set {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = *v
		}
	}
	t.Configs = cfg
	m.ts[name] = t
	return nil
}

func (m *memCluster) DeleteTopic(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.ts[name]
	if !ok {
		return native.ErrUnknownTopic
	}
	for p := range t.Partitions {
		_ = m.b.DeletePartition(ctx, name, p)
	}
	delete(m.ts, name)
	return nil
}

// memOffsets is an Offsets in memory, where tools/ wires the Kafka
// gateways' coordinators.
type memOffsets struct {
	mu sync.Mutex
	m  map[string]map[int32]int64
}

func (o *memOffsets) CommitOffsets(_ context.Context, group, topic string, offs map[int32]int64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := group + "/" + topic
	if o.m[k] == nil {
		o.m[k] = map[int32]int64{}
	}
	for p, off := range offs {
		o.m[k][p] = off
	}
	return nil
}

func (o *memOffsets) FetchOffsets(_ context.Context, group, topic string) (map[int32]int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[int32]int64{}
	for p, off := range o.m[group+"/"+topic] {
		out[p] = off
	}
	return out, nil
}

// memProducerIDs counts ids up, as the Kafka gateways' allocator does.
type memProducerIDs struct {
	mu   sync.Mutex
	next int64
}

func (m *memProducerIDs) InitProducerID(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next++
	return m.next, nil
}

func (o *memOffsets) ListGroups(context.Context) ([]string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for k := range o.m {
		g, _, _ := strings.Cut(k, "/")
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out, nil
}

type env struct {
	addr    string
	gw      *native.Gateway
	backend ring.Backend
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newEnv opens a store in a temp dir and serves a native gateway on it.
func newEnv(t testing.TB, tweak ...func(*native.Options)) *env {
	t.Helper()
	return newEnvOn(t, nil, tweak...)
}

// newEnvOn is newEnv with the listener wrapped by wrap (TLS) when not nil.
func newEnvOn(t testing.TB, wrap func(net.Listener) net.Listener, tweak ...func(*native.Options)) *env {
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
	b := ring.NewInProcess(st)
	opts := native.Options{Backend: b, Cluster: &memCluster{b: b, ts: map[string]native.Topic{}}, Logger: quiet(),
		Offsets: &memOffsets{m: map[string]map[int32]int64{}}, ProducerIDs: &memProducerIDs{next: 1 << 16}}
	for _, fn := range tweak {
		fn(&opts)
	}
	gw, err := native.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := ln
	if wrap != nil {
		served = wrap(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, served) }()
	t.Cleanup(func() {
		cancel()
		<-done
		b.Close()
		st.Close()
		cat.Close()
	})
	return &env{addr: ln.Addr().String(), gw: gw, backend: b}
}
