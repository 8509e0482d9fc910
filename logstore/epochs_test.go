package logstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

func TestEpochCheckpointRoundTrip(t *testing.T) {
	for _, entries := range [][]epochEntry{nil, {{0, 0}}, {{1, 0}, {4, 10}, {5, 10}, {9, 1 << 40}}} {
		got, err := decodeEpochs(encodeEpochs(entries))
		if err != nil || !slices.Equal(got, entries) && len(got)+len(entries) > 0 {
			t.Fatalf("%v: decoded %v, %v", entries, got, err)
		}
	}
	for _, bad := range []string{"", "0\n", "1\n0\n", "0\n1\n", "0\n2\n1 0\n", "0\n1\n1 0", "0\n2\n2 0\n1 5\n",
		"0\n2\n1 5\n2 4\n", "0\n1\n-1 0\n", "0\n1\n1  0\n", "0\n1\nx 0\n", "0\n-1\n"} {
		if _, err := decodeEpochs([]byte(bad)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// FuzzDecodeEpochs: the checkpoint decoder never panics, and what it
// accepts is well formed and survives an encode and decode unchanged.
func FuzzDecodeEpochs(f *testing.F) {
	f.Add(encodeEpochs([]epochEntry{{1, 0}, {3, 100}}))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\n2147483647 9223372036854775807\n"))
	f.Add([]byte("0\n1000000000\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeEpochs(b)
		if err != nil {
			return
		}
		for i, e := range entries {
			if e.epoch < 0 || e.start < 0 || i > 0 && (e.epoch <= entries[i-1].epoch || e.start < entries[i-1].start) {
				t.Fatalf("accepted %v", entries)
			}
		}
		again, err := decodeEpochs(encodeEpochs(entries))
		if err != nil || !slices.Equal(again, entries) {
			t.Fatalf("round trip of %v: %v, %v", entries, again, err)
		}
	})
}

// logBuffer is a logger whose lines a test can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestEpochCacheRecovery: the cache survives a restart; one whose
// checkpoint a crash lost, or that is corrupt, is rebuilt from the epochs
// in the log's batches; entries past the log end are dropped.
func TestEpochCacheRecovery(t *testing.T) {
	a, b := newReplNode(t, storeA, nil), newReplNode(t, storeB, nil)
	ctx := context.Background()
	b.follow(t, storeA, 1)
	for epoch := int32(1); epoch <= 3; epoch++ {
		if epoch > 1 {
			b.follow(t, storeA, epoch)
		}
		a.lead(t, epoch, []int32{storeA, storeB}, 1)
		for i := 0; i < 2; i++ {
			produceAcks1(t, a.Store, logtest.Filler(1, 2, 20, byte(i)))
		}
		for b.info(t).LogEndOffset < a.info(t).LogEndOffset {
			mustReplicate(t, a, b, epoch)
		}
	}
	want := []EpochEnd{{-1, -1}, {1, 4}, {2, 8}, {3, 12}, {3, 12}}
	check := func(what string) {
		t.Helper()
		for e, w := range want {
			if got, err := b.OffsetForLeaderEpoch(ctx, replTopic, 0, int32(e)); err != nil || got != w {
				t.Fatalf("%s: epoch %d: %+v, %v; want %+v", what, e, got, err, w)
			}
		}
	}
	check("before restart")
	path := epochCheckpointPath(partitionDir(b.dir, replTopic, 0))
	b.testStore = b.reopen(t)
	check("after restart")
	b.testStore.close(t)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	b.testStore = openTestStore(t, b.dir, nil)
	check("checkpoint lost")

	// A corrupt checkpoint: an error naming the file, and the cache is
	// rebuilt.
	b.testStore.close(t)
	if err := os.WriteFile(path, []byte("0\n7\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	b.testStore = openTestStore(t, b.dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	check("checkpoint corrupt")
	if !strings.Contains(logs.String(), path) || !strings.Contains(logs.String(), "leader-epoch checkpoint") {
		t.Fatalf("no error naming %s in the log:\n%s", path, logs.String())
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, encodeEpochs([]epochEntry{{1, 0}, {2, 4}, {3, 8}})) {
		t.Fatalf("checkpoint not rewritten: %q, %v", data, err)
	}

	// Entries past the log end (a truncation a crash interrupted) go.
	b.testStore.close(t)
	if err := os.WriteFile(path, encodeEpochs([]epochEntry{{1, 0}, {2, 4}, {3, 8}, {4, 12}, {6, 40}}), 0o644); err != nil {
		t.Fatal(err)
	}
	b.testStore = openTestStore(t, b.dir, nil)
	want = []EpochEnd{{-1, -1}, {1, 4}, {2, 8}, {3, 12}, {4, 12}, {4, 12}, {4, 12}}
	check("entries past the log end")
}

// TestEpochZeroRecovered: the first leader's epoch is 0, which is also
// what a log without roles stamps. A cluster store (RequireRole) that lost
// the checkpoint takes epoch 0 back from the log; a single-node one keeps
// no epochs for it.
func TestEpochZeroRecovered(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			a := newReplNode(t, storeA, func(o *Options) { o.RequireRole = cluster })
			ctx := context.Background()
			a.lead(t, 0, []int32{storeA}, 1)
			produceAcks1(t, a.Store, logtest.Filler(1, 3, 10, 1))
			a.testStore.close(t)
			if err := os.Remove(epochCheckpointPath(partitionDir(a.dir, replTopic, 0))); err != nil {
				t.Fatal(err)
			}
			a.testStore = openTestStore(t, a.dir, func(o *Options) { o.RequireRole = cluster })
			want := EpochEnd{-1, -1}
			if cluster {
				want = EpochEnd{0, 3}
			}
			if got, err := a.OffsetForLeaderEpoch(ctx, replTopic, 0, 5); err != nil || got != want {
				t.Fatalf("epoch 5 after losing the checkpoint: %+v, %v; want %+v", got, err, want)
			}
		})
	}
}
