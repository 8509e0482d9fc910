package valuecodec

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// A row reaches the Arrow builders in two passes: fit converts every
// value to its column's type (the table's, which may be wider than the
// schema that wrote the value: a union of the registry's versions), and
// only when the whole row fits does put append it. A value that does not
// fit therefore leaves the builders untouched, and the record can go to
// the DLQ table without corrupting the batch.

// Columns appends rows to the value columns of a record being built.
type Columns struct {
	fields   []arrow.Field
	builders []array.Builder
	index    map[string]int
	// direct holds each codec's direct path into these columns, nil
	// when it has none (avro_direct.go).
	direct map[*Codec]*avroDirect
}

// NewColumns appends to builders, which build fields (the table schema's
// value columns, as iceberg-go's table.SchemaToArrowSchema gives them).
func NewColumns(fields []arrow.Field, builders []array.Builder) (*Columns, error) {
	if len(fields) != len(builders) {
		return nil, fmt.Errorf("valuecodec: %d fields for %d builders", len(fields), len(builders))
	}
	c := &Columns{fields: fields, builders: builders, index: make(map[string]int, len(fields)), direct: map[*Codec]*avroDirect{}}
	for i, f := range fields {
		c.index[f.Name] = i
	}
	return c, nil
}

// Append appends row to the columns; a column the row lacks is null. An
// error (wrapping ErrColumn) leaves the builders as they were.
func (c *Columns) Append(row Row) error {
	vals := make([]any, len(c.fields))
	for k, v := range row {
		i, ok := c.index[columnName(k)]
		if !ok {
			if v == nil {
				continue
			}
			return fmt.Errorf("%w: field %q has no column in the table", ErrColumn, k)
		}
		fv, err := fit(c.fields[i].Type, c.fields[i].Nullable, v, 0)
		if err != nil {
			return fmt.Errorf("%w: column %s: %v", ErrColumn, c.fields[i].Name, err)
		}
		vals[i] = fv
	}
	for i, f := range c.fields {
		if vals[i] == nil && !f.Nullable {
			return fmt.Errorf("%w: column %s is required and the value has none", ErrColumn, f.Name)
		}
	}
	for i, b := range c.builders {
		put(b, vals[i])
	}
	return nil
}

// AppendValue decodes payload with codec (bare: a value without framing,
// DecodeBare) and appends it as Append does: an error (wrapping
// ErrDecode or ErrColumn) leaves the builders as they were. Avro values
// of a flat record take the direct path (avro_direct.go), the same rows
// without the generic Row in between.
func (c *Columns) AppendValue(codec *Codec, payload []byte, bare bool) error {
	d, ok := c.direct[codec]
	if !ok {
		d = newAvroDirect(codec, c)
		c.direct[codec] = d
	}
	if d != nil {
		return d.append(payload)
	}
	decode := codec.Decode
	if bare {
		decode = codec.DecodeBare
	}
	row, err := decode(payload)
	if err != nil {
		return err
	}
	return c.Append(row)
}

// AppendNull appends a row of nulls (to keep columns aligned when a
// record has no value, a tombstone).
func (c *Columns) AppendNull() {
	for _, b := range c.builders {
		b.AppendNull()
	}
}

// fitted values: structs are []any by child index, lists []any, maps
// [][2]any; scalars are the exact Go type their builder takes.

func fit(dt arrow.DataType, nullable bool, v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nests deeper than %d", maxDepth)
	}
	if v == nil {
		if !nullable {
			return nil, fmt.Errorf("null where a value is required")
		}
		return nil, nil
	}
	if p, ok := v.(*big.Rat); ok && p == nil {
		return fit(dt, nullable, nil, depth)
	}
	switch t := dt.(type) {
	case *arrow.StructType:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, mismatch(v, dt)
		}
		out := make([]any, t.NumFields())
		for k, cv := range m {
			i, ok := t.FieldIdx(columnName(k))
			if !ok {
				if cv == nil {
					continue
				}
				return nil, fmt.Errorf("field %q has no column", k)
			}
			f := t.Field(i)
			fv, err := fit(f.Type, f.Nullable, cv, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			out[i] = fv
		}
		for i, f := range t.Fields() {
			if out[i] == nil && !f.Nullable {
				return nil, fmt.Errorf("%s: required and missing", f.Name)
			}
		}
		return out, nil
	case *arrow.ListType:
		l, ok := v.([]any)
		if !ok {
			return nil, mismatch(v, dt)
		}
		ef := t.ElemField()
		out := make([]any, len(l))
		for i, e := range l {
			fv, err := fit(ef.Type, ef.Nullable, e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = fv
		}
		return out, nil
	case *arrow.MapType:
		var ents Entries
		switch m := v.(type) {
		case map[string]any:
			for k, e := range m {
				ents = append(ents, [2]any{k, e})
			}
		case Entries:
			ents = m
		default:
			return nil, mismatch(v, dt)
		}
		out := make(Entries, len(ents))
		for i, kv := range ents {
			k, err := fit(t.KeyType(), false, kv[0], depth+1)
			if err != nil {
				return nil, fmt.Errorf("key: %w", err)
			}
			it := t.ItemField()
			e, err := fit(it.Type, it.Nullable, kv[1], depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%v]: %w", kv[0], err)
			}
			out[i] = [2]any{k, e}
		}
		return out, nil
	}
	return fitScalar(dt, v)
}

func mismatch(v any, dt arrow.DataType) error {
	return fmt.Errorf("a %T does not fit %s", v, dt)
}

func fitScalar(dt arrow.DataType, v any) (any, error) {
	switch dt.ID() {
	case arrow.BOOL:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case arrow.INT32:
		if i, ok := asInt(v); ok {
			if i < math.MinInt32 || i > math.MaxInt32 {
				return nil, fmt.Errorf("%d overflows int", i)
			}
			return int32(i), nil
		}
	case arrow.INT64:
		if i, ok := asInt(v); ok {
			return i, nil
		}
	case arrow.FLOAT32:
		if f, ok := asFloat(v); ok {
			return float32(f), nil
		}
	case arrow.FLOAT64:
		if f, ok := asFloat(v); ok {
			return f, nil
		}
	case arrow.STRING, arrow.LARGE_STRING:
		switch s := v.(type) {
		case string:
			return s, nil
		case json.RawMessage:
			return string(s), nil
		}
	case arrow.BINARY, arrow.LARGE_BINARY:
		if b, ok := asBytes(v); ok {
			return b, nil
		}
		if s, ok := v.(string); ok {
			return []byte(s), nil
		}
	case arrow.FIXED_SIZE_BINARY:
		if b, ok := asBytes(v); ok {
			if w := dt.(*arrow.FixedSizeBinaryType).ByteWidth; len(b) != w {
				return nil, fmt.Errorf("%d bytes for fixed[%d]", len(b), w)
			}
			return b, nil
		}
	case arrow.DECIMAL128:
		return fitDecimal(dt.(*arrow.Decimal128Type), v)
	case arrow.DATE32:
		switch d := v.(type) {
		case time.Time:
			return arrow.Date32FromTime(d), nil
		case int32:
			return arrow.Date32(d), nil
		}
	case arrow.TIME64:
		if d, ok := v.(time.Duration); ok {
			if dt.(*arrow.Time64Type).Unit == arrow.Nanosecond {
				return arrow.Time64(d.Nanoseconds()), nil
			}
			return arrow.Time64(d.Microseconds()), nil
		}
	case arrow.TIMESTAMP:
		if ts, ok := v.(time.Time); ok {
			if dt.(*arrow.TimestampType).Unit == arrow.Nanosecond {
				return arrow.Timestamp(ts.UnixNano()), nil
			}
			return arrow.Timestamp(ts.UnixMicro()), nil
		}
	default:
		return nil, fmt.Errorf("column type %s is not one valuecodec writes", dt)
	}
	return nil, mismatch(v, dt)
}

func asInt(v any) (int64, bool) {
	switch i := v.(type) {
	case int:
		return int64(i), true
	case int32:
		return int64(i), true
	case int64:
		return i, true
	case uint32:
		return int64(i), true
	case uint64:
		if i > math.MaxInt64 {
			return 0, false
		}
		return int64(i), true
	case json.Number:
		n, err := strconv.ParseInt(string(i), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch f := v.(type) {
	case float32:
		return float64(f), true
	case float64:
		return f, true
	case json.Number:
		n, err := f.Float64()
		return n, err == nil
	}
	if i, ok := asInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

// asBytes takes []byte, and the [N]byte arrays hamba decodes fixed into.
func asBytes(v any) ([]byte, bool) {
	if b, ok := v.([]byte); ok {
		return b, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return b, true
	}
	return nil, false
}

func fitDecimal(t *arrow.Decimal128Type, v any) (any, error) {
	var r *big.Rat
	switch d := v.(type) {
	case *big.Rat:
		r = d
	case json.Number:
		var ok bool
		if r, ok = new(big.Rat).SetString(string(d)); !ok {
			return nil, fmt.Errorf("%q is not a decimal", d)
		}
	default:
		if i, ok := asInt(v); ok {
			r = new(big.Rat).SetInt64(i)
		} else {
			return nil, mismatch(v, t)
		}
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
	if !scaled.IsInt() {
		return nil, fmt.Errorf("%s has more than %d decimal places", r.RatString(), t.Scale)
	}
	n := scaled.Num()
	if len(n.Text(10)) > int(t.Precision)+boolInt(n.Sign() < 0) {
		return nil, fmt.Errorf("%s exceeds decimal(%d,%d)", r.RatString(), t.Precision, t.Scale)
	}
	return decimal128.FromBigInt(n), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// put appends a fitted value; it cannot fail, fit has checked it.
func put(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StructBuilder:
		b.Append(true)
		for i, cv := range v.([]any) {
			put(b.FieldBuilder(i), cv)
		}
	case *array.ListBuilder:
		b.Append(true)
		for _, e := range v.([]any) {
			put(b.ValueBuilder(), e)
		}
	case *array.MapBuilder:
		b.Append(true)
		for _, kv := range v.(Entries) {
			put(b.KeyBuilder(), kv[0])
			put(b.ItemBuilder(), kv[1])
		}
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.Time64Builder:
		b.Append(v.(arrow.Time64))
	case *array.TimestampBuilder:
		b.Append(v.(arrow.Timestamp))
	default:
		panic(fmt.Sprintf("valuecodec: no append for %T", b))
	}
}
