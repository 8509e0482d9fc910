package iceberg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// errInjected is the fault faultCatalog answers a commit with.
var errInjected = errors.New("injected: catalog commit failed")

// faultCatalog is a catalog whose next translation commit (a snapshot
// carrying aerostream.offsets) fails once armed: before the catalog
// applies it (the data files and manifests are written, no snapshot
// refers to them) or after (the snapshot is in, the committer hears an
// error, as on a timeout). hook runs at the fault, inside the commit:
// the test kills the committer there.
type faultCatalog struct {
	catalog.Catalog

	mu struct {
		sync.Mutex
		armed bool
		after bool
		hook  func()
	}
	fired chan struct{}
}

var _ table.CatalogIO = (*faultCatalog)(nil)

func newFaultCatalog(inner catalog.Catalog) *faultCatalog {
	return &faultCatalog{Catalog: inner, fired: make(chan struct{})}
}

func (f *faultCatalog) arm(after bool, hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.armed, f.mu.after, f.mu.hook = true, after, hook
}

// wrap makes tables commit through f.
func (f *faultCatalog) wrap(t *table.Table) *table.Table {
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, f)
}

func (f *faultCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	t, err := f.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return f.wrap(t), nil
}

func (f *faultCatalog) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	t, err := f.Catalog.CreateTable(ctx, ident, sc, opts...)
	if err != nil {
		return nil, err
	}
	return f.wrap(t), nil
}

func (f *faultCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	f.mu.Lock()
	fault := f.mu.armed && translationCommit(updates)
	after, hook := f.mu.after, f.mu.hook
	if fault {
		f.mu.armed = false
	}
	f.mu.Unlock()
	if !fault {
		return f.Catalog.CommitTable(ctx, ident, reqs, updates)
	}
	defer close(f.fired)
	if after {
		if _, _, err := f.Catalog.CommitTable(ctx, ident, reqs, updates); err != nil {
			return nil, "", err
		}
	}
	if hook != nil {
		hook()
	}
	return nil, "", errInjected
}

// translationCommit reports whether updates add a snapshot carrying the
// offsets summary.
func translationCommit(updates []table.Update) bool {
	for _, u := range updates {
		if u.Action() != table.UpdateAddSnapshot {
			continue
		}
		if b, err := json.Marshal(u); err == nil && bytes.Contains(b, []byte(SummaryOffsets)) {
			return true
		}
	}
	return false
}

// parquetFiles counts the Parquet files under dir.
func parquetFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// runManager runs a manager committing topic through cat until ctx ends;
// the function returned waits for it to stop.
func runManager(t *testing.T, ctx context.Context, cat catalog.Catalog, cfg Config, l *testLog, topic string, parts int32) (wait func()) {
	t.Helper()
	m := NewManager(ManagerOptions{Config: cfg, Catalog: cat, Logger: quiet()})
	m.Update([]TopicState{{Name: topic, Partitions: parts, Configs: map[string]string{ConfigEnabled: "true"}, Commit: true}})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx, l.backend) }()
	wait = func() { <-done }
	t.Cleanup(func() { cancel(); wait() })
	return wait
}

// TestCommitFaultsExactlyOnce: a translation commit fails inside the
// catalog, before or after the catalog applied it, with the data files
// already written; the committer is killed right there (its process gone:
// a new one resumes) or carries on (it retries from the table in the same
// process). Either way the table ends up holding every record of the log
// exactly once: no duplicate from a commit that landed unheard, no gap
// from one that did not land.
func TestCommitFaultsExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		after, kill bool
	}{{false, true}, {true, true}, {false, false}, {true, false}} {
		when := map[bool]string{false: "before", true: "after"}[tc.after]
		how := map[bool]string{false: "retried", true: "killed"}[tc.kill]
		t.Run(fmt.Sprintf("%s commit, %s", when, how), func(t *testing.T) {
			const topic, parts = "faults", int32(2)
			l := newTestLog(t, topic, parts)
			dir := t.TempDir()
			cfg := testConfig(dir)
			cfg.MaintainInterval = time.Hour // only translation commits
			inner := openTestCatalog(t, cfg)
			fc := newFaultCatalog(inner)

			l.produce(t, topic, parts, 100, "a")
			ctx, kill := context.WithCancel(context.Background())
			defer kill()
			hook := func() {}
			if tc.kill {
				// Inside the commit, as a kill -9 would land: the
				// committer never runs another step.
				hook = kill
			}
			fc.arm(tc.after, hook)
			wait := runManager(t, ctx, fc, cfg, l, topic, parts)
			<-fc.fired

			if tc.kill {
				wait()
				tbl, err := inner.LoadTable(context.Background(), table.Identifier{DefaultNamespace, topic})
				if err != nil {
					t.Fatal(err)
				}
				got, err := TableOffsets(tbl.Metadata())
				if err != nil {
					t.Fatal(err)
				}
				want := Offsets{}
				if tc.after {
					want = offsetsAll(parts, 100)
				}
				if got.String() != want.String() {
					t.Fatalf("offsets after the killed commit %s, want %s", got, want)
				}
				// The fault came after the data files were written:
				// before the catalog's commit they are orphans.
				if n := parquetFiles(t, filepath.Join(dir, "iceberg", "warehouse")); n == 0 {
					t.Errorf("no data file written before the fault")
				}
				runManager(t, context.Background(), inner, cfg, l, topic, parts) // the restart
			}
			l.produce(t, topic, parts, 50, "b")
			tbl := waitOffsets(t, inner, topic, offsetsAll(parts, 150))
			counts, values := scanRows(t, tbl)
			checkExact(t, counts, parts, 150)
			if v := values[[2]int64{1, 120}]; v != "b-1-20" {
				t.Errorf("partition 1 offset 120 has value %q, want b-1-20", v)
			}
		})
	}
}
