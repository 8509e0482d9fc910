package valuecodec

import (
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/hamba/avro/v2"
)

// An Avro record of the common, flat shape decodes straight into the
// Arrow builders: every field a primitive (with the date, time-millis,
// time-micros, timestamp-millis, timestamp-micros and uuid logical
// types), an enum, a fixed, or a union of null and one primitive. The
// generic path (hamba into map[string]any, then fit and put) allocates a
// map, a box per field and a string per text field for every value;
// this one reads with the same hamba Reader calls in the same order, so
// it accepts and rejects the same bytes, and it converts each value as
// fitScalar converts the Go value hamba would have produced. Both passes
// stay: the whole value is read and checked before any builder is
// touched. Any other schema, or a column type it has no conversion for,
// takes the generic path.

// avroRead is how a field's value is read, named after the Go value the
// generic path gets for it.
type avroRead uint8

const (
	readNull       avroRead = iota
	readBool                // bool
	readInt                 // int
	readLong                // int64
	readFloat               // float32
	readDouble              // float64
	readString              // string (and uuid)
	readBytes               // []byte
	readEnum                // string, a symbol
	readFixed               // [N]byte
	readDate                // time.Time, int days
	readTimeMillis          // time.Duration, int milliseconds
	readTimeMicros          // time.Duration, long microseconds
	readTsMillis            // time.Time, long milliseconds, UTC
	readTsMicros            // time.Time, long microseconds, UTC
)

// directField is one field of the record, in schema order.
type directField struct {
	read avroRead
	// union is set for a union; nullIdx is its null branch (-1: none)
	// and size its number of branches.
	union   bool
	nullIdx int
	size    int // union branches, or a fixed's size
	symbols [][]byte
	col     int // column index; -1 for the null type, which has none
}

// directSlot is a read value, converted to its column's type: i for
// booleans, integers, dates, times and timestamps, f for floats, b for
// bytes.
type directSlot struct {
	set bool
	i   int64
	f   float64
	b   []byte
}

// avroDirect appends values of one codec to one Columns.
type avroDirect struct {
	id      int32
	fields  []directField
	to      []arrow.DataType // per column
	slots   []directSlot     // per column
	fixed   [][]byte         // per field: a fixed's buffer
	r       *avro.Reader
	columns *Columns
}

// newAvroDirect returns the direct path of c's values into cols, or nil
// when c's schema or cols' types are not what it handles.
func newAvroDirect(c *Codec, cols *Columns) *avroDirect {
	if c.avro == nil {
		return nil
	}
	d := &avroDirect{
		id:      c.id,
		to:      make([]arrow.DataType, len(cols.fields)),
		slots:   make([]directSlot, len(cols.fields)),
		r:       avro.NewReader(nil, 0, avro.WithReaderConfig(avroConfig)),
		columns: cols,
	}
	used := make([]bool, len(cols.fields))
	for i, f := range cols.fields {
		d.to[i] = f.Type
	}
	for _, af := range c.avro.Fields() {
		f := directField{nullIdx: -1, col: -1}
		s := af.Type()
		if u, ok := s.(*avro.UnionSchema); ok {
			f.union, f.size = true, len(u.Types())
			var branch avro.Schema
			for i, b := range u.Types() {
				switch {
				case b.Type() == avro.Null:
					f.nullIdx = i
				case branch != nil:
					return nil // several non-null branches: a struct column
				default:
					branch = b
				}
			}
			if branch == nil {
				f.read = readNull
			} else if p, ok := branch.(*avro.PrimitiveSchema); ok {
				// Named types in a union (enum, fixed) decode otherwise.
				if f.read, ok = primitiveRead(p); !ok {
					return nil
				}
			} else {
				return nil
			}
		} else {
			var ok bool
			if f.read, ok = flatRead(s, &f); !ok {
				return nil
			}
		}
		if f.read != readNull {
			i, ok := cols.index[columnName(af.Name())]
			if !ok || used[i] || !directConverts(f.read, cols.fields[i].Type, cols.builders[i]) {
				return nil
			}
			if f.read == readFixed && cols.fields[i].Type.ID() == arrow.FIXED_SIZE_BINARY &&
				cols.fields[i].Type.(*arrow.FixedSizeBinaryType).ByteWidth != f.size {
				return nil // every value would fail to fit: leave the error to the generic path
			}
			used[i], f.col = true, i
		}
		d.fields = append(d.fields, f)
	}
	d.fixed = make([][]byte, len(d.fields))
	for i, f := range d.fields {
		if f.read == readFixed {
			d.fixed[i] = make([]byte, f.size)
		}
	}
	return d
}

// flatRead is how a field of a type other than a union is read.
func flatRead(s avro.Schema, f *directField) (avroRead, bool) {
	if ref, ok := s.(*avro.RefSchema); ok {
		s = ref.Schema()
	}
	switch t := s.(type) {
	case *avro.NullSchema:
		return readNull, true
	case *avro.PrimitiveSchema:
		return primitiveRead(t)
	case *avro.EnumSchema:
		for _, sym := range t.Symbols() {
			f.symbols = append(f.symbols, []byte(sym))
		}
		return readEnum, true
	case *avro.FixedSchema:
		if t.Logical() != nil {
			return 0, false
		}
		f.size = t.Size()
		return readFixed, true
	}
	return 0, false
}

func primitiveRead(p *avro.PrimitiveSchema) (avroRead, bool) {
	lt := avro.LogicalType("")
	if l := p.Logical(); l != nil {
		lt = l.Type()
	}
	switch {
	case p.Type() == avro.Null:
		return readNull, true
	case lt == "" && p.Type() == avro.Boolean:
		return readBool, true
	case lt == "" && p.Type() == avro.Int:
		return readInt, true
	case lt == "" && p.Type() == avro.Long:
		return readLong, true
	case lt == "" && p.Type() == avro.Float:
		return readFloat, true
	case lt == "" && p.Type() == avro.Double:
		return readDouble, true
	case (lt == "" || lt == avro.UUID) && p.Type() == avro.String:
		return readString, true
	case lt == "" && p.Type() == avro.Bytes:
		return readBytes, true
	case lt == avro.Date && p.Type() == avro.Int:
		return readDate, true
	case lt == avro.TimeMillis && p.Type() == avro.Int:
		return readTimeMillis, true
	case lt == avro.TimeMicros && p.Type() == avro.Long:
		return readTimeMicros, true
	case lt == avro.TimestampMillis && p.Type() == avro.Long:
		return readTsMillis, true
	case lt == avro.TimestampMicros && p.Type() == avro.Long:
		return readTsMicros, true
	}
	// Decimals, and local timestamps (which hamba shifts by the zone).
	return 0, false
}

// directConverts says whether fitScalar takes the Go value of rd into a
// column of type dt, and b is the builder put would use for it.
func directConverts(rd avroRead, dt arrow.DataType, b array.Builder) bool {
	var ok bool
	switch dt.ID() {
	case arrow.BOOL:
		_, ok = b.(*array.BooleanBuilder)
		return ok && rd == readBool
	case arrow.INT32:
		_, ok = b.(*array.Int32Builder)
		return ok && (rd == readInt || rd == readLong)
	case arrow.INT64:
		_, ok = b.(*array.Int64Builder)
		return ok && (rd == readInt || rd == readLong)
	case arrow.FLOAT32:
		_, ok = b.(*array.Float32Builder)
		return ok && (rd == readInt || rd == readLong || rd == readFloat || rd == readDouble)
	case arrow.FLOAT64:
		_, ok = b.(*array.Float64Builder)
		return ok && (rd == readInt || rd == readLong || rd == readFloat || rd == readDouble)
	case arrow.STRING, arrow.LARGE_STRING:
		return binaryOf(b) != nil && (rd == readString || rd == readEnum)
	case arrow.BINARY, arrow.LARGE_BINARY:
		return binaryOf(b) != nil && (rd == readString || rd == readEnum || rd == readBytes || rd == readFixed)
	case arrow.FIXED_SIZE_BINARY:
		_, ok = b.(*array.FixedSizeBinaryBuilder)
		return ok && (rd == readBytes || rd == readFixed)
	case arrow.DATE32:
		_, ok = b.(*array.Date32Builder)
		return ok && (rd == readDate || rd == readTsMillis || rd == readTsMicros)
	case arrow.TIME64:
		_, ok = b.(*array.Time64Builder)
		return ok && (rd == readTimeMillis || rd == readTimeMicros)
	case arrow.TIMESTAMP:
		_, ok = b.(*array.TimestampBuilder)
		return ok && (rd == readDate || rd == readTsMillis || rd == readTsMicros)
	}
	return false
}

// binaryOf is the BinaryBuilder behind the builders of string and binary
// columns.
func binaryOf(b array.Builder) *array.BinaryBuilder {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		return b
	case *array.StringBuilder:
		return b.BinaryBuilder
	case *array.LargeStringBuilder:
		return b.BinaryBuilder
	}
	return nil
}

// append decodes payload and appends it as a row; an error leaves the
// builders as they were.
func (d *avroDirect) append(payload []byte) error {
	if err := d.read(payload); err != nil {
		return err
	}
	c := d.columns
	for i, f := range c.fields {
		if !d.slots[i].set && !f.Nullable {
			return fmt.Errorf("%w: column %s is required and the value has none", ErrColumn, f.Name)
		}
	}
	for i, b := range c.builders {
		s := &d.slots[i]
		if !s.set {
			b.AppendNull()
			continue
		}
		switch d.to[i].ID() {
		case arrow.BOOL:
			b.(*array.BooleanBuilder).Append(s.i != 0)
		case arrow.INT32:
			b.(*array.Int32Builder).Append(int32(s.i))
		case arrow.INT64:
			b.(*array.Int64Builder).Append(s.i)
		case arrow.FLOAT32:
			b.(*array.Float32Builder).Append(float32(s.f))
		case arrow.FLOAT64:
			b.(*array.Float64Builder).Append(s.f)
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			binaryOf(b).Append(s.b)
		case arrow.FIXED_SIZE_BINARY:
			b.(*array.FixedSizeBinaryBuilder).Append(s.b)
		case arrow.DATE32:
			b.(*array.Date32Builder).Append(arrow.Date32(s.i))
		case arrow.TIME64:
			b.(*array.Time64Builder).Append(arrow.Time64(s.i))
		case arrow.TIMESTAMP:
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(s.i))
		}
	}
	return nil
}

// read decodes payload into d.slots.
func (d *avroDirect) read(payload []byte) (err error) {
	defer func() {
		if !recoverPanics {
			return
		}
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: schema %d: decoder failed: %v", ErrDecode, d.id, r)
		}
	}()
	clear(d.slots)
	r := d.r
	r.Reset(payload)
	r.Error = nil
	for fi := range d.fields {
		f := &d.fields[fi]
		if f.union {
			// As hamba's union decoder: the branch index is an int.
			idx := int(r.ReadInt())
			if r.Error != nil {
				break
			}
			if idx < 0 || idx >= f.size {
				return fmt.Errorf("%w: schema %d: union branch %d of %d", ErrDecode, d.id, idx, f.size)
			}
			if idx == f.nullIdx {
				continue
			}
		}
		var (
			isInt bool // i holds an integer, which a float column converts
			i     int64
			fl    float64
			b     []byte
			t     time.Time
			dur   time.Duration
		)
		switch f.read {
		case readNull:
			continue
		case readBool:
			isInt = true
			if r.ReadBool() {
				i = 1
			}
		case readInt:
			isInt, i = true, int64(r.ReadInt())
		case readLong:
			isInt, i = true, r.ReadLong()
		case readFloat:
			fl = float64(r.ReadFloat())
		case readDouble:
			fl = r.ReadDouble()
		case readString:
			s := r.ReadString()
			b = unsafe.Slice(unsafe.StringData(s), len(s))
			if b == nil {
				b = []byte{}
			}
		case readBytes:
			b = r.ReadBytes()
		case readEnum:
			n := int(r.ReadInt())
			if r.Error == nil && (n < 0 || n >= len(f.symbols)) {
				return fmt.Errorf("%w: schema %d: unknown enum symbol %d", ErrDecode, d.id, n)
			}
			if r.Error == nil {
				b = f.symbols[n]
			}
		case readFixed:
			b = d.fixed[fi]
			r.Read(b)
		case readDate:
			sec := int64(r.ReadInt()) * int64(24*time.Hour/time.Second)
			t = time.Unix(sec, 0).UTC()
		case readTimeMillis:
			dur = time.Duration(r.ReadInt()) * time.Millisecond
		case readTimeMicros:
			dur = time.Duration(r.ReadLong()) * time.Microsecond
		case readTsMillis:
			v := r.ReadLong()
			sec := v / 1e3
			t = time.Unix(sec, (v-sec*1e3)*1e6).UTC()
		case readTsMicros:
			v := r.ReadLong()
			sec := v / 1e6
			t = time.Unix(sec, (v-sec*1e6)*1e3).UTC()
		}
		if r.Error != nil {
			break
		}
		s := &d.slots[f.col]
		dt := d.to[f.col]
		s.set = true
		switch dt.ID() {
		case arrow.BOOL, arrow.INT64:
			s.i = i
		case arrow.INT32:
			if i < math.MinInt32 || i > math.MaxInt32 {
				return fmt.Errorf("%w: column %s: %d overflows int", ErrColumn, d.columns.fields[f.col].Name, i)
			}
			s.i = i
		case arrow.FLOAT32, arrow.FLOAT64:
			if isInt {
				fl = float64(i)
			}
			s.f = fl
		case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
			s.b = b
		case arrow.FIXED_SIZE_BINARY:
			if w := dt.(*arrow.FixedSizeBinaryType).ByteWidth; len(b) != w {
				return fmt.Errorf("%w: column %s: %d bytes for fixed[%d]", ErrColumn, d.columns.fields[f.col].Name, len(b), w)
			}
			s.b = b
		case arrow.DATE32:
			s.i = int64(arrow.Date32FromTime(t))
		case arrow.TIME64:
			if dt.(*arrow.Time64Type).Unit == arrow.Nanosecond {
				s.i = dur.Nanoseconds()
			} else {
				s.i = dur.Microseconds()
			}
		case arrow.TIMESTAMP:
			if dt.(*arrow.TimestampType).Unit == arrow.Nanosecond {
				s.i = t.UnixNano()
			} else {
				s.i = t.UnixMicro()
			}
		}
	}
	if errors.Is(r.Error, io.EOF) {
		return fmt.Errorf("%w: schema %d: the value ends early", ErrDecode, d.id)
	}
	if r.Error != nil {
		return fmt.Errorf("%w: schema %d: %v", ErrDecode, d.id, r.Error)
	}
	return nil
}
