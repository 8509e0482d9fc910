package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Topic configs (topicconfig/defs.go holds their definitions).
const (
	ConfigEnabled       = "iceberg.enabled"
	ConfigMode          = "iceberg.mode"
	ConfigPartitionSpec = "iceberg.partition_spec"
	ConfigInvalidAction = "iceberg.invalid_record_action"
)

// Mode names and invalid-record actions.
const (
	ModeKeyValue = "key_value"

	ActionDLQ  = "dlq_table"
	ActionDrop = "drop"
)

// MetaColumn is the struct column every layout starts with.
const MetaColumn = "aerostream"

// MetaField is the aerostream struct column: partition, offset,
// timestamp, headers and key. Field ids are reassigned when a table is
// created; rows are always built for the table's own schema.
func MetaField(id int) iceberg.NestedField {
	return iceberg.NestedField{ID: id, Name: MetaColumn, Required: true, Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: id + 1, Name: "partition", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		{ID: id + 2, Name: "offset", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: id + 3, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		{ID: id + 4, Name: "headers", Required: false, Type: &iceberg.ListType{
			ElementID: id + 6, ElementRequired: true,
			Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: id + 7, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
				{ID: id + 8, Name: "value", Type: iceberg.PrimitiveTypes.Binary, Required: false},
			}},
		}},
		{ID: id + 5, Name: "key", Type: iceberg.PrimitiveTypes.Binary, Required: false},
	}}}
}

// metaFieldIDs is how many ids MetaField(id) takes.
const metaFieldIDs = 9

// KeyValueSchema is the key_value layout: aerostream, then value binary.
func KeyValueSchema() *iceberg.Schema {
	return iceberg.NewSchema(0, MetaField(1),
		iceberg.NestedField{ID: 1 + metaFieldIDs, Name: "value", Type: iceberg.PrimitiveTypes.Binary, Required: false})
}

func init() {
	RegisterMode(ModeKeyValue, func(ModeContext) (Mode, error) { return keyValue{}, nil })
}

// keyValue is the default mode: the value's bytes as they are.
type keyValue struct{}

func (keyValue) Schema(context.Context) (*iceberg.Schema, error) { return KeyValueSchema(), nil }

func (keyValue) NewBuilder(sc *iceberg.Schema, mem memory.Allocator) (RowBuilder, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(mem, as)
	meta, err := NewMetaBuilder(rb, 0)
	if err != nil {
		rb.Release()
		return nil, err
	}
	i := as.FieldIndices("value")
	if len(i) != 1 {
		rb.Release()
		return nil, fmt.Errorf("%w: key_value table has no value column", ErrConfig)
	}
	vb, ok := rb.Field(i[0]).(*array.BinaryBuilder)
	if !ok {
		rb.Release()
		return nil, fmt.Errorf("%w: key_value table's value column is %s, not binary", ErrConfig, as.Field(i[0]).Type)
	}
	return &kvBuilder{rb: rb, meta: meta, value: vb}, nil
}

type kvBuilder struct {
	rb      *array.RecordBuilder
	meta    *MetaBuilder
	value   *array.BinaryBuilder
	rows    int
	reserve stepReserve
}

func (b *kvBuilder) Append(r *Record) error {
	b.reserve.apply()
	b.meta.Append(r)
	if r.Value == nil {
		b.value.AppendNull()
	} else {
		b.value.Append(r.Value)
	}
	b.rows++
	return nil
}

func (b *kvBuilder) Rows() int { return b.rows }

func (b *kvBuilder) Build() arrow.RecordBatch {
	b.rows = 0
	rec := b.rb.NewRecordBatch()
	b.reserve.built(b.rb, rec)
	return rec
}

func (b *kvBuilder) Release() { b.rb.Release() }

// MetaBuilder appends the aerostream struct column of a row; the schema
// modes share it.
type MetaBuilder struct {
	st        *array.StructBuilder
	partition *array.Int32Builder
	offset    *array.Int64Builder
	ts        *array.TimestampBuilder
	headers   *array.ListBuilder
	hdr       *array.StructBuilder
	hkey      *array.StringBuilder
	hval      *array.BinaryBuilder
	key       *array.BinaryBuilder
}

// NewMetaBuilder binds to column col of rb, which must be the aerostream
// struct as SchemaToArrowSchema renders MetaField.
func NewMetaBuilder(rb *array.RecordBuilder, col int) (mb *MetaBuilder, err error) {
	defer func() {
		if r := recover(); r != nil {
			mb, err = nil, fmt.Errorf("%w: column %d is not the aerostream struct: %v", ErrConfig, col, r)
		}
	}()
	st := rb.Field(col).(*array.StructBuilder)
	lb := st.FieldBuilder(3).(*array.ListBuilder)
	hdr := lb.ValueBuilder().(*array.StructBuilder)
	return &MetaBuilder{
		st: st, partition: st.FieldBuilder(0).(*array.Int32Builder), offset: st.FieldBuilder(1).(*array.Int64Builder),
		ts: st.FieldBuilder(2).(*array.TimestampBuilder), headers: lb, hdr: hdr,
		hkey: hdr.FieldBuilder(0).(*array.StringBuilder), hval: hdr.FieldBuilder(1).(*array.BinaryBuilder),
		key: st.FieldBuilder(4).(*array.BinaryBuilder),
	}, nil
}

// Append adds r's partition, offset, timestamp, headers and key.
func (m *MetaBuilder) Append(r *Record) {
	m.st.Append(true)
	m.partition.Append(r.Partition)
	m.offset.Append(r.Offset)
	m.ts.Append(arrow.Timestamp(r.Timestamp * 1000))
	m.headers.Append(true)
	for i := range r.Headers {
		h := &r.Headers[i]
		m.hdr.Append(true)
		m.hkey.Append(h.Key)
		if h.Value == nil {
			m.hval.AppendNull()
		} else {
			m.hval.Append(h.Value)
		}
	}
	if r.Key == nil {
		m.key.AppendNull()
	} else {
		m.key.Append(r.Key)
	}
}
