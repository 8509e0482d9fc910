package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

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
// a compressed batch) and a cached lookup per distinct id. A null value (a
// tombstone) and a null key pass: they carry no data to describe.

// SchemaIDs answers whether a schema id is registered under a subject:
// the schema registry, through a cache of its own (registry.IDCache).
type SchemaIDs interface {
	SubjectHasID(ctx context.Context, subject string, id int32) (bool, error)
}

// schemaDecompressor decompresses batches for validation; stateless and
// safe for concurrent use.
var schemaDecompressor = kgo.DefaultDecompressor()

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
		if recs, err = schemaDecompressor.Decompress(recs, kgo.CompressionCodecType(codec)); err != nil {
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
