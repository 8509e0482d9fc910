package adminapi

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/aerostream/aerostream/internal/protosrc"
)

// Keys and values written by a Confluent serializer start with the magic
// byte 0 and a 4-byte big-endian schema id; a Protobuf payload then has
// the message indexes (a zigzag varint count, then that many indexes; a
// lone 0 means the first message). The decoder turns those into JSON text
// through the registered schema; anything else is shown as UTF-8 when it
// is valid UTF-8, hex otherwise. A payload that its schema cannot read is
// shown as hex too, so a bad record never fails a page.

// decoder caches compiled schemas by id: an id never changes meaning.
type decoder struct {
	src SchemaSource
	mu  struct {
		sync.Mutex
		byID map[int32]*compiled
	}
}

// compiled is a schema ready to decode, or why it is not.
type compiled struct {
	typ    string // avro, protobuf or json
	avro   avro.Schema
	proto  protoreflect.FileDescriptor
	err    error
	expiry time.Time // for a failed lookup: when to ask again
}

const (
	maxCachedSchemas = 1024
	// failedSchemaTTL keeps a failed lookup from costing a registry read
	// per record of a page, yet lets a schema registered later be seen.
	failedSchemaTTL = 10 * time.Second
)

func newDecoder(src SchemaSource) *decoder {
	d := &decoder{src: src}
	d.mu.byID = map[int32]*compiled{}
	return d
}

// plainValue shows b without schemas.
func plainValue(b []byte) Value {
	switch {
	case b == nil:
		return Value{Encoding: "null"}
	case utf8.Valid(b):
		return Value{Encoding: "utf8", Text: string(b)}
	}
	return Value{Encoding: "hex", Text: hex.EncodeToString(b)}
}

// decode shows b, through its schema when it names one.
func (d *decoder) decode(ctx context.Context, b []byte) Value {
	if d.src == nil || len(b) < 5 || b[0] != 0 {
		return plainValue(b)
	}
	id := int32(binary.BigEndian.Uint32(b[1:5]))
	// A 0 byte and an id are not text: what no schema decodes is hex.
	c := d.schema(ctx, id)
	if c.err != nil {
		return Value{Encoding: "hex", Text: hex.EncodeToString(b)}
	}
	text, err := c.decode(b[5:])
	if err != nil {
		return Value{Encoding: "hex", SchemaID: &id, Text: hex.EncodeToString(b)}
	}
	return Value{Encoding: c.typ, SchemaID: &id, Text: text}
}

func (d *decoder) schema(ctx context.Context, id int32) *compiled {
	now := time.Now()
	d.mu.Lock()
	c := d.mu.byID[id]
	d.mu.Unlock()
	if c != nil && (c.err == nil || now.Before(c.expiry)) {
		return c
	}
	s, err := d.src.Schema(ctx, id)
	if err != nil {
		c = &compiled{err: err}
	} else {
		c = compileSchema(s)
	}
	c.expiry = now.Add(failedSchemaTTL)
	d.mu.Lock()
	if len(d.mu.byID) >= maxCachedSchemas {
		clear(d.mu.byID)
	}
	d.mu.byID[id] = c
	d.mu.Unlock()
	return c
}

// compileSchema parses a registered schema for decoding.
func compileSchema(s Schema) *compiled {
	switch strings.ToUpper(s.Type) {
	case "", "AVRO": // the registry's default type
		cache := &avro.SchemaCache{}
		for _, ref := range s.Refs {
			if _, err := avro.ParseWithCache(ref.Text, "", cache); err != nil {
				return &compiled{err: fmt.Errorf("avro reference %s: %w", ref.Name, err)}
			}
		}
		sch, err := avro.ParseWithCache(s.Text, "", cache)
		if err != nil {
			return &compiled{err: err}
		}
		return &compiled{typ: "avro", avro: sch}
	case "PROTOBUF":
		fd, err := compileProto(s)
		if err != nil {
			return &compiled{err: err}
		}
		return &compiled{typ: "protobuf", proto: fd}
	case "JSON":
		return &compiled{typ: "json"}
	}
	return &compiled{err: fmt.Errorf("schema type %q", s.Type)}
}

// compileProto links a Protobuf schema with the files its references
// name, as the registry does when it checks them.
func compileProto(s Schema) (protoreflect.FileDescriptor, error) {
	refs := make(map[string]string, len(s.Refs))
	for _, r := range s.Refs {
		refs[r.Name] = r.Text
	}
	return protosrc.Compile(s.Text, refs)
}

var errMessageIndex = errors.New("bad protobuf message indexes")

// maxMessageIndexes bounds the index list of a Protobuf payload.
const maxMessageIndexes = 64

func (c *compiled) decode(b []byte) (string, error) {
	switch c.typ {
	case "avro":
		var v any
		if err := avro.Unmarshal(c.avro, b, &v); err != nil {
			return "", err
		}
		if v == nil && c.avro.Type() != avro.Null && c.avro.Type() != avro.Union {
			return "", errors.New("the bytes do not decode with the schema")
		}
		out, err := json.Marshal(jsonSafe(v))
		return string(out), err
	case "protobuf":
		n, k := binary.Varint(b)
		if k <= 0 || n < 0 || n > maxMessageIndexes {
			return "", errMessageIndex
		}
		b = b[k:]
		idx := []int64{0}
		if n > 0 {
			idx = idx[:0]
			for range n {
				v, k := binary.Varint(b)
				if k <= 0 || v < 0 {
					return "", errMessageIndex
				}
				idx = append(idx, v)
				b = b[k:]
			}
		}
		msgs := c.proto.Messages()
		var md protoreflect.MessageDescriptor
		for _, i := range idx {
			if i >= int64(msgs.Len()) {
				return "", fmt.Errorf("%w: message %d of %d", errMessageIndex, i, msgs.Len())
			}
			md = msgs.Get(int(i))
			msgs = md.Messages()
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(b, m); err != nil {
			return "", err
		}
		out, err := protojson.Marshal(m)
		if err != nil {
			return "", err
		}
		// protojson's output spacing is deliberately unstable; compact it.
		var buf bytes.Buffer
		if err := json.Compact(&buf, out); err != nil {
			return "", err
		}
		return buf.String(), nil
	case "json":
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	return "", fmt.Errorf("schema type %q", c.typ)
}

// jsonSafe turns what hamba/avro decodes into values encoding/json takes:
// maps keyed by something other than strings are not among them.
func jsonSafe(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonSafe(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = jsonSafe(e)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonSafe(e)
		}
		return out
	}
	return v
}
