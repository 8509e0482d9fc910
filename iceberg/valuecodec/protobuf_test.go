package valuecodec

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

const protoOrder = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Order {
  int64 id = 1;
  uint32 qty = 2;
  optional string note = 3;
  Status status = 4;
  repeated string tags = 5;
  map<int32, double> attrs = 6;
  Addr addr = 7;
  google.protobuf.Timestamp at = 8;
  google.protobuf.Int64Value maybe = 9;
  bytes raw = 10;
  message Addr { string city = 1; }
}
enum Status { NEW = 0; PAID = 1; }
message Other { string x = 1; }
`

func TestProtobufColumns(t *testing.T) {
	c, err := Compile(Schema{ID: 9, Type: TypeProtobuf, Text: protoOrder})
	if err != nil {
		t.Fatal(err)
	}
	got := fieldTypes(c.Fields())
	want := map[string]string{
		"id": "long", "qty": "long", "note": "string", "status": "string",
		"tags": "list<string>", "attrs": "map<int, double>",
		"addr": "struct<11: city: optional string>", "at": "timestamptz",
		"maybe": "long", "raw": "binary",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("column %s: type %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("columns %v", got)
	}
}

// protoValue encodes an Order with the schema's own descriptors.
func protoValue(t *testing.T, set func(m *dynamicpb.Message)) []byte {
	t.Helper()
	fd := compiledFile(t)
	m := dynamicpb.NewMessage(fd.Messages().ByName("Order"))
	set(m)
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compiledFile(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	fd, err := protoFile(Schema{ID: 9, Text: protoOrder})
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func TestProtobufDecodeAppend(t *testing.T) {
	c, err := Compile(Schema{ID: 9, Type: TypeProtobuf, Text: protoOrder})
	if err != nil {
		t.Fatal(err)
	}
	payload := protoValue(t, func(m *dynamicpb.Message) {
		md := m.Descriptor()
		f := md.Fields()
		m.Set(f.ByName("id"), protoreflect.ValueOfInt64(42))
		m.Set(f.ByName("qty"), protoreflect.ValueOfUint32(4_000_000_000))
		m.Set(f.ByName("status"), protoreflect.ValueOfEnum(1))
		l := m.Mutable(f.ByName("tags")).List()
		l.Append(protoreflect.ValueOfString("a"))
		mp := m.Mutable(f.ByName("attrs")).Map()
		mp.Set(protoreflect.ValueOfInt32(7).MapKey(), protoreflect.ValueOfFloat64(2.5))
		addr := m.Mutable(f.ByName("addr")).Message()
		addr.Set(addr.Descriptor().Fields().ByName("city"), protoreflect.ValueOfString("Oslo"))
		at := m.Mutable(f.ByName("at")).Message()
		at.Set(at.Descriptor().Fields().ByName("seconds"), protoreflect.ValueOfInt64(1_700_000_000))
		m.Set(f.ByName("raw"), protoreflect.ValueOfBytes([]byte{1}))
	})
	value := frame(9, AppendMessageIndexes(nil, []int{0}))
	value = append(value, payload...)
	row := decodeFramed(t, c, value)
	b := newBatch(t, c.Fields())
	if err := b.cols.Append(row); err != nil {
		t.Fatalf("Append: %v", err)
	}
	rec := b.record()
	defer rec.Release()
	if v := column(t, rec, "qty").(*array.Int64).Value(0); v != 4_000_000_000 {
		t.Errorf("qty %d", v)
	}
	if v := column(t, rec, "status").(*array.String).Value(0); v != "PAID" {
		t.Errorf("status %q", v)
	}
	if !column(t, rec, "note").IsNull(0) || !column(t, rec, "maybe").IsNull(0) {
		t.Errorf("unset optional fields are not null")
	}
	attrs := column(t, rec, "attrs").(*array.Map)
	if attrs.Keys().(*array.Int32).Value(0) != 7 || attrs.Items().(*array.Float64).Value(0) != 2.5 {
		t.Errorf("attrs %v", attrs)
	}
	if v := column(t, rec, "addr").(*array.Struct).Field(0).(*array.String).Value(0); v != "Oslo" {
		t.Errorf("addr.city %q", v)
	}
	if v := column(t, rec, "at").(*array.Timestamp).Value(0); int64(v) != 1_700_000_000_000_000 {
		t.Errorf("at %d", v)
	}
}

func TestProtobufBadInput(t *testing.T) {
	c, err := Compile(Schema{ID: 9, Type: TypeProtobuf, Text: protoOrder})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		payload []byte
		want    error
	}{
		"no indexes":    {nil, ErrFrame},
		"bad count":     {[]byte{0x7f}, ErrFrame},
		"other message": {AppendMessageIndexes(nil, []int{2}), ErrDecode},
		"no message":    {AppendMessageIndexes(nil, []int{5}), ErrDecode},
		"bad wire":      {append([]byte{0}, 0x0a, 0xff), ErrDecode},
	} {
		if _, err := c.Decode(tc.payload); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", name, err, tc.want)
		}
	}
	for name, text := range map[string]string{
		"syntax":    `message {`,
		"recursive": `syntax = "proto3"; message N { N next = 1; }`,
		"empty":     `syntax = "proto3";`,
	} {
		if _, err := Compile(Schema{ID: 1, Type: TypeProtobuf, Text: text}); !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", name, err)
		}
	}
}

func TestMessageIndexesRoundTrip(t *testing.T) {
	for _, idx := range [][]int{{0}, {1}, {0, 2}, {3, 0, 1}} {
		got, rest, err := messageIndexes(append(AppendMessageIndexes(nil, idx), 0xaa))
		if err != nil || len(rest) != 1 || len(got) != len(idx) {
			t.Fatalf("%v: got %v rest %v err %v", idx, got, rest, err)
		}
		for i := range idx {
			if got[i] != idx[i] {
				t.Errorf("%v: got %v", idx, got)
			}
		}
	}
}
