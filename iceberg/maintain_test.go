package iceberg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

var maintSchema = iceberggo.NewSchema(0,
	iceberggo.NestedField{ID: 1, Name: "id", Type: iceberggo.PrimitiveTypes.Int64, Required: true},
	iceberggo.NestedField{ID: 2, Name: "name", Type: iceberggo.PrimitiveTypes.String},
	iceberggo.NestedField{ID: 3, Name: "p", Type: iceberggo.PrimitiveTypes.Int32, Required: true},
)

// maintTable is a table identity-partitioned on p in an embedded SQL
// catalog, with its warehouse folder.
func maintTable(t *testing.T) (*table.Table, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	cat, err := catalog.Load(ctx, "test", iceberggo.Properties{
		"uri":             "file://" + filepath.Join(dir, "catalog.db"),
		sqlcat.DriverKey:  sqliteshim.ShimName,
		sqlcat.DialectKey: string(sqlcat.SQLite),
		"type":            "sql",
		"warehouse":       "file://" + wh,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, ok := cat.(catalog.Closer); ok {
			_ = c.Close()
		}
	})
	if err := cat.CreateNamespace(ctx, table.Identifier{"aerostream"}, nil); err != nil {
		t.Fatal(err)
	}
	spec := iceberggo.NewPartitionSpec(iceberggo.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "p", Transform: iceberggo.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"aerostream", "t"}, maintSchema, catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	return tbl, wh
}

// appendRows commits rows ids [from, from+n) spread over partitions 0 and
// 1, as a translation commit would, with offsets {"0": from+n}.
func appendRows(t *testing.T, tbl *table.Table, from, n int) *table.Table {
	t.Helper()
	asc, err := table.SchemaToArrowSchema(maintSchema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", i))
		b.Field(2).(*array.Int32Builder).Append(int32(i % 2))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(asc, []arrow.RecordBatch{rec})
	defer at.Release()
	out, err := tbl.AppendTable(context.Background(), at, 1<<16,
		iceberggo.Properties{SummaryOffsets: Offsets{0: int64(from + n)}.String()})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rows reads the table's rows as "id/name/p" strings, sorted.
func rows(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []string
	tr := array.NewTableReader(at, 1<<16)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		names := rec.Column(1).(*array.String)
		ps := rec.Column(2).(*array.Int32)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%d/%s/%d", ids.Value(i), names.Value(i), ps.Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

func dataFiles(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		out = append(out, task.File.FilePath())
	}
	return out
}

func offsetsOf(t *testing.T, tbl *table.Table) string {
	t.Helper()
	return tbl.CurrentSnapshot().Summary.Properties[SummaryOffsets]
}

// TestMaintainCompacts: ten commits leave ten small files in each of two
// table partitions; Maintain rewrites them into one file per partition,
// the rows stay the same, and the new snapshot carries the offsets.
func TestMaintainCompacts(t *testing.T) {
	tbl, _ := maintTable(t)
	for i := range 10 {
		tbl = appendRows(t, tbl, i*100, 100)
	}
	want := rows(t, tbl)
	if n := len(dataFiles(t, tbl)); n != 20 {
		t.Fatalf("%d data files before, want 20", n)
	}
	wantOffsets := offsetsOf(t, tbl)
	before := tbl.CurrentSnapshot().SnapshotID

	out, err := Maintain(context.Background(), tbl, MaintainOptions{TargetFileSize: 1 << 20, NoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(dataFiles(t, out)); n != 2 {
		t.Errorf("%d data files after compaction, want 2 (one per partition)", n)
	}
	if got := rows(t, out); !slices.Equal(got, want) {
		t.Errorf("rows changed: %d rows, want %d", len(got), len(want))
	}
	snap := out.CurrentSnapshot()
	if snap.SnapshotID == before || snap.Summary.Operation != table.OpReplace {
		t.Errorf("current snapshot %d (%s), want a new replace snapshot", snap.SnapshotID, snap.Summary.Operation)
	}
	if got := offsetsOf(t, out); got != wantOffsets || got != `{"0":1000}` {
		t.Errorf("offsets after compaction %q, want %q", got, wantOffsets)
	}

	// Nothing small is left, so a second run commits nothing.
	again, err := Maintain(context.Background(), out, MaintainOptions{TargetFileSize: 1 << 20, NoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.CurrentSnapshot().SnapshotID != snap.SnapshotID {
		t.Errorf("second Maintain made snapshot %d", again.CurrentSnapshot().SnapshotID)
	}
}

// TestMaintainLeavesFewFilesAlone: below MinInputFiles small files per
// partition there is nothing worth a rewrite.
func TestMaintainLeavesFewFilesAlone(t *testing.T) {
	tbl, _ := maintTable(t)
	for i := range 3 {
		tbl = appendRows(t, tbl, i*10, 10)
	}
	before := tbl.CurrentSnapshot().SnapshotID
	out, err := Maintain(context.Background(), tbl, MaintainOptions{TargetFileSize: 1 << 20, NoExpiry: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.CurrentSnapshot().SnapshotID != before || len(dataFiles(t, out)) != 6 {
		t.Errorf("Maintain rewrote %d files under MinInputFiles", len(dataFiles(t, out)))
	}
}

// TestMaintainExpires: expiry keeps the newest KeepSnapshots snapshots,
// makes no snapshot of its own, and so keeps the current offsets.
func TestMaintainExpires(t *testing.T) {
	tbl, _ := maintTable(t)
	for i := range 8 {
		tbl = appendRows(t, tbl, i*10, 10)
	}
	want := rows(t, tbl)
	cur := tbl.CurrentSnapshot().SnapshotID
	olderThanAMillisecond(tbl)
	out, err := Maintain(context.Background(), tbl, MaintainOptions{KeepSnapshots: 3, MaxSnapshotAge: time.Millisecond, NoCompaction: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata().Snapshots()); n != 3 {
		t.Errorf("%d snapshots after expiry, want 3", n)
	}
	if out.CurrentSnapshot().SnapshotID != cur {
		t.Errorf("current snapshot moved from %d to %d", cur, out.CurrentSnapshot().SnapshotID)
	}
	if got := offsetsOf(t, out); got != `{"0":80}` {
		t.Errorf("offsets %q after expiry", got)
	}
	if got := rows(t, out); !slices.Equal(got, want) {
		t.Errorf("rows changed: %d, want %d", len(got), len(want))
	}
}

// TestMaintainDeletesReplacedFiles: after compaction and the expiry of
// the snapshots that still referenced them, the small files are gone from
// the warehouse, and the table reads the same.
func TestMaintainDeletesReplacedFiles(t *testing.T) {
	tbl, _ := maintTable(t)
	for i := range 6 {
		tbl = appendRows(t, tbl, i*50, 50)
	}
	want := rows(t, tbl)
	small := dataFiles(t, tbl)
	olderThanAMillisecond(tbl)
	out, err := Maintain(context.Background(), tbl, MaintainOptions{TargetFileSize: 1 << 20, KeepSnapshots: 1, MaxSnapshotAge: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
	for _, f := range small {
		if _, err := os.Stat(strings.TrimPrefix(f, "file://")); !os.IsNotExist(err) {
			t.Errorf("replaced file %s still there (%v)", f, err)
		}
	}
	if got := rows(t, out); !slices.Equal(got, want) {
		t.Errorf("rows changed: %d, want %d", len(got), len(want))
	}
	if got := offsetsOf(t, out); got != `{"0":300}` {
		t.Errorf("offsets %q", got)
	}
}

// olderThanAMillisecond returns once every snapshot of tbl is more than a
// millisecond old, so that an expiry with a 1 ms age limit sees them all
// as old.
func olderThanAMillisecond(tbl *table.Table) {
	for time.Now().UnixMilli() <= tbl.CurrentSnapshot().TimestampMs+1 {
		runtime.Gosched()
	}
}

func TestMaintainEmptyTable(t *testing.T) {
	tbl, _ := maintTable(t)
	out, err := Maintain(context.Background(), tbl, MaintainOptions{})
	if err != nil || out.CurrentSnapshot() != nil {
		t.Errorf("Maintain(empty) = %v, %v", out.CurrentSnapshot(), err)
	}
}

// TestMaintainLeavesBiggerFilesAlone: a later run merges the new small
// files of a commit's size and leaves the files an earlier run wrote,
// which are a size class up, as they are; rewriting them every run made
// compaction's cost grow with the hour's data.
func TestMaintainLeavesBiggerFilesAlone(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t)
	for i := range 10 {
		tbl = appendRows(t, tbl, i*100, 100)
	}
	var biggest int64
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		biggest = max(biggest, task.File.FileSizeBytes())
	}
	// Classes from just above a commit's file: the merged files land in
	// a bigger one.
	opts := MaintainOptions{TargetFileSize: 1 << 20, NoExpiry: true, tierBase: biggest + 1}
	tbl, err = Maintain(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	merged := dataFiles(t, tbl)
	if len(merged) != 2 {
		t.Fatalf("%d data files after the first compaction, want 2", len(merged))
	}
	for i := 10; i < 15; i++ {
		tbl = appendRows(t, tbl, i*100, 100)
	}
	want := rows(t, tbl)
	out, err := Maintain(ctx, tbl, opts)
	if err != nil {
		t.Fatal(err)
	}
	after := dataFiles(t, out)
	for _, f := range merged {
		if !slices.Contains(after, f) {
			t.Errorf("file %s of the first compaction was rewritten", f)
		}
	}
	if len(after) != 4 {
		t.Errorf("%d data files after the second compaction, want 4 (the two merged before, two new)", len(after))
	}
	if got := rows(t, out); !slices.Equal(got, want) {
		t.Errorf("rows changed: %d rows, want %d", len(got), len(want))
	}
	if got := offsetsOf(t, out); got != `{"0":1500}` {
		t.Errorf("offsets after compaction %q, want {\"0\":1500}", got)
	}
}

func TestChunkTasks(t *testing.T) {
	tasks := make([]table.FileScanTask, 23)
	var sizes []int
	for _, c := range chunkTasks(tasks, 5, 10) {
		sizes = append(sizes, len(c))
	}
	if !slices.Equal(sizes, []int{10, 13}) {
		t.Errorf("chunks of 23 tasks, 5 to 10 each: %v, want [10 13]", sizes)
	}
	if sizeTier(100, 256) != 0 || sizeTier(256, 256) != 1 || sizeTier(1023, 256) != 1 || sizeTier(1024, 256) != 2 {
		t.Errorf("sizeTier classes wrong")
	}
}
