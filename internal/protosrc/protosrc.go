package protosrc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Source is the protocompile input for a schema file named name whose
// text is either .proto source or a base64 FileDescriptorProto
// (Confluent's format=serialized, what its Python serializer registers).
func Source(name, text string) protocompile.SearchResult {
	if fdp, ok := descriptorFromBase64(text); ok {
		fdp.Name = proto.String(name)
		return protocompile.SearchResult{Proto: fdp}
	}
	return protocompile.SearchResult{Source: strings.NewReader(text)}
}

// descriptorFromBase64 decodes text when it is a base64 FileDescriptorProto.
func descriptorFromBase64(text string) (*descriptorpb.FileDescriptorProto, bool) {
	t := strings.TrimSpace(text)
	if t == "" || strings.ContainsAny(t, " \t\r\n;{") {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	fdp := new(descriptorpb.FileDescriptorProto)
	if err := proto.Unmarshal(b, fdp); err != nil {
		return nil, false
	}
	// protoc fills in every field's json_name, and the linker takes one
	// that is missing for a custom name "", which clashes with the next;
	// descriptors built at run time (Python's descriptor_pb2) have none.
	var fill func(ms []*descriptorpb.DescriptorProto)
	fill = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.GetField() {
				if f.GetJsonName() == "" {
					f.JsonName = proto.String(jsonCamelCase(f.GetName()))
				}
			}
			fill(m.GetNestedType())
		}
	}
	fill(fdp.GetMessageType())
	return fdp, true
}

// jsonCamelCase is protoc's default JSON name of a field: underscores
// dropped, the letter after each one upper-cased.
func jsonCamelCase(s string) string {
	b := make([]byte, 0, len(s))
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			upper = true
			continue
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		b = append(b, c)
	}
	return string(b)
}

// Main is the file name a registered schema's own text compiles under;
// its references compile under the names the registry gives them.
const Main = "schema.proto"

// Compile links the schema text with the referenced files (name -> text)
// and Protobuf's standard imports, and returns the schema's file. The
// error is the parser's first, naming the position.
func Compile(text string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == Main {
			return Source(path, text), nil
		}
		t, ok := refs[path]
		if !ok {
			return protocompile.SearchResult{}, fmt.Errorf("%s: %w (no reference names it)", path, protoregistry.NotFound)
		}
		return Source(path, t), nil
	}))
	var first error
	c := protocompile.Compiler{
		Resolver:       resolver,
		MaxParallelism: 1,
		Reporter: reporter.NewReporter(func(err reporter.ErrorWithPos) error {
			if first == nil {
				first = err
			}
			return err
		}, nil),
	}
	out, err := c.Compile(context.Background(), Main)
	if err != nil {
		if first != nil {
			err = first
		}
		var pe protocompile.PanicError
		if errors.As(err, &pe) {
			err = errors.New("the parser failed on this schema")
		}
		return nil, err
	}
	return out[0], nil
}
