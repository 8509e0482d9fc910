package valuecodec

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/aerostream/aerostream/internal/protosrc"
)

// Protobuf maps a message's fields by name: scalars to their Iceberg
// types (unsigned 32-bit to long, so every value fits; unsigned 64-bit
// to long too, and a value above its range is an error), enums to their
// value names, messages to structs, repeated fields to lists, map fields
// to maps. google.protobuf.Timestamp becomes timestamptz and the wrapper
// types their optional scalar. The table's columns are the schema's
// first message, the one Confluent's serializers write by default; a
// value naming another message through its indexes does not fit them.
// A proto3 field without presence that is unset reads as its default,
// as protobuf itself reads it.

var protoUnmarshal = proto.UnmarshalOptions{RecursionLimit: maxDepth, DiscardUnknown: true}

func compileProtobuf(s Schema) (*Codec, error) {
	fd, err := protoFile(s)
	if err != nil {
		return nil, err
	}
	if fd.Messages().Len() == 0 {
		return nil, fmt.Errorf("%w: schema %d declares no message", ErrSchema, s.ID)
	}
	md := fd.Messages().Get(0)
	m := protoMapper{seen: map[protoreflect.FullName]bool{md.FullName(): true}}
	fields, err := m.fields(md, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	id := s.ID
	decodeMsg := func(b []byte) (Row, error) {
		msg := dynamicpb.NewMessage(md)
		if err := protoUnmarshal.Unmarshal(b, msg); err != nil {
			return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
		}
		r, err := protoRow(msg)
		if err != nil {
			return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
		}
		return Row(r), nil
	}
	return &Codec{
		fields: fields,
		decode: func(payload []byte) (Row, error) {
			idx, rest, err := messageIndexes(payload)
			if err != nil {
				return nil, err
			}
			got, err := messageAt(fd, idx)
			if err != nil {
				return nil, fmt.Errorf("%w: schema %d: %v", ErrDecode, id, err)
			}
			if got.FullName() != md.FullName() {
				return nil, fmt.Errorf("%w: schema %d: value is a %s; the table's columns are %s", ErrDecode, id, got.FullName(), md.FullName())
			}
			return decodeMsg(rest)
		},
		decodeBare: decodeMsg,
	}, nil
}

// protoFile compiles a schema's .proto source (or base64 descriptor)
// with its references.
func protoFile(s Schema) (protoreflect.FileDescriptor, error) {
	refs := map[string]string{}
	for _, r := range s.References {
		refs[r.Name] = r.Schema
	}
	fd, err := protosrc.Compile(s.Text, refs)
	if err != nil {
		return nil, fmt.Errorf("%w: schema %d: %v", ErrSchema, s.ID, err)
	}
	return fd, nil
}

// messageAt follows Confluent's message indexes through fd.
func messageAt(fd protoreflect.FileDescriptor, idx []int) (protoreflect.MessageDescriptor, error) {
	ms := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= ms.Len() {
			return nil, fmt.Errorf("message index %v names no message", idx)
		}
		md = ms.Get(i)
		ms = md.Messages()
	}
	return md, nil
}

const (
	timestampName protoreflect.FullName = "google.protobuf.Timestamp"
	wrappersPkg   string                = "google.protobuf."
)

// wrapperValue says whether md is one of google.protobuf's wrapper types
// (Int64Value and the like), whose one field "value" is the column.
func wrapperValue(md protoreflect.MessageDescriptor) bool {
	n := string(md.FullName())
	return strings.HasPrefix(n, wrappersPkg) && strings.HasSuffix(n, "Value") &&
		md.Fields().Len() == 1 && md.Fields().Get(0).Name() == "value"
}

type protoMapper struct {
	seen map[protoreflect.FullName]bool
}

func (m protoMapper) fields(md protoreflect.MessageDescriptor, depth int) ([]iceberg.NestedField, error) {
	var out []iceberg.NestedField
	fs := md.Fields()
	for i := range fs.Len() {
		f := fs.Get(i)
		t, err := m.field(f, depth+1)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.FullName(), err)
		}
		out = append(out, optional(string(f.Name()), t, ""))
	}
	return out, nil
}

func (m protoMapper) field(f protoreflect.FieldDescriptor, depth int) (iceberg.Type, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("types nest deeper than %d", maxDepth)
	}
	if f.IsMap() {
		k, err := m.single(f.MapKey(), depth+1)
		if err != nil {
			return nil, err
		}
		v, err := m.single(f.MapValue(), depth+1)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyType: k, ValueType: v}, nil
	}
	t, err := m.single(f, depth)
	if err != nil {
		return nil, err
	}
	if f.IsList() {
		return &iceberg.ListType{Element: t}, nil
	}
	return t, nil
}

// single maps one value of f, ignoring its cardinality.
func (m protoMapper) single(f protoreflect.FieldDescriptor, depth int) (iceberg.Type, error) {
	switch f.Kind() {
	case protoreflect.BoolKind:
		return iceberg.PrimitiveTypes.Bool, nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return iceberg.PrimitiveTypes.Int32, nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return iceberg.PrimitiveTypes.Int64, nil
	case protoreflect.FloatKind:
		return iceberg.PrimitiveTypes.Float32, nil
	case protoreflect.DoubleKind:
		return iceberg.PrimitiveTypes.Float64, nil
	case protoreflect.StringKind, protoreflect.EnumKind:
		return iceberg.PrimitiveTypes.String, nil
	case protoreflect.BytesKind:
		return iceberg.PrimitiveTypes.Binary, nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		md := f.Message()
		if md.FullName() == timestampName {
			return iceberg.PrimitiveTypes.TimestampTz, nil
		}
		if wrapperValue(md) {
			return m.single(md.Fields().Get(0), depth+1)
		}
		if m.seen[md.FullName()] {
			return nil, fmt.Errorf("message %s contains itself, which no Iceberg column can hold", md.FullName())
		}
		m.seen[md.FullName()] = true
		defer delete(m.seen, md.FullName())
		fs, err := m.fields(md, depth)
		if err != nil {
			return nil, err
		}
		if len(fs) == 0 {
			return nil, fmt.Errorf("message %s has no fields", md.FullName())
		}
		return &iceberg.StructType{FieldList: fs}, nil
	}
	return nil, fmt.Errorf("unsupported protobuf kind %s", f.Kind())
}

// protoRow converts a decoded message to the generic values the
// appender takes.
func protoRow(msg protoreflect.Message) (map[string]any, error) {
	out := map[string]any{}
	fs := msg.Descriptor().Fields()
	for i := range fs.Len() {
		f := fs.Get(i)
		if f.HasPresence() && !msg.Has(f) {
			out[string(f.Name())] = nil
			continue
		}
		v, err := protoField(f, msg.Get(f))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		out[string(f.Name())] = v
	}
	return out, nil
}

func protoField(f protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch {
	case f.IsMap():
		var ents Entries
		var err error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			var e any
			if e, err = protoSingle(f.MapValue(), mv); err != nil {
				return false
			}
			ents = append(ents, [2]any{protoKey(k), e})
			return true
		})
		return ents, err
	case f.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range l.Len() {
			e, err := protoSingle(f, l.Get(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return protoSingle(f, v)
}

func protoKey(k protoreflect.MapKey) any {
	switch v := k.Interface().(type) {
	case uint32:
		return int64(v)
	default:
		return v
	}
}

func protoSingle(f protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch f.Kind() {
	case protoreflect.EnumKind:
		n := v.Enum()
		if ev := f.Enum().Values().ByNumber(n); ev != nil {
			return string(ev.Name()), nil
		}
		return fmt.Sprint(int32(n)), nil // an enum number this schema does not name
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u := v.Uint()
		if u > 1<<63-1 {
			return nil, fmt.Errorf("%d overflows long", u)
		}
		return int64(u), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return int64(v.Uint()), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		m := v.Message()
		md := m.Descriptor()
		if md.FullName() == timestampName {
			fs := md.Fields()
			sec := m.Get(fs.ByName("seconds")).Int()
			nanos := m.Get(fs.ByName("nanos")).Int()
			return time.Unix(sec, nanos).UTC(), nil
		}
		if wrapperValue(md) {
			return protoSingle(md.Fields().Get(0), m.Get(md.Fields().Get(0)))
		}
		return protoRow(m)
	case protoreflect.BytesKind:
		return append([]byte(nil), v.Bytes()...), nil
	}
	return v.Interface(), nil
}
