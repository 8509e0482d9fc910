package adminapi

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// fakeSource is an in-memory node: topics with partitions of records,
// groups, schemas. Its Fetch returns whole batches from the requested
// offset up to maxBytes (the first batch always), as the backend does.
type fakeSource struct {
	mu      sync.Mutex
	topics  map[string]*fakeTopic
	groups  map[string]*Group
	schemas map[int32]Schema
	fetched int // bytes returned by Fetch
}

type fakeTopic struct {
	meta    TopicMeta
	configs []Config
	parts   []*fakePart
}

type fakePart struct {
	logStart int64
	batches  [][]byte // each with its base offset
	bases    []int64
	hw       int64
	ts       []int64 // timestamp of each offset from logStart
}

type rec struct {
	key, value []byte
	ts         int64
	headers    [][2][]byte
}

func newFake() *fakeSource {
	return &fakeSource{topics: map[string]*fakeTopic{}, groups: map[string]*Group{}, schemas: map[int32]Schema{}}
}

func (f *fakeSource) addTopic(name string, parts int) *fakeTopic {
	t := &fakeTopic{meta: TopicMeta{Name: name, ID: "id-" + name, ReplicationFactor: 1}}
	for p := 0; p < parts; p++ {
		t.meta.Partitions = append(t.meta.Partitions, PartitionMeta{Partition: int32(p), Leader: 1, Replicas: []int32{1}, ISR: []int32{1}})
		t.parts = append(t.parts, &fakePart{})
	}
	t.configs = []Config{
		{Name: "retention.ms", Value: "604800000", IsDefault: true, Dynamic: true, Doc: "how long"},
		{Name: "fixed.thing", Value: "x", IsDefault: true, Dynamic: false, Doc: "cannot change"},
	}
	f.topics[name] = t
	return t
}

// append adds one batch of recs to partition p.
func (t *fakeTopic) append(p int, recs ...rec) {
	fp := t.parts[p]
	fp.bases = append(fp.bases, fp.hw)
	fp.batches = append(fp.batches, encodeBatch(fp.hw, recs))
	for _, r := range recs {
		fp.ts = append(fp.ts, r.ts)
	}
	fp.hw += int64(len(recs))
}

// encodeBatch builds an uncompressed RecordBatch v2.
func encodeBatch(base int64, recs []rec) []byte {
	var body []byte
	firstTS := int64(0)
	if len(recs) > 0 {
		firstTS = recs[0].ts
	}
	maxTS := firstTS
	for i, r := range recs {
		maxTS = max(maxTS, r.ts)
		var b []byte
		b = append(b, 0) // attributes
		b = binary.AppendVarint(b, r.ts-firstTS)
		b = binary.AppendVarint(b, int64(i))
		b = appendBytes(b, r.key)
		b = appendBytes(b, r.value)
		b = binary.AppendVarint(b, int64(len(r.headers)))
		for _, h := range r.headers {
			b = appendBytes(b, h[0])
			b = appendBytes(b, h[1])
		}
		body = binary.AppendVarint(body, int64(len(b)))
		body = append(body, b...)
	}
	out := make([]byte, 61, 61+len(body))
	binary.BigEndian.PutUint64(out[0:], uint64(base))
	binary.BigEndian.PutUint32(out[8:], uint32(49+len(body)))
	out[16] = 2
	binary.BigEndian.PutUint32(out[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(out[27:], uint64(firstTS))
	binary.BigEndian.PutUint64(out[35:], uint64(maxTS))
	binary.BigEndian.PutUint64(out[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint32(out[57:], uint32(len(recs)))
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func (f *fakeSource) Cluster(context.Context) (Cluster, error) {
	return Cluster{ClusterID: "c1", Controller: Controller{Leader: 1, Voters: []Voter{{1, "127.0.0.1:8001"}}},
		Stores:     []Store{{ID: 1, Addr: "127.0.0.1:7001", Live: true, Partitions: 3, Leaders: 3, DiskBytes: 10}},
		Gateways:   []Gateway{{ID: 100, Kind: "kafka", Addr: "127.0.0.1:9092"}},
		Leadership: []Leadership{{Topic: "t", Partition: 0, Leader: 1, Replicas: []int32{1}}}}, nil
}

func (f *fakeSource) Topics(context.Context) ([]TopicMeta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []TopicMeta
	for _, t := range f.topics {
		out = append(out, t.meta)
	}
	return out, nil
}

func (f *fakeSource) topic(name string) (*fakeTopic, error) {
	t := f.topics[name]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return t, nil
}

func (f *fakeSource) Topic(_ context.Context, name string) (TopicMeta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.topic(name)
	if err != nil {
		return TopicMeta{}, err
	}
	return t.meta, nil
}

func (f *fakeSource) Configs(_ context.Context, name string) ([]Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.topic(name)
	if err != nil {
		return nil, err
	}
	return append([]Config(nil), t.configs...), nil
}

func (f *fakeSource) AlterConfigs(_ context.Context, name string, set map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.topic(name)
	if err != nil {
		return err
	}
	for i, c := range t.configs {
		if v, ok := set[c.Name]; ok {
			t.configs[i].Value, t.configs[i].IsDefault = v, false
		}
	}
	return nil
}

func (f *fakeSource) part(topic string, p int32) (*fakePart, error) {
	t, err := f.topic(topic)
	if err != nil {
		return nil, err
	}
	if p < 0 || int(p) >= len(t.parts) {
		return nil, fmt.Errorf("%w: partition %d", ErrUnavailable, p)
	}
	return t.parts[p], nil
}

func (f *fakeSource) PartitionStats(_ context.Context, topic string, p int32) (PartitionStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return PartitionStats{}, err
	}
	var n int64
	for _, b := range fp.batches {
		n += int64(len(b))
	}
	return PartitionStats{LogStart: fp.logStart, HighWatermark: fp.hw, LastStable: fp.hw, LocalBytes: n, ColdBytes: 7, TierBacklogBytes: 3}, nil
}

func (f *fakeSource) Fetch(_ context.Context, topic string, p int32, offset int64, maxBytes int32) (Fetched, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return Fetched{}, err
	}
	if offset < fp.logStart || offset > fp.hw {
		return Fetched{}, fmt.Errorf("%w: %d", ErrOffsetOutOfRange, offset)
	}
	var out []byte
	for i, b := range fp.batches {
		end := fp.hw
		if i+1 < len(fp.bases) {
			end = fp.bases[i+1]
		}
		if end <= offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > int(maxBytes) {
			break
		}
		out = append(out, b...)
	}
	f.fetched += len(out)
	return Fetched{Batches: out, HighWatermark: fp.hw, LogStart: fp.logStart}, nil
}

func (f *fakeSource) OffsetForTimestamp(_ context.Context, topic string, p int32, ts int64) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return 0, err
	}
	for i, t := range fp.ts {
		if t >= ts {
			return fp.logStart + int64(i), nil
		}
	}
	return -1, nil
}

func (f *fakeSource) ListGroups(context.Context) ([]GroupSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []GroupSummary
	for _, g := range f.groups {
		out = append(out, GroupSummary{Group: g.Group, Type: g.Type, State: g.State, Protocol: g.Protocol})
	}
	return out, nil
}

func (f *fakeSource) DescribeGroup(_ context.Context, id string) (Group, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[id]
	if g == nil {
		return Group{}, fmt.Errorf("%w: %s", ErrUnknownGroup, id)
	}
	c := *g
	c.Offsets = append([]CommittedOffset(nil), g.Offsets...)
	return c, nil
}

func (f *fakeSource) CommitOffsets(_ context.Context, id string, offs []CommittedOffset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[id]
	if len(g.Members) > 0 {
		return ErrGroupNotEmpty
	}
	for _, o := range offs {
		found := false
		for i := range g.Offsets {
			if g.Offsets[i].Topic == o.Topic && g.Offsets[i].Partition == o.Partition {
				g.Offsets[i].Offset, found = o.Offset, true
			}
		}
		if !found {
			g.Offsets = append(g.Offsets, o)
		}
	}
	return nil
}

func (f *fakeSource) DeleteGroup(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.groups[id].Members) > 0 {
		return ErrGroupNotEmpty
	}
	delete(f.groups, id)
	return nil
}

func (f *fakeSource) Schema(_ context.Context, id int32) (Schema, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.schemas[id]
	if !ok {
		return Schema{}, fmt.Errorf("schema %d not found", id)
	}
	return s, nil
}

func (f *fakeSource) Tables(context.Context) ([]IcebergTable, error) {
	return []IcebergTable{{Topic: "t", Table: "default.t", LastCommitMs: 1, SnapshotID: 2}}, nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
