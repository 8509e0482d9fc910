package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// compressionCodec maps the --compression flag to kgo's codec.
func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// producerOpts are the kgo options every producer client gets, the Kafka
// producer configs of OMB's driver in kgo's terms.
func producerOpts(cfg *Config) []kgo.Opt {
	codec, _ := compressionCodec(cfg.Compression) // validated
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchMaxBytes(int32(cfg.BatchBytes)),
		kgo.ProducerBatchCompression(codec),
		// buffer.memory, in kgo's terms: bytes, not kgo's default of
		// 50,000 records, which at 1 KiB is 50 MiB per producer.
		kgo.MaxBufferedBytes(cfg.BufferBytes),
	}
	switch cfg.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !cfg.Idempotent {
		// kgo allows one request in flight per broker without idempotency
		// unless told otherwise; the Java client allows 5.
		opts = append(opts, kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(cfg.MaxInflight))
	}
	return opts
}

// producer is one kgo client publishing to one topic, driven by one
// goroutine (run); kgo calls promise from its own goroutines.
type producer struct {
	cl      *kgo.Client
	topic   string
	size    int
	filler  []byte // random payload bytes after the timestamp
	pacer   *Pacer // nil: unlimited; set before run
	pubLat  *Recorder
	delay   *Recorder
	promise func(*kgo.Record, error)
	pool    sync.Pool // of *sentRecord (or *nativeRecord), recycled once acknowledged

	// The native driver's SDK producer and its client; cl is nil then.
	nat     *client.Producer
	natCl   *client.Client
	natDone func(*client.Record, error)
	natLog  *logOnce

	// sent counts records Produce took: it returns once the record is in
	// the client's buffer, and blocks while the buffer is full.
	sent                    atomic.Int64
	acked, ackedBytes, errs atomic.Int64
}

func newProducer(cfg *Config, id int, topic string, wire *wireCounter) (*producer, error) {
	opts := append(producerOpts(cfg), kgo.ClientID(fmt.Sprintf("aerostream-bench-producer-%d", id)), kgo.WithHooks(wire))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	p := &producer{
		cl:     cl,
		topic:  topic,
		size:   cfg.MessageSize,
		filler: make([]byte, cfg.MessageSize),
		pubLat: NewRecorder(),
		delay:  NewRecorder(),
	}
	// Random, so compression shows what it does to real payloads rather
	// than to zeros.
	_, _ = rand.Read(p.filler)
	p.promise = p.acknowledged
	return p, nil
}

// sentRecord is a pooled record with its send time beside it. The promise
// reads the send time from here rather than from the value: at full load a
// value was written hundreds of milliseconds before its acknowledgement,
// and that cache miss was 6% of the bench's CPU, while this struct kgo has
// just touched. Record.Timestamp cannot carry it: kgo truncates it to
// milliseconds.
type sentRecord struct {
	kgo.Record
	stamp sendStamp
}

// sendStamp is the record's Context: kgo passes it through untouched and
// watches the context it embeds (Produce's) for cancellation. Context and
// rec are set once, when the record is made: kgo may still call the
// Context's methods after the record's promise (a goroutine waiting for an
// unknown topic keeps its first record's Context), so only sent, which kgo
// never reads, changes when the record is reused.
type sendStamp struct {
	context.Context
	sent time.Time
	rec  *sentRecord
}

// record returns a record for topic, sent now, with the send time in the
// first 8 bytes of its value (for consumers' end-to-end latency), in its
// stamp and in Timestamp: kgo stamps a record only when Timestamp is zero,
// so that is no extra clock read. ctx is the same on every call (run's).
func (p *producer) record(ctx context.Context, now time.Time) *kgo.Record {
	sr, _ := p.pool.Get().(*sentRecord)
	if sr == nil {
		sr = &sentRecord{Record: kgo.Record{Value: make([]byte, p.size)}}
		sr.stamp = sendStamp{Context: ctx, rec: sr}
		copy(sr.Value, p.filler)
	}
	sr.Record = kgo.Record{Topic: p.topic, Value: sr.Value, Timestamp: now, Context: &sr.stamp}
	sr.stamp.sent = now
	binary.BigEndian.PutUint64(sr.Value, uint64(now.UnixNano()))
	return &sr.Record
}

// run publishes until stop is closed. ctx bounds the produce calls
// themselves (kgo blocks Produce while its buffer is full).
func (p *producer) run(ctx context.Context, stop <-chan struct{}) {
	for {
		var due time.Time
		if p.pacer != nil {
			var err error
			if due, err = p.pacer.Wait(ctx, stop); err != nil {
				return
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		now := time.Now()
		if p.pacer != nil {
			p.delay.Record(now.Sub(due))
		}
		if p.nat != nil {
			p.produceNative(ctx, now)
		} else {
			p.cl.Produce(ctx, p.record(ctx, now), p.promise)
		}
		p.sent.Add(1)
	}
}

func (p *producer) acknowledged(r *kgo.Record, err error) {
	st := r.Context.(*sendStamp) // every record comes from (*producer).record
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) {
			p.errs.Add(1)
		}
	} else {
		p.pubLat.Record(time.Since(st.sent))
		p.acked.Add(1)
		p.ackedBytes.Add(int64(len(r.Value)))
	}
	p.pool.Put(st.rec)
}
