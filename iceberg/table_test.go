package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// buildRows builds n key_value rows with mem. Keys and values take ten
// values, which a dictionary would encode.
func buildRows(t *testing.T, tbl *table.Table, mem memory.Allocator, n int) arrow.RecordBatch {
	t.Helper()
	rows, err := keyValue{}.NewBuilder(tbl.Schema(), mem)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	now := time.Now().UnixMilli()
	for i := range n {
		r := Record{Partition: 0, Offset: int64(i), Timestamp: now, Key: fmt.Appendf(nil, "k%d", i%10), Value: fmt.Appendf(nil, "value-%d", i%10)}
		if err := rows.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	return rows.Build()
}

// writeStep streams rec to a data file of tbl and returns the stream, not
// yet finished.
func writeStep(t *testing.T, tbl *table.Table, rec arrow.RecordBatch) *fileStream {
	t.Helper()
	ctx := context.Background()
	s := newFileStream(ctx, tbl, rec.Schema())
	if err := s.send(ctx, rec); err != nil {
		t.Fatal(err)
	}
	return s
}

// Data files are written with writeProps: zstd, and no dictionary on the
// value column; a table made before them gets those it lacks, and keeps a
// value someone set.
func TestWritePropsReachTheFiles(t *testing.T) {
	ctx := context.Background()
	cat := openTestCatalog(t, testConfig(t.TempDir()))
	if err := cat.CreateNamespace(ctx, []string{DefaultNamespace}, nil); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "7"}
	if _, err := cat.CreateTable(ctx, table.Identifier{DefaultNamespace, "older"}, KeyValueSchema(), catalog.WithProperties(old)); err != nil {
		t.Fatal(err)
	}
	tbl, err := ensureTable(ctx, cat, DefaultNamespace, "older", "older", KeyValueSchema(), DefaultPartitionSpec)
	if err != nil {
		t.Fatal(err)
	}
	props := tbl.Properties()
	if got := props["write.parquet.compression-level"]; got != "7" {
		t.Errorf("compression level set before: %q, want 7 kept", got)
	}
	if got := props[noDictionary+"value"]; got != "false" {
		t.Errorf("%svalue = %q on an older table, want false added", noDictionary, got)
	}

	tbl, err = ensureTable(ctx, cat, DefaultNamespace, "fresh", "fresh", KeyValueSchema(), DefaultPartitionSpec)
	if err != nil {
		t.Fatal(err)
	}
	s := writeStep(t, tbl, buildRows(t, tbl, memory.DefaultAllocator, 1000))
	files, err := s.finish()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("%d data files, want 1", len(files))
	}
	rdr, err := file.OpenParquetFile(strings.TrimPrefix(files[0].FilePath(), "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	rg := rdr.MetaData().RowGroup(0)
	seen := 0
	for i := range rg.NumColumns() {
		cc, err := rg.ColumnChunk(i)
		if err != nil {
			t.Fatal(err)
		}
		path := cc.PathInSchema().String()
		if cc.Compression() != compress.Codecs.Zstd {
			t.Errorf("column %s: compression %s, want zstd", path, cc.Compression())
		}
		if path != "value" && path != "aerostream.key" {
			continue
		}
		seen++
		if cc.HasDictionaryPage() || slices.Contains(cc.Encodings(), parquet.Encodings.RLEDict) ||
			slices.Contains(cc.Encodings(), parquet.Encodings.PlainDict) {
			t.Errorf("column %s: dictionary encoded (%v), want plain", path, cc.Encodings())
		}
	}
	if seen != 2 {
		t.Errorf("found %d of the columns value and aerostream.key", seen)
	}
}
