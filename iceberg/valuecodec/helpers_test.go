package valuecodec

import (
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// frame prefixes payload with Confluent's magic byte and id.
func frame(id int32, payload []byte) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

// builders makes Arrow builders for fields, as a table writer would
// from the table's schema.
type testBatch struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	cols   *Columns
}

func newBatch(t testing.TB, fields []iceberg.NestedField) *testBatch {
	t.Helper()
	as, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, fields...), nil, true, false)
	if err != nil {
		t.Fatalf("SchemaToArrowSchema: %v", err)
	}
	rb := array.NewRecordBuilder(memory.DefaultAllocator, as)
	cols, err := NewColumns(as.Fields(), rb.Fields())
	if err != nil {
		t.Fatal(err)
	}
	return &testBatch{schema: as, rb: rb, cols: cols}
}

// record finishes the batch; the caller releases it.
func (b *testBatch) record() arrow.RecordBatch {
	rec := b.rb.NewRecordBatch()
	b.rb.Release()
	return rec
}

// column returns the named column of rec.
func column(t testing.TB, rec arrow.RecordBatch, name string) arrow.Array {
	t.Helper()
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q in %s", name, rec.Schema())
	}
	return rec.Column(idx[0])
}

// fieldTypes maps each top-level column to its Iceberg type's string.
func fieldTypes(fields []iceberg.NestedField) map[string]string {
	out := map[string]string{}
	for _, f := range fields {
		out[f.Name] = f.Type.String()
	}
	return out
}

func decodeFramed(t testing.TB, c *Codec, value []byte) Row {
	t.Helper()
	id, payload, err := SplitFrame(value)
	if err != nil {
		t.Fatalf("SplitFrame: %v", err)
	}
	if id != c.ID() {
		t.Fatalf("frame id %d, codec %d", id, c.ID())
	}
	row, err := c.Decode(payload)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return row
}
