package catalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// There is no exported LogStore conformance suite in hashicorp/raft v1.8 (its
// store tests live in package raft and in raft-boltdb), so the cases below
// follow raft-boltdb's bolt_store_test.go, and TestRaftStoreWithRaft runs real
// raft clusters on top of the store.

func openRaftTest(t *testing.T, dir string) *RaftStore {
	t.Helper()
	s, err := OpenRaftStore(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("OpenRaftStore: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testLog(idx uint64, data string) *raft.Log {
	return &raft.Log{
		Index:      idx,
		Term:       idx/10 + 1,
		Type:       raft.LogCommand,
		Data:       []byte(data),
		Extensions: []byte("ext-" + data),
		AppendedAt: time.Unix(1732870000, int64(idx)).UTC(),
	}
}

func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

func checkIndexes(t *testing.T, s *RaftStore, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	if err != nil || f != first {
		t.Errorf("FirstIndex = %d, %v; want %d", f, err, first)
	}
	l, err := s.LastIndex()
	if err != nil || l != last {
		t.Errorf("LastIndex = %d, %v; want %d", l, err, last)
	}
}

func TestRaftStoreLogs(t *testing.T) {
	s := openRaftTest(t, t.TempDir())
	checkIndexes(t, s, 0, 0)

	var l raft.Log
	if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog on empty store: %v, want raft.ErrLogNotFound", err)
	}

	// StoreLog, then StoreLogs; indexes crossing a byte boundary (255/256)
	// check the big-endian key order.
	if err := s.StoreLog(testLog(1, "one")); err != nil {
		t.Fatal(err)
	}
	var batch []*raft.Log
	for i := uint64(2); i <= 300; i++ {
		batch = append(batch, testLog(i, fmt.Sprint("entry-", i)))
	}
	if err := s.StoreLogs(batch); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 1, 300)
	for i := uint64(1); i <= 300; i++ {
		want := testLog(i, fmt.Sprint("entry-", i))
		if i == 1 {
			want = testLog(1, "one")
		}
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if !logsEqual(&l, want) {
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, l, want)
		}
	}

	// Zero AppendedAt and empty Data (a LogNoop) round-trip.
	noop := &raft.Log{Index: 301, Term: 9, Type: raft.LogNoop}
	if err := s.StoreLog(noop); err != nil {
		t.Fatal(err)
	}
	if err := s.GetLog(301, &l); err != nil || !logsEqual(&l, noop) || !l.AppendedAt.IsZero() {
		t.Fatalf("noop round trip: %+v, %v", l, err)
	}

	// Prefix compaction, as raft does after a snapshot.
	if err := s.DeleteRange(1, 255); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 256, 301)
	if err := s.GetLog(255, &l); err != raft.ErrLogNotFound {
		t.Errorf("GetLog(255) after delete: %v", err)
	}
	// Suffix truncation, as a follower does on a log conflict.
	if err := s.DeleteRange(290, 301); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 256, 289)
	// min > max is a no-op.
	if err := s.DeleteRange(280, 270); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 256, 289)
	// Up to MaxUint64 has no max+1 and must still delete everything.
	if err := s.DeleteRange(0, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 0, 0)

	// Stable-store keys share the DB but never show up as log entries.
	if err := s.Set([]byte("zzz"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 0, 0)
	// Index 0 and MaxUint64 are storable.
	if err := s.StoreLogs([]*raft.Log{testLog(0, "zero"), testLog(math.MaxUint64, "max")}); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 0, math.MaxUint64)
}

func TestRaftStoreStable(t *testing.T) {
	s := openRaftTest(t, t.TempDir())

	_, err := s.Get([]byte("missing"))
	if err == nil || err.Error() != "not found" {
		t.Fatalf("Get(missing) = %v; raft needs the exact text \"not found\"", err)
	}
	if !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("Get(missing) does not match ErrKeyNotFound: %v", err)
	}
	v, err := s.GetUint64([]byte("missing"))
	if err == nil || err.Error() != "not found" || v != 0 {
		t.Fatalf("GetUint64(missing) = %d, %v; want 0, \"not found\"", v, err)
	}

	if err := s.Set([]byte("LastVoteCand"), []byte("node-1")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get([]byte("LastVoteCand"))
	if err != nil || string(got) != "node-1" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	// An empty value is present, not missing: raft tests the vote candidate
	// against nil.
	if err := s.Set([]byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get([]byte("empty")); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Get(empty) = %#v, %v; want non-nil empty", got, err)
	}

	for _, want := range []uint64{0, 1, 255, 256, math.MaxUint64} {
		if err := s.SetUint64([]byte("CurrentTerm"), want); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetUint64([]byte("CurrentTerm")); err != nil || got != want {
			t.Fatalf("GetUint64 = %d, %v; want %d", got, err, want)
		}
	}
	// A value that is not 8 bytes is corrupt, not silently truncated.
	if _, err := s.GetUint64([]byte("LastVoteCand")); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("GetUint64 of a 6-byte value: %v, want ErrCorruptRecord", err)
	}
	// Keys that look like log keys stay in the stable namespace.
	if err := s.Set(raftLogKey(5), []byte("x")); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, s, 0, 0)
}

func TestRaftStoreReopenAndClose(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenRaftStore(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs([]*raft.Log{testLog(7, "a"), testLog(8, "b")}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 42); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(7, &l); !errors.Is(err, ErrClosed) {
		t.Errorf("GetLog after Close: %v", err)
	}
	if _, err := s.LastIndex(); !errors.Is(err, ErrClosed) {
		t.Errorf("LastIndex after Close: %v", err)
	}
	if err := s.SetUint64([]byte("x"), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("SetUint64 after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s = openRaftTest(t, dir)
	checkIndexes(t, s, 7, 8)
	if err := s.GetLog(8, &l); err != nil || !logsEqual(&l, testLog(8, "b")) {
		t.Fatalf("GetLog after reopen: %+v, %v", l, err)
	}
	if v, err := s.GetUint64([]byte("CurrentTerm")); err != nil || v != 42 {
		t.Fatalf("GetUint64 after reopen: %d, %v", v, err)
	}
}

func TestRaftStoreCorruptLog(t *testing.T) {
	s := openRaftTest(t, t.TempDir())
	if err := s.db.Set(raftLogKey(3), []byte{raftLogVersion, 1}, nil); err != nil {
		t.Fatal(err)
	}
	var l raft.Log
	if err := s.GetLog(3, &l); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("GetLog of garbage: %v, want ErrCorruptRecord", err)
	}
}

// recordingFSM is a minimal raft.FSM: it keeps every applied command, and
// snapshots/restores them length-prefixed. (raft.MockFSM exists but is
// documented as not a stable API.)
type recordingFSM struct {
	mu   sync.Mutex
	logs [][]byte
}

func (f *recordingFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, l.Data)
	return len(f.logs)
}

func (f *recordingFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var buf []byte
	for _, l := range f.logs {
		buf = binary.AppendUvarint(buf, uint64(len(l)))
		buf = append(buf, l...)
	}
	return fsmSnapshot(buf), nil
}

func (f *recordingFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	var logs [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return errors.New("bad snapshot")
		}
		logs = append(logs, append([]byte(nil), b[k:k+int(n)]...))
		b = b[k+int(n):]
	}
	f.mu.Lock()
	f.logs = logs
	f.mu.Unlock()
	return nil
}

func (f *recordingFSM) snapshot() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.logs...)
}

type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

func raftTestConfig(id string) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(id)
	// Every store write is an fsync, which on a loaded CI disk can take tens
	// of milliseconds (over 150ms seen); raft's in-memory test timeouts (50ms)
	// then make the leader lose its lease mid-test.
	conf.HeartbeatTimeout = 500 * time.Millisecond
	conf.ElectionTimeout = 500 * time.Millisecond
	conf.LeaderLeaseTimeout = 300 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.TrailingLogs = 4
	conf.SnapshotThreshold = math.MaxUint64 >> 1 // snapshots only when the test asks
	conf.SnapshotInterval = time.Hour
	conf.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	return conf
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func commands(from, to int) [][]byte {
	var out [][]byte
	for i := from; i < to; i++ {
		out = append(out, []byte(fmt.Sprint("cmd-", i)))
	}
	return out
}

// TestRaftStoreWithRaft runs a real single-voter raft node on RaftStore:
// bootstrap, apply, snapshot and compact (DeleteRange, FirstIndex), shut
// down, reopen the store from disk and check raft recovers term, log and
// FSM state from it.
func TestRaftStoreWithRaft(t *testing.T) {
	dir := t.TempDir()
	snaps := raft.NewInmemSnapshotStore() // survives the restart, like a disk one would
	fsm := &recordingFSM{}

	store := openRaftTest(t, dir)
	addr, trans := raft.NewInmemTransport("node1")
	conf := raftTestConfig("node1")
	if ok, err := raft.HasExistingState(store, store, snaps); err != nil || ok {
		t.Fatalf("HasExistingState on a fresh store = %v, %v", ok, err)
	}
	if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{
		Servers: []raft.Server{{ID: conf.LocalID, Address: addr}},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(conf, fsm, store, store, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "leadership", func() bool { return r.State() == raft.Leader })
	for _, c := range commands(0, 20) {
		if err := r.Apply(c, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for _, c := range commands(20, 30) {
		if err := r.Apply(c, 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	if first <= 1 || last < 30 {
		t.Errorf("after snapshot+compaction FirstIndex=%d LastIndex=%d; want the prefix compacted", first, last)
	}
	term := r.Stats()["term"]
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	_ = trans.Close()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fsm.snapshot(); !reflect.DeepEqual(got, commands(0, 30)) {
		t.Fatalf("FSM before restart has %d commands", len(got))
	}

	// Restart from disk with a fresh FSM.
	store = openRaftTest(t, dir)
	if ok, err := raft.HasExistingState(store, store, snaps); err != nil || !ok {
		t.Fatalf("HasExistingState after restart = %v, %v", ok, err)
	}
	if gotTerm, err := store.GetUint64([]byte("CurrentTerm")); err != nil || fmt.Sprint(gotTerm) != term {
		t.Errorf("CurrentTerm after restart = %d, %v; raft reported %s", gotTerm, err, term)
	}
	fsm2 := &recordingFSM{}
	_, trans2 := raft.NewInmemTransport(addr)
	r2, err := raft.NewRaft(raftTestConfig("node1"), fsm2, store, store, snaps, trans2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r2.Shutdown().Error(); _ = trans2.Close() })
	waitFor(t, "leadership after restart", func() bool { return r2.State() == raft.Leader })
	if err := r2.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := r2.Apply([]byte("after-restart"), 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := append(commands(0, 30), []byte("after-restart"))
	if got := fsm2.snapshot(); !reflect.DeepEqual(got, want) {
		t.Fatalf("FSM after restart has %d commands, want %d", len(got), len(want))
	}
}

// TestRaftStoreCluster runs three voters, each on its own RaftStore, over the
// in-memory transport, and checks replication and a leader change.
func TestRaftStoreCluster(t *testing.T) {
	const n = 3
	type node struct {
		id    string
		store *RaftStore
		fsm   *recordingFSM
		trans *raft.InmemTransport
		r     *raft.Raft
	}
	nodes := make([]*node, n)
	var servers []raft.Server
	for i := range nodes {
		id := fmt.Sprint("node", i)
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(id))
		nodes[i] = &node{id: id, store: openRaftTest(t, t.TempDir()), fsm: &recordingFSM{}, trans: trans}
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: addr})
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, nd := range nodes {
		conf := raftTestConfig(nd.id)
		if err := raft.BootstrapCluster(conf, nd.store, nd.store, raft.NewInmemSnapshotStore(), nd.trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(conf, nd.fsm, nd.store, nd.store, raft.NewInmemSnapshotStore(), nd.trans)
		if err != nil {
			t.Fatal(err)
		}
		nd.r = r
	}
	shutdown := func(nd *node) {
		if nd.r != nil {
			_ = nd.r.Shutdown().Error()
			nd.r = nil
		}
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			shutdown(nd)
			_ = nd.trans.Close()
		}
	})
	leader := func() *node {
		for _, nd := range nodes {
			if nd.r != nil && nd.r.State() == raft.Leader {
				return nd
			}
		}
		return nil
	}
	// apply retries through leader changes. A command whose outcome was
	// ambiguous (leadership lost mid-commit) may be applied twice, so the
	// checks below compare nodes with each other exactly and with the
	// intended commands after collapsing repeats.
	apply := func(cmds [][]byte) {
		t.Helper()
		for _, c := range cmds {
			deadline := time.Now().Add(20 * time.Second)
			for {
				var err error
				if l := leader(); l == nil {
					err = raft.ErrNotLeader
				} else {
					err = l.r.Apply(c, 5*time.Second).Error()
				}
				if err == nil {
					break
				}
				if !errors.Is(err, raft.ErrLeadershipLost) && !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrEnqueueTimeout) {
					t.Fatalf("apply %s: %v", c, err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("apply %s: no stable leader: %v", c, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	// check waits for every running node to hold the same FSM contents, which
	// must be want once repeats are collapsed.
	check := func(want [][]byte) {
		t.Helper()
		var ref *node
		for _, nd := range nodes {
			if nd.r == nil {
				continue
			}
			if ref == nil {
				ref = nd
				waitFor(t, nd.id+" to apply everything", func() bool {
					return reflect.DeepEqual(dedup(nd.fsm.snapshot()), want)
				})
				continue
			}
			waitFor(t, nd.id+" to match "+ref.id, func() bool {
				return reflect.DeepEqual(nd.fsm.snapshot(), ref.fsm.snapshot())
			})
		}
	}

	waitFor(t, "a leader", func() bool { return leader() != nil })
	apply(commands(0, 25))
	check(commands(0, 25))

	// Stop the leader; the others elect a new one and keep going.
	old := leader()
	shutdown(old)
	for _, nd := range nodes {
		if nd != old {
			nd.trans.Disconnect(old.trans.LocalAddr())
		}
	}
	waitFor(t, "a new leader", func() bool { return leader() != nil })
	apply(commands(25, 30))
	check(commands(0, 30))
	for _, nd := range nodes {
		if nd.r == nil {
			continue
		}
		var last raft.Log
		idx, _ := nd.store.LastIndex()
		if err := nd.store.GetLog(idx, &last); err != nil {
			t.Fatalf("%s: GetLog(LastIndex=%d): %v", nd.id, idx, err)
		}
	}
}

// dedup collapses consecutive repeats.
func dedup(in [][]byte) [][]byte {
	var out [][]byte
	for _, b := range in {
		if len(out) == 0 || !bytes.Equal(out[len(out)-1], b) {
			out = append(out, b)
		}
	}
	return out
}
