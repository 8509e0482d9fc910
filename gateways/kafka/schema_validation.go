package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/topicconfig"
)

// Broker-side schema validation (Confluent's
// confluent.key.schema.validation and confluent.value.schema.validation
// topic configs). With one set, produce refuses the partition's batch with
// INVALID_RECORD when a record's key (or value) does not start with
// Confluent's wire prefix, the magic byte 0 and a 4-byte big-endian schema
// id, naming a schema registered under the subject <topic>-key (or
// <topic>-value). Only the 5-byte prefix is read, never the payload, so
// the check costs a walk over the record headers (after decompression for
// a compressed batch, bounded as the store bounds it) and a cached lookup
// per distinct id. A null value (a
// tombstone) and a null key pass: they carry no data to describe.

// SchemaIDs answers whether a schema id is registered under a subject:
// the schema registry, through a cache of its own (registry.IDCache).
type SchemaIDs interface {
	SubjectHasID(ctx context.Context, subject string, id int32) (bool, error)
}

// maxValidateRecordBytes bounds a batch's records once decompressed for
// validation, the bound the store puts on a batch it appends
// (logstore.MaxBatchRecordBytes): a batch past it is a decompression bomb
// the store would refuse anyway, and validation must not spend the memory
// to find out.
const maxValidateRecordBytes = 64 << 20

// zstdValidateWindow bounds a zstd frame's window as the store does: 8
// MiB is what the format asks every decoder to support.
const zstdValidateWindow = 8 << 20

// errRecordsTooLarge: a compressed batch whose records decompress past
// maxValidateRecordBytes.
var errRecordsTooLarge = fmt.Errorf("records decompress past %d bytes", maxValidateRecordBytes)

// decompressRecords decompresses a batch's records through a stream
// read to at most limit bytes, so memory grows with the bytes actually
// produced and never with a size the batch claims (franz-go's
// decompressor reads up to 2 GiB).
func decompressRecords(codec int, body []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch codec {
	case 1:
		gz, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		r = gz
	case 2:
		return snappyRecords(body, limit)
	case 3:
		r = lz4.NewReader(bytes.NewReader(body))
	case 4:
		zs, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(zstdValidateWindow), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, err
		}
		defer zs.Close()
		r = zs
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errRecordsTooLarge
	}
	return out, nil
}

var xerialSnappyMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// snappyRecords decodes one raw snappy block (librdkafka, franz-go) or
// xerial's framed blocks (the Java client), checking each block's
// declared length against what is left of limit before decoding it.
func snappyRecords(body []byte, limit int64) ([]byte, error) {
	blocks := [][]byte{body}
	if len(body) >= 16 && bytes.Equal(body[:8], xerialSnappyMagic) {
		blocks = nil
		for src := body[16:]; len(src) > 0; {
			if len(src) < 4 {
				return nil, io.ErrUnexpectedEOF
			}
			n := binary.BigEndian.Uint32(src)
			if uint64(n) > uint64(len(src)-4) {
				return nil, fmt.Errorf("snappy block of %d bytes with %d left", n, len(src)-4)
			}
			blocks, src = append(blocks, src[4:4+n]), src[4+n:]
		}
	}
	var out []byte
	for _, b := range blocks {
		n, err := snappy.DecodedLen(b)
		if err != nil {
			return nil, err
		}
		if int64(len(out))+int64(n) > limit {
			return nil, errRecordsTooLarge
		}
		if out, err = snappyAppend(out, b, n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func snappyAppend(out, block []byte, n int) ([]byte, error) {
	dec, err := snappy.Decode(make([]byte, n), block)
	if err != nil {
		return nil, err
	}
	return append(out, dec...), nil
}

// checkSchemaIDs applies the topic's schema validation to a batch that
// passed checkBatch.
func (g *Gateway) checkSchemaIDs(ctx context.Context, t *Topic, batch []byte) error {
	keys := t.Configs[topicconfig.KeySchemaValidation] == "true"
	values := t.Configs[topicconfig.ValueSchemaValidation] == "true"
	if !keys && !values {
		return nil
	}
	if g.opts.SchemaIDs == nil {
		return fmt.Errorf("%w: topic %s asks for schema validation, and this gateway has no schema registry", kerr.InvalidRecord, t.Name)
	}
	type want struct {
		subject string
		id      int32
	}
	seen := map[want]bool{}
	check := func(subject string, i int, field []byte) error {
		id, err := schemaIDPrefix(field)
		if err != nil {
			return fmt.Errorf("%w: record %d: %v for subject %s", kerr.InvalidRecord, i, err, subject)
		}
		w := want{subject, id}
		if seen[w] {
			return nil
		}
		ok, err := g.opts.SchemaIDs.SubjectHasID(ctx, subject, id)
		if err != nil {
			return fmt.Errorf("%w: checking schema id %d of subject %s: %v", ErrUnavailable, id, subject, err)
		}
		if !ok {
			return fmt.Errorf("%w: record %d: schema id %d is not registered under subject %s", kerr.InvalidRecord, i, id, subject)
		}
		seen[w] = true
		return nil
	}
	return walkRecordFields(batch, func(i int, key, value []byte) error {
		if keys && key != nil {
			if err := check(t.Name+"-key", i, key); err != nil {
				return err
			}
		}
		if values && value != nil {
			if err := check(t.Name+"-value", i, value); err != nil {
				return err
			}
		}
		return nil
	})
}

// Why a key or value has no schema id.
var (
	errNoSchemaPrefix = errors.New("shorter than the 5-byte schema id prefix")
	errSchemaMagic    = errors.New("does not start with the schema id magic byte 0")
)

// schemaIDPrefix reads Confluent's wire prefix.
func schemaIDPrefix(b []byte) (int32, error) {
	switch {
	case len(b) < 5:
		return 0, errNoSchemaPrefix
	case b[0] != 0:
		return 0, errSchemaMagic
	}
	return int32(binary.BigEndian.Uint32(b[1:5])), nil
}

// recordsOffset is where a RecordBatch v2's records start.
const recordsOffset = 61

// walkRecordFields calls fn with each record's key and value (nil when
// null) of one RecordBatch v2, decompressing it first if need be. A batch
// whose records do not parse is INVALID_RECORD.
func walkRecordFields(batch []byte, fn func(i int, key, value []byte) error) error {
	if len(batch) < recordsOffset {
		return fmt.Errorf("%w: %d bytes cannot hold a record batch", kerr.InvalidRecord, len(batch))
	}
	count := int32(binary.BigEndian.Uint32(batch[57:61]))
	recs := batch[recordsOffset:]
	if codec := binary.BigEndian.Uint16(batch[21:23]) & 0x07; codec != 0 {
		var err error
		if recs, err = decompressRecords(int(codec), recs, maxValidateRecordBytes); err != nil {
			return fmt.Errorf("%w: decompressing the batch: %v", kerr.InvalidRecord, err)
		}
	}
	bad := func(i int, what string) error {
		return fmt.Errorf("%w: record %d: %s", kerr.InvalidRecord, i, what)
	}
	for i := 0; i < int(count); i++ {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return bad(i, "truncated or bad length")
		}
		rec := recs[n : n+int(length)]
		recs = recs[n+int(length):]
		if len(rec) < 1 {
			return bad(i, "empty record")
		}
		p := rec[1:]  // attributes
		for range 2 { // timestamp delta, offset delta
			_, n := binary.Varint(p)
			if n <= 0 {
				return bad(i, "bad varint")
			}
			p = p[n:]
		}
		field := func() ([]byte, bool) {
			l, n := binary.Varint(p)
			if n <= 0 || l < -1 || int64(len(p)-n) < l {
				return nil, false
			}
			p = p[n:]
			if l == -1 {
				return nil, true
			}
			f := p[:l:l]
			p = p[l:]
			return f, true
		}
		key, ok := field()
		if !ok {
			return bad(i, "bad key")
		}
		value, ok := field()
		if !ok {
			return bad(i, "bad value")
		}
		if err := fn(i, key, value); err != nil {
			return err
		}
	}
	return nil
}
