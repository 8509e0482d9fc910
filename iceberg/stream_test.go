package iceberg

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The committer builds a step's rows once the writer has released the
// last ones: that must happen when the rows are encoded, not when the file
// is closed, or every step would wait out waitWritten's limit.
func TestWriterReleasesRowsOfAStep(t *testing.T) {
	cat := openTestCatalog(t, testConfig(t.TempDir()))
	tbl, err := ensureTable(context.Background(), cat, DefaultNamespace, "release", "release", KeyValueSchema(), DefaultPartitionSpec)
	if err != nil {
		t.Fatal(err)
	}
	mem := &rowMemory{Allocator: memory.DefaultAllocator}
	rec := buildRows(t, tbl, mem, 5000)
	if mem.held.Load() == 0 {
		t.Fatal("rows built with rowMemory hold no bytes: it counts nothing")
	}
	s := writeStep(t, tbl, rec)
	defer s.abort()
	mem.waitWritten(context.Background(), time.Minute)
	if held := mem.held.Load(); held != 0 {
		t.Fatalf("%d bytes of the step still held after the wait: the writer keeps the rows until the file closes", held)
	}
	if _, err := s.finish(); err != nil {
		t.Fatal(err)
	}
}
