package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/topicconfig"
)

// fakeSchemaIDs registers ids under subjects and counts lookups.
type fakeSchemaIDs struct {
	ids   map[string][]int32
	calls int
	err   error
}

func (f *fakeSchemaIDs) SubjectHasID(_ context.Context, subject string, id int32) (bool, error) {
	f.calls++
	for _, x := range f.ids[subject] {
		if x == id {
			return true, f.err
		}
	}
	return false, f.err
}

func framed(id int32, payload string) []byte {
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	return append(b, payload...)
}

// gzipBatch is batch with its records gzip-compressed.
func gzipBatch(t *testing.T, batch []byte) []byte {
	t.Helper()
	c, err := kgo.DefaultCompressor(kgo.GzipCompression())
	if err != nil {
		t.Fatal(err)
	}
	comp, codec := c.Compress(new(bytes.Buffer), batch[recordsOffset:])
	if codec != kgo.CodecGzip {
		t.Fatalf("codec %v", codec)
	}
	out := append(bytes.Clone(batch[:recordsOffset]), comp...)
	binary.BigEndian.PutUint16(out[21:], binary.BigEndian.Uint16(out[21:])|uint16(kgo.CodecGzip))
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	return out
}

func TestSchemaValidation(t *testing.T) {
	on := map[string]string{topicconfig.ValueSchemaValidation: "true"}
	both := map[string]string{topicconfig.ValueSchemaValidation: "true", topicconfig.KeySchemaValidation: "true"}
	good, other := framed(7, "payload"), framed(8, "payload")
	for _, tc := range []struct {
		name    string
		configs map[string]string
		recs    []record
		gzip    bool
		wantErr bool
	}{
		{"off", nil, []record{{value: []byte("plain")}}, false, false},
		{"registered id", on, []record{{value: good}, {value: good}}, false, false},
		{"id of another subject", on, []record{{value: good}, {value: other}}, false, true},
		{"no prefix", on, []record{{value: []byte("abc")}}, false, true},
		{"wrong magic", on, []record{{value: append([]byte{1}, good[1:]...)}}, false, true},
		{"tombstone passes", on, []record{{key: []byte("k"), value: nil}}, false, false},
		{"key not checked unless asked", on, []record{{key: []byte("k"), value: good}}, false, false},
		{"key checked", both, []record{{key: framed(3, "k"), value: good}}, false, false},
		{"bad key", both, []record{{key: []byte("k"), value: good}}, false, true},
		{"compressed, registered", on, []record{{value: good}}, true, false},
		{"compressed, unregistered", on, []record{{value: other}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := &fakeSchemaIDs{ids: map[string][]int32{"t-value": {7}, "t-key": {3}, "u-value": {8}}}
			g := &Gateway{opts: Options{SchemaIDs: ids}}
			batch := appendBatch(nil, 1, tc.recs)
			if tc.gzip {
				batch = gzipBatch(t, batch)
			}
			err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: tc.configs}, batch)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && ErrorFor(err) != kerr.InvalidRecord {
				t.Fatalf("err %v answers %v, want INVALID_RECORD", err, ErrorFor(err))
			}
		})
	}
}

// One lookup per distinct id of a batch; a registry that cannot answer is
// a retriable error, not INVALID_RECORD.
func TestSchemaValidationLookups(t *testing.T) {
	on := map[string]string{topicconfig.ValueSchemaValidation: "true"}
	ids := &fakeSchemaIDs{ids: map[string][]int32{"t-value": {7}}}
	g := &Gateway{opts: Options{SchemaIDs: ids}}
	batch := appendBatch(nil, 1, []record{{value: framed(7, "a")}, {value: framed(7, "b")}, {value: framed(7, "c")}})
	if err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: on}, batch); err != nil {
		t.Fatal(err)
	}
	if ids.calls != 1 {
		t.Fatalf("%d lookups for one id", ids.calls)
	}
	ids.err = errors.New("controller away")
	err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: on}, batch)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	g.opts.SchemaIDs = nil
	if err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: on}, batch); ErrorFor(err) != kerr.InvalidRecord {
		t.Fatalf("no registry: err = %v", err)
	}
}

// The record walk reads untrusted batches: it must never panic, and a
// batch it accepts must hold what it reports.
func FuzzSchemaRecordFields(f *testing.F) {
	f.Add(appendBatch(nil, 1, []record{{key: []byte("k"), value: framed(1, "v")}, {value: nil}}))
	f.Add(appendBatch(nil, 1, []record{{key: nil, value: []byte{0}}}))
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = walkRecordFields(b, func(i int, key, value []byte) error {
			_, _ = schemaIDPrefix(key)
			_, _ = schemaIDPrefix(value)
			return nil
		})
	})
}

// A compressed batch whose records decompress past the store's bound is
// refused without decompressing it all: franz-go's decompressor would
// have inflated it (up to 2 GiB) and passed it.
func TestSchemaValidationDecompressionBound(t *testing.T) {
	on := map[string]string{topicconfig.ValueSchemaValidation: "true"}
	ids := &fakeSchemaIDs{ids: map[string][]int32{"t-value": {7}}}
	g := &Gateway{opts: Options{SchemaIDs: ids}}
	big := framed(7, string(make([]byte, maxValidateRecordBytes)))
	batch := gzipBatch(t, appendBatch(nil, 1, []record{{value: big}}))
	err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: on}, batch)
	if err == nil || ErrorFor(err) != kerr.InvalidRecord {
		t.Fatalf("a %d-byte record in a %d-byte gzip batch: err %v, want INVALID_RECORD", len(big), len(batch), err)
	}
	// Under the bound, every codec the bounded reader serves decodes.
	small := appendBatch(nil, 1, []record{{value: framed(7, "payload")}})
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		c, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		comp, typ := c.Compress(new(bytes.Buffer), small[recordsOffset:])
		b := append(bytes.Clone(small[:recordsOffset]), comp...)
		binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|uint16(typ))
		if err := g.checkSchemaIDs(context.Background(), &Topic{Name: "t", Configs: on}, b); err != nil {
			t.Errorf("codec %v: %v", typ, err)
		}
	}
}
