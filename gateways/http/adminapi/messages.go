package adminapi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The message inspector reads a partition through LogSource.Fetch, the
// backend fetch the Kafka gateway serves from, so a cold offset is read
// from the tier as a consumer's would be. A request reads at most
// maxBytesPerRequest bytes (one fetch of fetchMaxBytes at a time) and
// returns at most limit records, whatever the partition holds.

type message struct {
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"`
	Key       Value    `json:"key"`
	Value     Value    `json:"value"`
	Headers   []header `json:"headers"`
}

type header struct {
	Key   string `json:"key"`
	Value Value  `json:"value"`
}

// Value is a decoded key, value or header value.
type Value struct {
	Encoding string `json:"encoding"` // avro, protobuf, json, utf8, hex or null
	SchemaID *int32 `json:"schema_id,omitempty"`
	Text     string `json:"text"`
}

type messagesAnswer struct {
	Topic         string    `json:"topic"`
	Partition     int32     `json:"partition"`
	Messages      []message `json:"messages"`
	NextOffset    int64     `json:"next_offset"`
	HighWatermark int64     `json:"high_watermark"`
}

// intParam parses an optional integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, lo, hi int64) (int64, bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, badParam("%s=%q is not an integer", name, s)
	}
	if v < lo || v > hi {
		return 0, false, badParam("%s=%d is out of range [%d, %d]", name, v, lo, hi)
	}
	return v, true, nil
}

func (a *API) getMessages(_ http.ResponseWriter, r *http.Request) (any, error) {
	// Reading records is reading the topic's data: READ, as a consumer
	// needs, not only DESCRIBE.
	t, err := a.topic(r, OpRead, r.PathValue("t"))
	if err != nil {
		return nil, err
	}
	if a.opts.Log == nil {
		return nil, unavailable("the partition log")
	}
	q := r.URL.Query()
	if q.Get("partition") == "" {
		return nil, badParam("partition is required (0 to %d)", len(t.Partitions)-1)
	}
	part, _, err := intParam(r, "partition", 0, int64(len(t.Partitions))-1)
	if err != nil {
		return nil, err
	}
	limit, ok, err := intParam(r, "limit", 1, MaxLimit)
	if err != nil {
		return nil, err
	}
	if !ok {
		limit = DefaultLimit
	}
	offset, hasOffset, err := intParam(r, "offset", 0, 1<<62)
	if err != nil {
		return nil, err
	}
	ts, hasTS, err := intParam(r, "timestamp", 0, 1<<62)
	if err != nil {
		return nil, err
	}
	if hasOffset && hasTS {
		return nil, badParam("give offset or timestamp, not both")
	}
	p := int32(part)
	ctx := r.Context()
	st, err := a.opts.Log.PartitionStats(ctx, t.Name, p)
	if err != nil {
		return nil, err
	}
	ans := messagesAnswer{Topic: t.Name, Partition: p, Messages: []message{}, HighWatermark: st.HighWatermark}
	switch {
	case hasTS:
		if offset, err = a.opts.Log.OffsetForTimestamp(ctx, t.Name, p, ts); err != nil {
			return nil, err
		}
		if offset < 0 {
			ans.NextOffset = st.HighWatermark // nothing at or after ts
			return ans, nil
		}
	case !hasOffset:
		// Without a position, the latest records: what a person opening
		// the inspector looks for first.
		offset = max(st.LogStart, st.HighWatermark-limit)
	case offset < st.LogStart || offset > st.HighWatermark:
		return nil, fmt.Errorf("%w: offset %d is outside the log of %s/%d, [%d, %d]",
			ErrOffsetOutOfRange, offset, t.Name, p, st.LogStart, st.HighWatermark)
	}
	ans.NextOffset = offset
	read := 0
	for len(ans.Messages) < int(limit) && ans.NextOffset < ans.HighWatermark && read < maxBytesPerRequest {
		f, err := a.opts.Log.Fetch(ctx, t.Name, p, ans.NextOffset, int32(min(fetchMaxBytes, maxBytesPerRequest-read)))
		if err != nil {
			if len(ans.Messages) == 0 {
				return nil, err
			}
			break // answer what was read
		}
		ans.HighWatermark = max(ans.HighWatermark, f.HighWatermark)
		if len(f.Batches) == 0 {
			break
		}
		read += len(f.Batches)
		next, err := a.appendRecords(r, &ans.Messages, f.Batches, ans.NextOffset, int(limit))
		if err != nil {
			return nil, err
		}
		if next <= ans.NextOffset {
			break // no progress: a partial batch at the end of the read
		}
		ans.NextOffset = next
	}
	return ans, nil
}

// appendRecords decodes the records of batches at or after from into
// msgs, up to limit in all, and returns the offset to read next.
func (a *API) appendRecords(r *http.Request, msgs *[]message, batches []byte, from int64, limit int) (int64, error) {
	next := from
	err := walkBatches(batches, func(rec record) bool {
		if rec.offset < from {
			return true
		}
		if len(*msgs) >= limit {
			return false
		}
		m := message{Offset: rec.offset, Timestamp: rec.timestamp, Headers: []header{}}
		m.Key = a.decoder.decode(r.Context(), rec.key)
		m.Value = a.decoder.decode(r.Context(), rec.value)
		for _, h := range rec.headers {
			m.Headers = append(m.Headers, header{Key: h.key, Value: plainValue(h.value)})
		}
		*msgs = append(*msgs, m)
		next = rec.offset + 1
		return true
	}, func(batchEnd int64) {
		// A control batch, or the end of a batch whose records were all
		// before from: its offsets are done with.
		next = max(next, batchEnd)
	})
	return next, err
}

// record is one decoded record of a batch.
type record struct {
	offset, timestamp int64
	key, value        []byte // nil when null
	headers           []recHeader
}

type recHeader struct {
	key   string
	value []byte
}

// errCorruptBatch is what walkBatches returns for bytes that do not parse.
var errCorruptBatch = errors.New("corrupt record batch")

// decompressor decompresses batches; stateless and safe for concurrent
// use.
var decompressor = kgo.DefaultDecompressor()

// maxDecompressed bounds what one batch may decompress to, so that a small
// compressed batch cannot make the inspector allocate without limit.
const maxDecompressed = 64 << 20

// walkBatches calls fn with each record of the RecordBatch v2 in b until fn
// returns false, and done with the offset after each batch that was read
// to its end (control batches included). A trailing partial batch (a fetch
// cut it) is ignored.
func walkBatches(b []byte, fn func(record) bool, done func(batchEnd int64)) error {
	for len(b) >= 12 {
		size := int64(binary.BigEndian.Uint32(b[8:12]))
		if size < 49 {
			return fmt.Errorf("%w: batch length %d", errCorruptBatch, size)
		}
		if int64(len(b)-12) < size {
			return nil // partial
		}
		batch := b[:12+size]
		b = b[12+size:]
		if len(batch) < 61 {
			return fmt.Errorf("%w: %d bytes", errCorruptBatch, len(batch))
		}
		if magic := batch[16]; magic != 2 {
			return fmt.Errorf("%w: magic %d", errCorruptBatch, magic)
		}
		base := int64(binary.BigEndian.Uint64(batch[0:8]))
		attrs := binary.BigEndian.Uint16(batch[21:23])
		lastDelta := int64(int32(binary.BigEndian.Uint32(batch[23:27])))
		firstTS := int64(binary.BigEndian.Uint64(batch[27:35]))
		maxTS := int64(binary.BigEndian.Uint64(batch[35:43]))
		count := int32(binary.BigEndian.Uint32(batch[57:61]))
		end := base + lastDelta + 1
		if attrs&0x20 != 0 { // control batch: transaction markers
			done(end)
			continue
		}
		recs := batch[61:]
		if codec := attrs & 0x07; codec != 0 {
			var err error
			if recs, err = decompressor.Decompress(recs, kgo.CompressionCodecType(codec)); err != nil {
				return fmt.Errorf("%w: decompressing: %v", errCorruptBatch, err)
			}
			if len(recs) > maxDecompressed {
				return fmt.Errorf("%w: decompresses to %d bytes", errCorruptBatch, len(recs))
			}
		}
		logAppend := attrs&0x08 != 0
		for i := int32(0); i < count; i++ {
			rec, rest, err := parseRecord(recs)
			if err != nil {
				return fmt.Errorf("%w: record %d of the batch at %d: %v", errCorruptBatch, i, base, err)
			}
			recs = rest
			rec.offset += base
			if logAppend {
				rec.timestamp = maxTS
			} else {
				rec.timestamp += firstTS
			}
			if !fn(rec) {
				return nil
			}
		}
		done(end)
	}
	return nil
}

// recReader reads the varint fields of a record.
type recReader struct {
	b   []byte
	err error
}

func (p *recReader) varint() int64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Varint(p.b)
	if n <= 0 {
		p.err = errors.New("bad varint")
		return 0
	}
	p.b = p.b[n:]
	return v
}

// bytes reads a varint length and that many bytes; -1 is null.
func (p *recReader) bytes() []byte {
	n := p.varint()
	if p.err != nil || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(p.b)) {
		p.err = fmt.Errorf("length %d with %d bytes left", n, len(p.b))
		return nil
	}
	v := p.b[:n:n]
	p.b = p.b[n:]
	if v == nil {
		v = []byte{}
	}
	return v
}

// parseRecord parses one length-prefixed record; offset and timestamp
// are the deltas.
func parseRecord(b []byte) (record, []byte, error) {
	p := &recReader{b: b}
	length := p.varint()
	if p.err != nil {
		return record{}, nil, p.err
	}
	if length < 1 || length > int64(len(p.b)) {
		return record{}, nil, fmt.Errorf("record length %d with %d bytes left", length, len(p.b))
	}
	rest := p.b[length:]
	p.b = p.b[1:length] // past the attributes
	var rec record
	rec.timestamp = p.varint()
	rec.offset = p.varint()
	rec.key = p.bytes()
	rec.value = p.bytes()
	n := p.varint()
	if p.err == nil && (n < 0 || n > int64(len(p.b))) {
		p.err = fmt.Errorf("header count %d", n)
	}
	for i := int64(0); i < n && p.err == nil; i++ {
		k := p.bytes()
		v := p.bytes()
		rec.headers = append(rec.headers, recHeader{key: string(k), value: v})
	}
	if p.err != nil {
		return record{}, nil, p.err
	}
	return rec, rest, nil
}
