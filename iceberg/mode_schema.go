package iceberg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/aerostream/aerostream/iceberg/valuecodec"
)

// The schema modes turn a topic's values into typed columns with the
// schemas of the registry subject <topic>-value (valuecodec maps and
// decodes them):
//
//   - value_schema_id_prefix: every value carries Confluent's framing
//     (magic byte 0, the 4-byte schema id, for Protobuf the message
//     indexes), and decodes with the schema of its id, which must be a
//     version of <topic>-value. A value without the framing, or with an
//     id that is no version of the subject, goes to the DLQ table.
//   - value_schema_latest: values decode with the subject's latest
//     version, looked up again before each step's records are decoded
//     (Refresh), so a version registered before a record was produced
//     decodes it. A value that carries the framing with an id that is a
//     version of the subject decodes with that version (the schema it
//     was written with, which Avro needs); any other value is the bare
//     payload of the latest version (for Protobuf, its first message,
//     without message indexes).
//
// Schema is the metadata column and the union, by name, of the columns of
// every live version of the subject, oldest first (valuecodec.Merge), and
// the committer evolves the table to it (valuecodec.Evolve) at the start
// of each session, so a value of any version fits. A value of a version
// registered after that makes Append (or Refresh) fail with
// ErrSchemaChanged; the session restarts, and the new Schema covers it. A version that cannot
// merge (a column changing type other than by widening) sends its
// records to the DLQ table. A tombstone is a row whose value columns are
// all null.

// Schema mode names.
const (
	ModeValueSchemaIDPrefix = "value_schema_id_prefix"
	ModeValueSchemaLatest   = "value_schema_latest"
)

// registryTimeout bounds one registry lookup made while appending a row
// (RowBuilder.Append takes no context).
const registryTimeout = 30 * time.Second

// SchemaSource is what ModeContext.Registry holds for the schema modes:
// the registry's schemas with their references resolved. A schema, id or
// subject that does not exist is an error wrapping
// valuecodec.ErrUnknownSchema; any other error is the registry failing,
// and the translation retries.
type SchemaSource interface {
	// SchemaByID returns the schema with id.
	SchemaByID(ctx context.Context, id int32) (valuecodec.Schema, error)
	// SubjectSchemas returns the live versions of subject, oldest first.
	SubjectSchemas(ctx context.Context, subject string) ([]valuecodec.Schema, error)
	// SubjectHasID says whether id is a live version of subject.
	SubjectHasID(ctx context.Context, subject string, id int32) (bool, error)
}

// LatestSource is a SchemaSource that answers a subject's latest version
// alone, which value_schema_latest asks before every step; without it the
// mode reads every version (SubjectSchemas).
type LatestSource interface {
	SubjectLatest(ctx context.Context, subject string) (valuecodec.Schema, error)
}

func init() {
	RegisterMode(ModeValueSchemaIDPrefix, func(mc ModeContext) (Mode, error) { return newSchemaMode(mc, false) })
	RegisterMode(ModeValueSchemaLatest, func(mc ModeContext) (Mode, error) { return newSchemaMode(mc, true) })
}

func newSchemaMode(mc ModeContext, latest bool) (Mode, error) {
	src, ok := mc.Registry.(SchemaSource)
	if !ok || src == nil {
		return nil, fmt.Errorf("%w: topic %s: iceberg.mode %s needs the schema registry, and this node has none", ErrModeUnavailable, mc.Topic, mc.Configs[ConfigMode])
	}
	return &schemaMode{
		topic:   mc.Topic,
		subject: mc.Topic + "-value",
		latest:  latest,
		src:     src,
		codecs:  map[int32]*codecEntry{},
	}, nil
}

// schemaMode serves one topic; its committer goroutine is its only user,
// through the mode and the builders it made, so it needs no lock.
type schemaMode struct {
	topic, subject string
	latest         bool
	src            SchemaSource

	// codecs caches what each schema id decodes with, or why its records
	// cannot go into the table.
	codecs map[int32]*codecEntry
	// merged is the metadata column with the union of the value columns
	// of every version seen; nil until the first.
	merged *iceberg.Schema
	// current is the latest usable version's codec (value_schema_latest).
	current *valuecodec.Codec
}

type codecEntry struct {
	codec *valuecodec.Codec
	// bad, when set, is why this id's records go to the DLQ table.
	bad error
}

func (m *schemaMode) Schema(ctx context.Context) (*iceberg.Schema, error) {
	versions, err := m.src.SubjectSchemas(ctx, m.subject)
	if err != nil && !errors.Is(err, valuecodec.ErrUnknownSchema) {
		return nil, fmt.Errorf("topic %s: versions of subject %s: %w", m.topic, m.subject, err)
	}
	m.current = nil
	for _, s := range versions {
		e := m.compile(s)
		if e.bad == nil && (m.merged == nil || !valuecodec.Covers(m.merged, e.codec.Fields())) {
			_ = m.learn(e) // a version that cannot merge is marked bad: its records go to the DLQ
		}
		if e.bad == nil {
			m.current = e.codec
		}
	}
	if m.latest && m.current == nil {
		return nil, fmt.Errorf("%w: topic %s: iceberg.mode %s: subject %s has no version that maps to columns; register the value schema", ErrConfig, m.topic, ModeValueSchemaLatest, m.subject)
	}
	if m.merged == nil {
		// No version yet: the table starts with the metadata column and
		// gains value columns as framed values arrive.
		return iceberg.NewSchema(0, MetaField(1)), nil
	}
	return m.merged, nil
}

// Refresh makes a newly registered latest version the one bare values
// decode with (value_schema_latest; the other mode has nothing to
// refresh). A version whose columns the table lacks is merged in and
// reported as ErrSchemaChanged: the committer evolves the table first.
func (m *schemaMode) Refresh(ctx context.Context) error {
	if !m.latest {
		return nil
	}
	var latest valuecodec.Schema
	if ls, ok := m.src.(LatestSource); ok {
		s, err := ls.SubjectLatest(ctx, m.subject)
		if err != nil {
			return fmt.Errorf("topic %s: latest version of %s: %w", m.topic, m.subject, err)
		}
		latest = s
	} else {
		versions, err := m.src.SubjectSchemas(ctx, m.subject)
		if err != nil {
			return fmt.Errorf("topic %s: versions of %s: %w", m.topic, m.subject, err)
		}
		if len(versions) == 0 {
			return nil
		}
		latest = versions[len(versions)-1]
	}
	if m.current != nil && m.current.ID() == latest.ID {
		return nil
	}
	e := m.compile(latest)
	if e.bad != nil {
		// Bare values keep the last version that maps to columns.
		return nil
	}
	if m.merged == nil || !valuecodec.Covers(m.merged, e.codec.Fields()) {
		if err := m.learn(e); err != nil {
			return nil // marked bad: the same as above
		}
		return fmt.Errorf("%w: topic %s: latest version %d of %s adds columns", ErrSchemaChanged, m.topic, latest.ID, m.subject)
	}
	m.current = e.codec
	return nil
}

// compile returns id's entry, compiling s the first time.
func (m *schemaMode) compile(s valuecodec.Schema) *codecEntry {
	if e, ok := m.codecs[s.ID]; ok {
		return e
	}
	c, err := valuecodec.Compile(s)
	e := &codecEntry{codec: c, bad: err}
	m.codecs[s.ID] = e
	return e
}

// learn merges e's columns into the union of versions seen. A version
// that cannot merge is marked bad.
func (m *schemaMode) learn(e *codecEntry) error {
	base := m.merged
	if base == nil {
		base = iceberg.NewSchema(0, MetaField(1))
	}
	merged, _, err := valuecodec.Merge(base, e.codec.Fields())
	if err != nil {
		e.bad = err
		return err
	}
	m.merged = merged
	return nil
}

// entry returns the codec entry of a framed value's id, or nil when the
// id is no version of the subject.
func (m *schemaMode) entry(id int32) (*codecEntry, error) {
	if e, ok := m.codecs[id]; ok {
		return e, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), registryTimeout)
	defer cancel()
	ok, err := m.src.SubjectHasID(ctx, m.subject, id)
	if err != nil {
		return nil, fmt.Errorf("topic %s: is schema %d a version of %s: %w", m.topic, id, m.subject, err)
	}
	if !ok {
		// Not cached: the same schema may become a version later.
		return nil, nil
	}
	s, err := m.src.SchemaByID(ctx, id)
	if errors.Is(err, valuecodec.ErrUnknownSchema) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("topic %s: schema %d: %w", m.topic, id, err)
	}
	return m.compile(s), nil
}

func (m *schemaMode) NewBuilder(sc *iceberg.Schema, mem memory.Allocator) (RowBuilder, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, err
	}
	rb := array.NewRecordBuilder(mem, as)
	metaIdx := as.FieldIndices(MetaColumn)
	if len(metaIdx) != 1 {
		rb.Release()
		return nil, fmt.Errorf("%w: topic %s: table has no %s column", ErrConfig, m.topic, MetaColumn)
	}
	meta, err := NewMetaBuilder(rb, metaIdx[0])
	if err != nil {
		rb.Release()
		return nil, err
	}
	var (
		fields   []arrow.Field
		builders []array.Builder
	)
	for i, f := range as.Fields() {
		if i != metaIdx[0] {
			fields = append(fields, f)
			builders = append(builders, rb.Field(i))
		}
	}
	cols, err := valuecodec.NewColumns(fields, builders)
	if err != nil {
		rb.Release()
		return nil, err
	}
	return &schemaBuilder{m: m, sc: sc, rb: rb, meta: meta, cols: cols, covered: map[int32]bool{}}, nil
}

type schemaBuilder struct {
	m       *schemaMode
	sc      *iceberg.Schema
	rb      *array.RecordBuilder
	meta    *MetaBuilder
	cols    *valuecodec.Columns
	covered map[int32]bool
	rows    int
	reserve stepReserve
}

func (b *schemaBuilder) undecodable(r *Record, format string, args ...any) error {
	return fmt.Errorf("%w: topic %s partition %d offset %d: %s", ErrUndecodable, b.m.topic, r.Partition, r.Offset, fmt.Sprintf(format, args...))
}

func (b *schemaBuilder) Append(r *Record) error {
	b.reserve.apply()
	if r.Value == nil {
		b.meta.Append(r)
		b.cols.AppendNull()
		b.rows++
		return nil
	}
	codec, payload, bare, err := b.codecFor(r)
	if err != nil {
		return err
	}
	if !b.covered[codec.ID()] {
		if !valuecodec.Covers(b.sc, codec.Fields()) {
			e := b.m.codecs[codec.ID()]
			if err := b.m.learn(e); err != nil {
				return b.undecodable(r, "schema %d does not merge into the table: %v", codec.ID(), err)
			}
			return fmt.Errorf("%w: topic %s: schema %d adds columns (partition %d offset %d)", ErrSchemaChanged, b.m.topic, codec.ID(), r.Partition, r.Offset)
		}
		b.covered[codec.ID()] = true
	}
	if err := b.cols.AppendValue(codec, payload, bare); err != nil {
		return b.undecodable(r, "%v", err)
	}
	b.meta.Append(r)
	b.rows++
	return nil
}

// codecFor picks the codec of r's value and the bytes it decodes.
func (b *schemaBuilder) codecFor(r *Record) (*valuecodec.Codec, []byte, bool, error) {
	m := b.m
	if m.latest && !valuecodec.HasFrame(r.Value) {
		if m.current == nil {
			return nil, nil, false, b.undecodable(r, "subject %s has no usable version", m.subject)
		}
		return m.current, r.Value, true, nil
	}
	id, payload, err := valuecodec.SplitFrame(r.Value)
	if err != nil {
		return nil, nil, false, b.undecodable(r, "%v", err)
	}
	e, err := m.entry(id)
	if err != nil {
		return nil, nil, false, err
	}
	switch {
	case e == nil && m.latest && m.current != nil:
		// A 0 byte that is not a framing of this subject: a bare payload.
		return m.current, r.Value, true, nil
	case e == nil:
		return nil, nil, false, b.undecodable(r, "schema id %d is not a version of subject %s", id, m.subject)
	case e.bad != nil:
		return nil, nil, false, b.undecodable(r, "schema %d: %v", id, e.bad)
	}
	return e.codec, payload, false, nil
}

func (b *schemaBuilder) Rows() int { return b.rows }

func (b *schemaBuilder) Build() arrow.RecordBatch {
	b.rows = 0
	rec := b.rb.NewRecordBatch()
	b.reserve.built(b.rb, rec)
	return rec
}

func (b *schemaBuilder) Release() { b.rb.Release() }

// evolveTable merges want's columns into tbl's schema by name (the
// schema modes' union of registry versions), committing only when the
// table lacks one; a schema-only commit adds no snapshot, so the offsets
// summary stays where it is.
func evolveTable(ctx context.Context, tbl *table.Table, want *iceberg.Schema) (*table.Table, error) {
	if valuecodec.Covers(tbl.Schema(), want.Fields()) {
		return tbl, nil
	}
	txn := tbl.NewTransaction()
	if _, _, err := valuecodec.Evolve(txn, want.Fields()); err != nil {
		return nil, fmt.Errorf("table %s: %w", tbl.Identifier(), err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s: evolve schema: %w", tbl.Identifier(), err)
	}
	return out, nil
}
