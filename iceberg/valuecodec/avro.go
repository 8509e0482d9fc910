package valuecodec

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/hamba/avro/v2"
)

// Avro maps as the Iceberg specification's Avro mapping does: records to
// structs, arrays to lists, maps to map<string, V>, a union with null to
// an optional column, other unions to a struct with one optional field
// per branch (named after the branch's type, what hamba decodes them as),
// enums to strings, fixed to fixed, and the logical types to their
// Iceberg types. Values decode with hamba/avro into generic Go values.

// avroConfig bounds what one value may make the decoder allocate: a
// length prefix in hostile bytes must not become a huge allocation.
var avroConfig = avro.Config{
	MaxByteSliceSize:  16 << 20,
	MaxSliceAllocSize: 1 << 20,
}.Freeze()

func compileAvro(s Schema) (*Codec, error) {
	cache := &avro.SchemaCache{}
	for _, r := range s.References {
		if _, err := avro.ParseWithCache(r.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("%w: schema %d: reference %q: %v", ErrSchema, s.ID, r.Name, err)
		}
	}
	sch, err := avro.ParseWithCache(s.Text, "", cache)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	rec, ok := sch.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("%w: schema %d: top-level Avro type is %s, want a record", ErrSchema, s.ID, sch.Type())
	}
	m := avroMapper{seen: map[string]bool{rec.FullName(): true}}
	fields, err := m.fields(rec, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	id := s.ID
	return &Codec{
		avro:   rec,
		fields: fields,
		decode: func(payload []byte) (Row, error) {
			// Not avroConfig.Unmarshal: it takes running out of bytes
			// (io.EOF) for success, so a truncated value would decode
			// with zeros in its last fields.
			r := avro.NewReader(nil, 0, avro.WithReaderConfig(avroConfig))
			r.Reset(payload)
			var out map[string]any
			r.ReadVal(rec, &out)
			if errors.Is(r.Error, io.EOF) {
				return nil, fmt.Errorf("%w: schema %d: the value ends early", ErrDecode, id)
			}
			if r.Error != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, r.Error)
			}
			norm, err := avroUnions(rec, out, 0)
			if err != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
			}
			row, _ := norm.(map[string]any)
			return Row(row), nil
		},
	}, nil
}

// avroMapper tracks the named types on the path being mapped: a type that
// contains itself has no finite Iceberg shape.
type avroMapper struct {
	seen map[string]bool
}

func (m avroMapper) fields(rec *avro.RecordSchema, depth int) ([]iceberg.NestedField, error) {
	var out []iceberg.NestedField
	for _, f := range rec.Fields() {
		t, ok, err := m.typ(f.Type(), depth+1)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", rec.FullName(), f.Name(), err)
		}
		if !ok {
			continue // a null-only field has nothing to store
		}
		out = append(out, optional(f.Name(), t, f.Doc()))
	}
	return out, nil
}

// typ maps an Avro type; ok is false for the null type.
func (m avroMapper) typ(s avro.Schema, depth int) (iceberg.Type, bool, error) {
	if depth > maxDepth {
		return nil, false, fmt.Errorf("types nest deeper than %d", maxDepth)
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch t := s.(type) {
	case *avro.NullSchema:
		return nil, false, nil
	case *avro.RecordSchema:
		if m.seen[t.FullName()] {
			return nil, false, fmt.Errorf("record %s contains itself, which no Iceberg column can hold", t.FullName())
		}
		m.seen[t.FullName()] = true
		defer delete(m.seen, t.FullName())
		fs, err := m.fields(t, depth)
		if err != nil {
			return nil, false, err
		}
		if len(fs) == 0 {
			return nil, false, fmt.Errorf("record %s has no fields", t.FullName())
		}
		return &iceberg.StructType{FieldList: fs}, true, nil
	case *avro.ArraySchema:
		e, ok, err := m.typ(t.Items(), depth+1)
		if err != nil || !ok {
			return nil, false, nonNull(err, "array of null")
		}
		return &iceberg.ListType{Element: e}, true, nil
	case *avro.MapSchema:
		v, ok, err := m.typ(t.Values(), depth+1)
		if err != nil || !ok {
			return nil, false, nonNull(err, "map of null")
		}
		return &iceberg.MapType{KeyType: iceberg.PrimitiveTypes.String, ValueType: v}, true, nil
	case *avro.UnionSchema:
		var branches []avro.Schema
		for _, b := range t.Types() {
			if b.Type() != avro.Null {
				branches = append(branches, b)
			}
		}
		switch len(branches) {
		case 0:
			return nil, false, nil
		case 1:
			return m.typ(branches[0], depth+1)
		}
		var fs []iceberg.NestedField
		for _, b := range branches {
			bt, ok, err := m.typ(b, depth+1)
			if err != nil {
				return nil, false, err
			}
			if ok {
				fs = append(fs, optional(columnName(avroBranchName(b)), bt, ""))
			}
		}
		return &iceberg.StructType{FieldList: fs}, true, nil
	case *avro.EnumSchema:
		return iceberg.PrimitiveTypes.String, true, nil
	case *avro.FixedSchema:
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			return decimalType(d)
		}
		return iceberg.FixedTypeOf(t.Size()), true, nil
	case *avro.PrimitiveSchema:
		return avroPrimitive(t)
	}
	return nil, false, fmt.Errorf("unsupported Avro type %s", s.Type())
}

func nonNull(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("%s has no Iceberg type", what)
}

// avroBranchName is the key hamba gives a union branch when it decodes
// into a map: the full name of a named type, else the type's name.
func avroBranchName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	if p, ok := s.(*avro.PrimitiveSchema); ok && p.Logical() != nil {
		return string(p.Type()) + "." + string(p.Logical().Type())
	}
	return string(s.Type())
}

func decimalType(d *avro.DecimalLogicalSchema) (iceberg.Type, bool, error) {
	if d.Precision() < 1 || d.Precision() > 38 || d.Scale() < 0 || d.Scale() > d.Precision() {
		return nil, false, fmt.Errorf("decimal(%d,%d) is outside Iceberg's decimal (precision 1 to 38)", d.Precision(), d.Scale())
	}
	return iceberg.DecimalTypeOf(d.Precision(), d.Scale()), true, nil
}

func avroPrimitive(p *avro.PrimitiveSchema) (iceberg.Type, bool, error) {
	if l := p.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			if d, ok := l.(*avro.DecimalLogicalSchema); ok {
				return decimalType(d)
			}
		case avro.Date:
			return iceberg.PrimitiveTypes.Date, true, nil
		case avro.TimeMillis, avro.TimeMicros:
			return iceberg.PrimitiveTypes.Time, true, nil
		case avro.TimestampMillis, avro.TimestampMicros:
			return iceberg.PrimitiveTypes.TimestampTz, true, nil
		case avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return iceberg.PrimitiveTypes.Timestamp, true, nil
		}
		// uuid and unknown logical types keep their underlying type.
	}
	switch p.Type() {
	case avro.Boolean:
		return iceberg.PrimitiveTypes.Bool, true, nil
	case avro.Int:
		return iceberg.PrimitiveTypes.Int32, true, nil
	case avro.Long:
		return iceberg.PrimitiveTypes.Int64, true, nil
	case avro.Float:
		return iceberg.PrimitiveTypes.Float32, true, nil
	case avro.Double:
		return iceberg.PrimitiveTypes.Float64, true, nil
	case avro.String:
		return iceberg.PrimitiveTypes.String, true, nil
	case avro.Bytes:
		return iceberg.PrimitiveTypes.Binary, true, nil
	case avro.Null:
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("unsupported Avro type %s", p.Type())
}

// avroUnions rewrites the values of unions with several non-null branches
// as {branch: value}, the struct the union's column is: hamba gives such
// a value in that form only for types it has no Go type for (records,
// fixed), and as the bare Go value otherwise.
func avroUnions(s avro.Schema, v any, depth int) (any, error) {
	if v == nil || depth > maxDepth {
		return v, nil
	}
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch t := s.(type) {
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for _, f := range t.Fields() {
			nv, err := avroUnions(f.Type(), m[f.Name()], depth+1)
			if err != nil {
				return nil, err
			}
			if _, had := m[f.Name()]; had {
				m[f.Name()] = nv
			}
		}
		return m, nil
	case *avro.ArraySchema:
		l, ok := v.([]any)
		if !ok {
			return v, nil
		}
		for i := range l {
			nv, err := avroUnions(t.Items(), l[i], depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = nv
		}
		return l, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		for k := range m {
			nv, err := avroUnions(t.Values(), m[k], depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = nv
		}
		return m, nil
	case *avro.UnionSchema:
		var branches []avro.Schema
		for _, b := range t.Types() {
			if b.Type() != avro.Null {
				branches = append(branches, b)
			}
		}
		if len(branches) == 1 {
			return avroUnions(branches[0], v, depth+1)
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for k, bv := range m {
				for _, b := range branches {
					if avroBranchName(b) == k {
						nv, err := avroUnions(b, bv, depth+1)
						if err != nil {
							return nil, err
						}
						return map[string]any{k: nv}, nil
					}
				}
			}
		}
		for _, b := range branches {
			if avroAccepts(b, v) {
				nv, err := avroUnions(b, v, depth+1)
				if err != nil {
					return nil, err
				}
				return map[string]any{avroBranchName(b): nv}, nil
			}
		}
		return nil, fmt.Errorf("a %T matches no branch of union %s", v, t.String())
	}
	return v, nil
}

// avroAccepts says whether a value hamba decoded is of branch b's type.
func avroAccepts(b avro.Schema, v any) bool {
	if ref, ok := b.(*avro.RefSchema); ok {
		b = ref.Schema()
	}
	switch b.(type) {
	case *avro.ArraySchema:
		_, ok := v.([]any)
		return ok
	case *avro.MapSchema, *avro.RecordSchema:
		_, ok := v.(map[string]any)
		return ok
	case *avro.EnumSchema:
		_, ok := v.(string)
		return ok
	case *avro.FixedSchema:
		_, ok := asBytes(v)
		return ok
	}
	p, ok := b.(*avro.PrimitiveSchema)
	if !ok {
		return false
	}
	if l := p.Logical(); l != nil {
		switch l.Type() {
		case avro.Decimal:
			_, ok := v.(*big.Rat)
			return ok
		case avro.Date, avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			_, ok := v.(time.Time)
			return ok
		case avro.TimeMillis, avro.TimeMicros:
			_, ok := v.(time.Duration)
			return ok
		}
	}
	switch v.(type) {
	case bool:
		return p.Type() == avro.Boolean
	case int, int32:
		return p.Type() == avro.Int
	case int64:
		return p.Type() == avro.Long
	case float32:
		return p.Type() == avro.Float
	case float64:
		return p.Type() == avro.Double
	case string:
		return p.Type() == avro.String
	case []byte:
		return p.Type() == avro.Bytes
	}
	return false
}
