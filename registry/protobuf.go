package registry

import (
	"encoding/base64"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/aerostream/aerostream/internal/protosrc"
)

// Protobuf schemas parse with protocompile, as .proto source or as a
// base64 FileDescriptorProto (what Confluent's Python serializer sends).
// Compatibility follows Confluent's documented rules, checked on the
// linked descriptors: protobuf decodes by field number and wire type, so
// names may change and fields may come and go, but a field's number must
// keep a wire-compatible type, required fields may neither come nor go,
// and oneofs may not lose fields or absorb existing ones.

type protoSchema struct {
	fd   protoreflect.FileDescriptor
	text string
}

func parseProtobuf(text string, refs []refSchema) (parsedSchema, error) {
	files := map[string]string{}
	for _, r := range refs {
		files[r.name] = r.schema.Schema
	}
	fd, err := protosrc.Compile(text, files)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	return &protoSchema{fd: fd, text: text}, nil
}

func (p *protoSchema) fingerprint() string { return normalizeProtoText(p.text) }
func (p *protoSchema) normalized() string  { return normalizeProtoText(p.text) }

// serialized is the schema as a base64 FileDescriptorProto, Confluent's
// format=serialized.
func (p *protoSchema) serialized() (string, error) {
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(p.fd))
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// normalizeProtoText drops blank lines and the spaces around each line.
func normalizeProtoText(text string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		if l := strings.TrimSpace(line); l != "" {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (p *protoSchema) readErrors(writer parsedSchema) []string {
	w, ok := writer.(*protoSchema)
	if !ok {
		return []string{"not a Protobuf schema"}
	}
	return protoReadErrors(p.fd, w.fd)
}

// protoMessages lists a file's messages, nested ones too, by full name.
func protoMessages(fd protoreflect.FileDescriptor) map[protoreflect.FullName]protoreflect.MessageDescriptor {
	out := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var walk func(ms protoreflect.MessageDescriptors)
	walk = func(ms protoreflect.MessageDescriptors) {
		for i := range ms.Len() {
			m := ms.Get(i)
			if m.IsMapEntry() {
				continue
			}
			out[m.FullName()] = m
			walk(m.Messages())
		}
	}
	walk(fd.Messages())
	return out
}

// wireGroup classes scalar kinds that read each other's encoding.
func wireGroup(k protoreflect.Kind) int {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.Uint64Kind,
		protoreflect.BoolKind, protoreflect.EnumKind:
		return 1
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return 2
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return 3
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return 4
	case protoreflect.StringKind, protoreflect.BytesKind:
		return 5
	case protoreflect.FloatKind:
		return 6
	case protoreflect.DoubleKind:
		return 7
	case protoreflect.MessageKind:
		return 8
	case protoreflect.GroupKind:
		return 9
	}
	return 0
}

func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

func lengthDelimited(k protoreflect.Kind) bool {
	return k == protoreflect.StringKind || k == protoreflect.BytesKind || k == protoreflect.MessageKind
}

// protoReadErrors lists what stops a reader with schema r from reading
// what a writer with schema w wrote, in Confluent's terms.
func protoReadErrors(r, w protoreflect.FileDescriptor) []string {
	var out []string
	add := func(kind, where string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s", kind, fmt.Sprintf(where, args...)))
	}
	if r.Package() != w.Package() {
		add("PACKAGE_CHANGED", "package %q became %q", w.Package(), r.Package())
	}
	rms, wms := protoMessages(r), protoMessages(w)
	for name, wm := range wms {
		rm, ok := rms[name]
		if !ok {
			add("MESSAGE_REMOVED", "message %s", name)
			continue
		}
		protoMessageErrors(rm, wm, add)
	}
	return sortedStrings(out)
}

func protoMessageErrors(rm, wm protoreflect.MessageDescriptor, add func(kind, where string, args ...any)) {
	wfs, rfs := wm.Fields(), rm.Fields()
	for i := range wfs.Len() {
		wf := wfs.Get(i)
		at := fmt.Sprintf("%s field %d (%s)", wm.FullName(), wf.Number(), wf.Name())
		rf := rfs.ByNumber(wf.Number())
		if rf == nil {
			switch {
			case wf.Cardinality() == protoreflect.Required:
				add("REQUIRED_FIELD_REMOVED", "%s", at)
			case realOneof(wf) != nil:
				add("ONEOF_FIELD_REMOVED", "%s left oneof %s", at, realOneof(wf).Name())
			}
			continue
		}
		wk, rk := wf.Kind(), rf.Kind()
		switch {
		case wk == protoreflect.MessageKind && rk == protoreflect.MessageKind,
			wk == protoreflect.GroupKind && rk == protoreflect.GroupKind:
			if wf.Message().FullName() != rf.Message().FullName() {
				add("FIELD_NAMED_TYPE_CHANGED", "%s: %s became %s", at, wf.Message().FullName(), rf.Message().FullName())
			}
		case wk == protoreflect.EnumKind && rk == protoreflect.EnumKind:
			if wf.Enum().FullName() != rf.Enum().FullName() {
				add("FIELD_NAMED_TYPE_CHANGED", "%s: %s became %s", at, wf.Enum().FullName(), rf.Enum().FullName())
			}
		case (wk == protoreflect.MessageKind) != (rk == protoreflect.MessageKind):
			add("FIELD_KIND_CHANGED", "%s: %s became %s", at, wk, rk)
		case wireGroup(wk) != wireGroup(rk):
			add("FIELD_SCALAR_KIND_CHANGED", "%s: %s became %s", at, wk, rk)
		}
		switch {
		case rf.Cardinality() == protoreflect.Required && wf.Cardinality() != protoreflect.Required:
			add("REQUIRED_FIELD_ADDED", "%s became required", at)
		case (rf.Cardinality() == protoreflect.Repeated) != (wf.Cardinality() == protoreflect.Repeated) &&
			!(lengthDelimited(wk) && lengthDelimited(rk)) && !rf.IsPacked() && !wf.IsPacked():
			add("FIELD_LABEL_CHANGED", "%s: %s became %s", at, wf.Cardinality(), rf.Cardinality())
		}
		if ro := realOneof(rf); ro != nil && realOneof(wf) == nil {
			// Fields joining a oneof: one alone into a new oneof is fine;
			// into a oneof that existed, or several at once, is not.
			existed := false
			if wo := wm.Oneofs().ByName(ro.Name()); wo != nil && !wo.IsSynthetic() {
				existed = true
			}
			moved := 0
			for j := range ro.Fields().Len() {
				of := ro.Fields().Get(j)
				if wof := wfs.ByNumber(of.Number()); wof != nil && realOneof(wof) == nil {
					moved++
				}
			}
			switch {
			case existed:
				add("FIELD_MOVED_TO_EXISTING_ONEOF", "%s moved into oneof %s", at, ro.Name())
			case moved > 1:
				add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", "%s moved into oneof %s with %d others", at, ro.Name(), moved-1)
			}
		}
	}
	for i := range rfs.Len() {
		rf := rfs.Get(i)
		if wfs.ByNumber(rf.Number()) == nil && rf.Cardinality() == protoreflect.Required {
			add("REQUIRED_FIELD_ADDED", "%s field %d (%s)", rm.FullName(), rf.Number(), rf.Name())
		}
	}
}
