package iceberg

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/aerostream/aerostream/iceberg/internal/recbatch"
)

// Record is one Kafka record read from the log. Key, Value and header
// values alias the fetched bytes and are valid only during
// RowBuilder.Append.
type Record = recbatch.Record

// Header is a record header.
type Header = recbatch.Header

// Mode turns a topic's records into rows of its table: key_value (the
// default, mode_keyvalue.go) keeps the value as bytes; the schema modes
// (iceberg/valuecodec) turn it into typed columns. A Mode serves one
// topic and is used by one committer goroutine at a time.
type Mode interface {
	// Schema is the table schema rows are built for. The committer calls
	// it before each commit: a schema with new fields (a newer registry
	// version) evolves the table, by name, before rows built for it are
	// appended.
	Schema(ctx context.Context) (*iceberg.Schema, error)
	// NewBuilder returns a builder of rows for sc, a schema Schema
	// returned.
	NewBuilder(sc *iceberg.Schema, mem memory.Allocator) (RowBuilder, error)
}

// SchemaRefresher is a Mode whose row source can change while a session
// runs: value_schema_latest decodes bare values with the subject's latest
// version, which a registration moves. The committer calls Refresh before
// it decodes each step's records, so a record produced after a version
// was registered is decoded with it. An error wrapping ErrSchemaChanged
// means the table must evolve first (the session restarts and evolves
// it); any other error is the registry failing, and the mode carries on
// with what it had.
type SchemaRefresher interface {
	Refresh(ctx context.Context) error
}

// RowBuilder accumulates rows in Arrow form.
type RowBuilder interface {
	// Append adds r as a row. An error wrapping ErrUndecodable leaves
	// the builder as it was: the record goes to the DLQ table or is
	// dropped, per iceberg.invalid_record_action. Any other error stops
	// the translation and is retried.
	Append(r *Record) error
	// Rows is how many rows were appended since the last Build.
	Rows() int
	// Build returns the rows appended since the last Build as one record
	// batch (the caller releases it) and starts afresh.
	Build() arrow.RecordBatch
	// Release frees the builder.
	Release()
}

// ModeContext is what a mode's factory gets.
type ModeContext struct {
	Topic   string
	Configs map[string]string // the topic's iceberg.* configs
	// Registry is the node's schema registry, for the schema modes; nil
	// when the node has none. Its type is the schema modes' business.
	Registry any
}

// ModeFactory builds a topic's Mode.
type ModeFactory func(mc ModeContext) (Mode, error)

var modes struct {
	sync.Mutex
	m map[string]ModeFactory
}

// RegisterMode makes an iceberg.mode value available; valuecodec
// registers the schema modes from its init.
func RegisterMode(name string, f ModeFactory) {
	modes.Lock()
	defer modes.Unlock()
	if modes.m == nil {
		modes.m = map[string]ModeFactory{}
	}
	if _, dup := modes.m[name]; dup {
		panic("iceberg: mode " + name + " registered twice")
	}
	modes.m[name] = f
}

// Modes lists the available modes, sorted.
func Modes() []string {
	modes.Lock()
	defer modes.Unlock()
	out := make([]string, 0, len(modes.m))
	for n := range modes.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// NewMode builds the mode named by mc.Configs[iceberg.mode] (key_value
// when unset).
func NewMode(mc ModeContext) (Mode, error) {
	name := mc.Configs[ConfigMode]
	if name == "" {
		name = ModeKeyValue
	}
	modes.Lock()
	f := modes.m[name]
	modes.Unlock()
	if f == nil {
		return nil, fmt.Errorf("%w: topic %s: iceberg.mode %q is not built into this binary", ErrModeUnavailable, mc.Topic, name)
	}
	return f(mc)
}

// stepReserve sizes a row builder's buffers for a step before its first
// row: each step's rows are a fresh set of Arrow buffers (the last set
// went to the data file writer), and growing them by doubling while rows
// are appended copied every buffer about once more and made as much
// garbage again. Steps are alike in size, so the last one's sizes are
// reserved, at the first row of the next (after the committer waited
// for the writer, whose memory it counts: rowMemory).
type stepReserve struct {
	plan    []reservation
	pending bool
}

type reservation struct {
	b    array.Builder
	n    int // values
	data int // bytes of a binary builder's values
}

// built records the sizes of rec, just built by rb.
func (s *stepReserve) built(rb *array.RecordBuilder, rec arrow.RecordBatch) {
	s.plan = s.plan[:0]
	for i, b := range rb.Fields() {
		s.walk(b, rec.Column(i))
	}
	s.pending = true
}

func (s *stepReserve) walk(b array.Builder, a arrow.Array) {
	r := reservation{b: b, n: a.Len()}
	switch b := b.(type) {
	case *array.StructBuilder:
		if st, ok := a.(*array.Struct); ok && st.NumField() == b.NumField() {
			s.plan = append(s.plan, r)
			for i := range b.NumField() {
				s.walk(b.FieldBuilder(i), st.Field(i))
			}
			return
		}
	case *array.ListBuilder:
		if l, ok := a.(*array.List); ok {
			s.plan = append(s.plan, r)
			s.walk(b.ValueBuilder(), l.ListValues())
			return
		}
	case *array.BinaryBuilder, *array.StringBuilder:
		if bufs := a.Data().Buffers(); len(bufs) == 3 && bufs[2] != nil {
			r.data = bufs[2].Len()
		}
	}
	s.plan = append(s.plan, r)
}

// apply reserves the recorded sizes, once after each built.
func (s *stepReserve) apply() {
	if !s.pending {
		return
	}
	s.pending = false
	for _, r := range s.plan {
		r.b.Reserve(r.n)
		if r.data > 0 {
			if bb := binaryBuilder(r.b); bb != nil {
				bb.ReserveData(r.data)
			}
		}
	}
}

func binaryBuilder(b array.Builder) *array.BinaryBuilder {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		return b
	case *array.StringBuilder:
		return b.BinaryBuilder
	}
	return nil
}
