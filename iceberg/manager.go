package iceberg

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/aerostream/aerostream/logstore/ring"
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Config  Config
	Catalog catalog.Catalog
	// Registry is handed to the modes (ModeContext.Registry).
	Registry any
	Logger   *slog.Logger
	// NodeID is this node's id, written in the snapshots it commits
	// (SummaryCommitter).
	NodeID int32
}

// TopicState is a topic as the node's metadata says: its partitions, its
// configs (only iceberg.enabled=true topics are translated) and whether
// this node runs its committer (see doc.go for the rule).
type TopicState struct {
	Name       string
	Partitions int32
	Configs    map[string]string
	Commit     bool
	// LeaderEpoch is partition 0's leader epoch in this node's view, and
	// TopicID the topic's id: a committer's fence (fence.go).
	LeaderEpoch int32
	TopicID     string
}

// Enabled reports iceberg.enabled=true.
func (t TopicState) Enabled() bool { return t.Configs[ConfigEnabled] == "true" }

// Manager runs the committers of the node's Iceberg topics and answers
// the retention guard.
type Manager struct {
	opts    ManagerOptions
	cfg     Config
	cat     catalog.Catalog
	log     *slog.Logger
	met     *metrics
	backend ring.Backend // set by Run

	mu struct {
		sync.Mutex
		ctx    context.Context // Run's; nil before Run
		ready  bool            // Update was called once
		topics map[string]*topicRun
		floors map[string]Offsets
	}
	wg sync.WaitGroup
}

// topicRun is one topic's committer (or offsets watcher) and its status.
type topicRun struct {
	mu     sync.Mutex
	st     TopicState
	cancel context.CancelFunc
	done   chan struct{}
	stat   *topicStat
}

func (r *topicRun) state() TopicState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// NewManager returns a Manager; Run starts it.
func NewManager(opts ManagerOptions) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Manager{opts: opts, cfg: opts.Config.withDefaults(), cat: opts.Catalog, log: opts.Logger, met: newMetrics()}
	m.mu.topics = map[string]*topicRun{}
	m.mu.floors = map[string]Offsets{}
	return m
}

// Collectors are the Prometheus series of the node's Iceberg topics.
func (m *Manager) Collectors() []prometheus.Collector { return m.met.collectors(m) }

// Run serves until ctx ends, reading the log through backend; the topics
// come from Update, which may be called before or during Run.
func (m *Manager) Run(ctx context.Context, backend ring.Backend) error {
	m.mu.Lock()
	m.backend = backend
	m.mu.ctx = ctx
	topics := make([]TopicState, 0, len(m.mu.topics))
	for _, r := range m.mu.topics {
		topics = append(topics, r.state())
	}
	m.mu.topics = map[string]*topicRun{}
	m.mu.Unlock()
	if len(topics) > 0 {
		m.Update(topics)
	}
	<-ctx.Done()
	m.mu.Lock()
	for _, r := range m.mu.topics {
		r.cancel()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Update makes topics the node's view: committers start for the Iceberg
// topics this node commits, watchers of the table's offsets for the
// others, and runs of topics that left or changed stop.
func (m *Manager) Update(topics []TopicState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.ready = true
	seen := map[string]bool{}
	for _, t := range topics {
		if !t.Enabled() {
			continue
		}
		seen[t.Name] = true
		r := m.mu.topics[t.Name]
		if r != nil {
			old := r.state()
			if old.Commit == t.Commit && maps.Equal(old.Configs, t.Configs) {
				r.mu.Lock()
				r.st.Partitions, r.st.LeaderEpoch, r.st.TopicID = t.Partitions, t.LeaderEpoch, t.TopicID
				r.mu.Unlock()
				continue
			}
			r.cancel()
			delete(m.mu.topics, t.Name)
		}
		r = &topicRun{st: t, stat: newTopicStat(t.Name), cancel: func() {}, done: make(chan struct{})}
		m.mu.topics[t.Name] = r
		if m.mu.ctx == nil {
			continue // started by Run
		}
		ctx, cancel := context.WithCancel(m.mu.ctx)
		r.cancel = cancel
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer close(r.done)
			if t.Commit {
				m.log.Info("iceberg committer started", "topic", t.Name, "partitions", t.Partitions)
				(&committer{m: m, run: r, topic: t.Name, log: m.log}).loop(ctx)
			} else {
				m.watch(ctx, r)
			}
		}()
	}
	for name, r := range m.mu.topics {
		if !seen[name] {
			r.cancel()
			delete(m.mu.topics, name)
			delete(m.mu.floors, name)
		}
	}
}

// watch keeps the floors of a topic another node commits, from its
// table's offsets.
func (m *Manager) watch(ctx context.Context, r *topicRun) {
	t := r.state()
	for {
		tbl, err := m.cat.LoadTable(ctx, table.Identifier{m.cfg.Namespace, t.Name})
		if err == nil {
			var o Offsets
			if o, err = TableOffsets(tbl.Metadata()); err == nil {
				r.stat.loaded(tbl, o)
				m.setFloors(t.Name, o)
			}
		}
		if err != nil && !errors.Is(err, catalog.ErrNoSuchTable) && ctx.Err() == nil {
			m.log.Warn("iceberg: cannot read the table's offsets; retention stays held", "topic", t.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(m.cfg.CommitInterval):
		}
	}
}

func (m *Manager) setFloors(topic string, o Offsets) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.topics[topic]; ok {
		m.mu.floors[topic] = o.Clone()
	}
}

// Floor is logstore's RetentionFloor: an Iceberg topic's partition keeps
// the records its table does not hold; every topic is held until the
// first Update says which are Iceberg topics.
func (m *Manager) Floor(topic string, partition int32) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.mu.ready {
		return 0, true
	}
	if _, ok := m.mu.topics[topic]; !ok {
		return 0, false
	}
	return m.mu.floors[topic][partition], true
}

// TopicStatus is a topic's translation status, as `aerostream iceberg
// status` prints it.
type TopicStatus struct {
	Topic       string           `json:"topic"`
	Table       string           `json:"table"`
	Committer   bool             `json:"committer"` // this node commits it
	Offsets     map[string]int64 `json:"offsets"`   // committed: next offset per partition
	HighWater   map[string]int64 `json:"high_watermarks,omitempty"`
	LagRecords  int64            `json:"lag_records"`
	LagSeconds  float64          `json:"lag_seconds"`
	LastCommit  *time.Time       `json:"last_commit,omitempty"`
	SnapshotID  int64            `json:"snapshot_id,omitempty"`
	DataFiles   int64            `json:"data_files"`
	DataBytes   int64            `json:"data_bytes"`
	Rows        int64            `json:"rows"`
	DLQRows     int64            `json:"dlq_rows"`
	LastError   string           `json:"last_error,omitempty"`
	Commits     int64            `json:"commits"`
	FailedTries int64            `json:"failed_commits"`
}

// Status lists the node's Iceberg topics (one when topic is set).
func (m *Manager) Status(topic string) []TopicStatus {
	m.mu.Lock()
	runs := make([]*topicRun, 0, len(m.mu.topics))
	for name, r := range m.mu.topics {
		if topic == "" || name == topic {
			runs = append(runs, r)
		}
	}
	m.mu.Unlock()
	out := make([]TopicStatus, 0, len(runs))
	for _, r := range runs {
		s := r.stat.status()
		s.Table = m.cfg.Namespace + "." + s.Topic
		s.Committer = r.state().Commit
		out = append(out, s)
	}
	sortStatus(out)
	return out
}

// topicStat is what a committer or watcher reports.
type topicStat struct {
	mu sync.Mutex
	s  TopicStatus
}

func newTopicStat(topic string) *topicStat {
	return &topicStat{s: TopicStatus{Topic: topic, Offsets: map[string]int64{}}}
}

func (t *topicStat) status() TopicStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.s
	s.Offsets = maps.Clone(s.Offsets)
	s.HighWater = maps.Clone(s.HighWater)
	return s
}

func (t *topicStat) failed(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.LastError = err.Error()
	t.s.FailedTries++
}

func (t *topicStat) addDLQ(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.s.DLQRows += int64(n)
}

// loaded records the table as read.
func (t *topicStat) loaded(tbl *table.Table, o Offsets) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setTableLocked(tbl, o)
}

// committed records a commit of this node.
func (t *topicStat) committed(tbl *table.Table, o Offsets) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setTableLocked(tbl, o)
	t.s.Commits++
	t.s.LastError = ""
}

func (t *topicStat) setTableLocked(tbl *table.Table, o Offsets) {
	t.s.Offsets = map[string]int64{}
	for p, v := range o {
		t.s.Offsets[strconv.Itoa(int(p))] = v
	}
	snap := tbl.Metadata().CurrentSnapshot()
	if snap == nil {
		return
	}
	at := time.UnixMilli(snap.TimestampMs)
	t.s.LastCommit, t.s.SnapshotID = &at, snap.SnapshotID
	if snap.Summary != nil {
		n := func(k string) int64 { v, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64); return v }
		t.s.DataFiles, t.s.DataBytes, t.s.Rows = n("total-data-files"), n("total-files-size"), n("total-records")
	}
}

// setLag records the high watermarks read and the lag behind them:
// records not committed yet, and the age of the oldest of them read
// (minTs, -1 for none), or of the last commit when none was read.
func (t *topicStat) setLag(parts map[int32]*partState, committed Offsets, minTs int64) (lag int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hw := map[string]int64{}
	for p, ps := range parts {
		if ps.hw < 0 {
			continue
		}
		hw[strconv.Itoa(int(p))] = ps.hw
		if d := ps.hw - committed[p]; d > 0 {
			lag += d
		}
	}
	t.s.HighWater, t.s.LagRecords = hw, lag
	switch {
	case lag == 0:
		t.s.LagSeconds = 0
	case minTs >= 0:
		t.s.LagSeconds = max(0, time.Since(time.UnixMilli(minTs)).Seconds())
	case t.s.LastCommit != nil:
		t.s.LagSeconds = time.Since(*t.s.LastCommit).Seconds()
	}
	return lag
}
