package iceberg

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

func TestFenceFences(t *testing.T) {
	old, cur := Fence{Epoch: 3, Node: 11, TopicID: "a"}, Fence{Epoch: 4, Node: 12, TopicID: "a"}
	if !cur.Fences(old) {
		t.Error("epoch 4 does not fence epoch 3 of the same topic")
	}
	if old.Fences(cur) || cur.Fences(cur) {
		t.Error("an older or equal epoch fences")
	}
	if (Fence{Epoch: 9, TopicID: "b"}).Fences(old) {
		t.Error("a deleted topic's table (another topic id) fences the new topic")
	}
	back, ok := SnapshotFence(&table.Snapshot{Summary: &table.Summary{Properties: cur.props()}})
	if !ok || back != cur {
		t.Errorf("SnapshotFence(props) = %v, %v; want %v", back, ok, cur)
	}
	if _, ok := SnapshotFence(&table.Snapshot{Summary: &table.Summary{Properties: map[string]string{SummaryOffsets: "{}"}}}); ok {
		t.Error("a snapshot without a fence has one")
	}
}

// startNodeManager runs a manager that commits topic as node under
// partition 0's leader epoch, until stop or the end of the test.
func startNodeManager(t *testing.T, cat catalog.Catalog, cfg Config, l *testLog, topic string, parts, node, epoch int32) (m *Manager, stop func()) {
	m = NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet(), NodeID: node})
	m.Update([]TopicState{{Name: topic, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true,
		LeaderEpoch: epoch, TopicID: "t1"}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = m.Run(ctx, l.backend) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return m, stop
}

// TestDeposedCommitterFenced: the committer of leader epoch 1 stops (its
// node paused), epoch 2's commits, and the old one comes back still
// believing it leads partition 0 at epoch 1 (it has not seen the new
// metadata yet). It must not commit again beside the new leader: every
// snapshot after epoch 2's first is epoch 2's, and the rows stay exact.
func TestDeposedCommitterFenced(t *testing.T) {
	const topic, parts = "fenced", int32(2)
	l := newTestLog(t, topic, parts)
	cfg := testConfig(t.TempDir())
	catOld, catNew := openTestCatalog(t, cfg), openTestCatalog(t, cfg)
	l.produce(t, topic, parts, 40, "a")
	_, stopOld := startNodeManager(t, catOld, cfg, l, topic, parts, 11, 1)
	waitOffsets(t, catOld, topic, offsetsAll(parts, 40))
	stopOld()

	startNodeManager(t, catNew, cfg, l, topic, parts, 12, 2)
	l.produce(t, topic, parts, 40, "b")
	waitOffsets(t, catNew, topic, offsetsAll(parts, 80))

	old, _ := startNodeManager(t, catOld, cfg, l, topic, parts, 11, 1)
	n := 80
	for i := range 10 {
		l.produce(t, topic, parts, 20, fmt.Sprint("c", i))
		n += 20
		time.Sleep(50 * time.Millisecond) // let both committers see some of it
	}
	tbl := waitOffsets(t, catNew, topic, offsetsAll(parts, int64(n)))
	counts, _ := scanRows(t, tbl)
	checkExact(t, counts, parts, n)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := old.Status(topic)
		if len(st) == 1 && strings.Contains(st[0].LastError, ErrFenced.Error()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deposed committer's status %+v does not say it is fenced", st)
		}
		time.Sleep(20 * time.Millisecond) // its session runs in another goroutine
	}

	// Newest first: epochs never grow walking back, epoch 2 is node
	// 12's alone, and the newest snapshot is the new leader's.
	meta := tbl.Metadata()
	var chain []Fence
	for snap := meta.CurrentSnapshot(); snap != nil; {
		f, ok := SnapshotFence(snap)
		if !ok {
			t.Fatalf("snapshot %d carries no fence: %v", snap.SnapshotID, snap.Summary)
		}
		chain = append(chain, f)
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	for i := 1; i < len(chain); i++ {
		newer, older := chain[i-1], chain[i]
		if newer.Epoch < older.Epoch {
			t.Errorf("snapshot history goes back from epoch %d (node %d) to %d (node %d)", older.Epoch, older.Node, newer.Epoch, newer.Node)
		}
	}
	for _, f := range chain {
		if (f.Epoch == 2) != (f.Node == 12) {
			t.Errorf("epoch %d committed by node %d", f.Epoch, f.Node)
		}
	}
	if chain[0].Node != 12 || chain[len(chain)-1].Node != 11 {
		t.Errorf("history from oldest to newest goes from node %d to node %d; want 11 to 12", chain[len(chain)-1].Node, chain[0].Node)
	}
}
