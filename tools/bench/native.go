package bench

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// The native driver (--protocol native): the same workload through
// AeroStream's native protocol and its Go SDK, so that one run measures
// either door of the same broker. Topics are created and deleted through
// the native gateway too; consumers split each topic's partitions as in
// assign mode (the group mode's coordination is Kafka's to measure), each
// through a server-push subscription, the native way to follow.

// Protocols a run can use.
const (
	ProtocolKafka  = "kafka"
	ProtocolNative = "native"
)

func dialNative(ctx context.Context, cfg *Config, id string) (*client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	return client.Dial(dctx, cfg.Brokers[0], client.Options{ClientID: id})
}

// nativeEnsureTopics creates the missing topics and reads their partition
// counts; the gateway answers CreateTopic once the partitions exist.
func nativeEnsureTopics(ctx context.Context, cl *client.Client, cfg *Config, names []string) (*topicSet, error) {
	ts := &topicSet{names: names, partitions: map[string]int32{}, created: map[string]bool{}}
	for _, t := range names {
		ti, err := cl.Topic(ctx, t)
		if errors.Is(err, client.ErrUnknownTopic) {
			if !cfg.CreateTopics {
				return ts, fmt.Errorf("%w: topic %s does not exist and topic creation is off", ErrNotReady, t)
			}
			ti, err = cl.CreateTopic(ctx, t, int32(cfg.Partitions), int16(cfg.ReplicationFactor), cfg.TopicConfigs)
			if err == nil {
				ts.created[t] = true
			} else if errors.Is(err, client.ErrTopicExists) {
				ti, err = cl.Topic(ctx, t)
			}
		}
		if err != nil {
			return ts, fmt.Errorf("topic %s: %w", t, err)
		}
		ts.partitions[t] = ti.Partitions
	}
	return ts, nil
}

func nativeDeleteCreated(ctx context.Context, cl *client.Client, ts *topicSet) error {
	for _, t := range ts.names {
		if ts.created[t] {
			if err := cl.DeleteTopic(ctx, t); err != nil {
				return fmt.Errorf("deleting topic %s: %w", t, err)
			}
		}
	}
	return nil
}

// nativeRecord is a pooled record with its send time, as sentRecord is for
// kgo.
type nativeRecord struct {
	client.Record
	sent time.Time
}

func newNativeProducer(ctx context.Context, cfg *Config, id int, topic string, log *logOnce) (*producer, error) {
	cl, err := dialNative(ctx, cfg, fmt.Sprintf("aerostream-bench-producer-%d", id))
	if err != nil {
		return nil, err
	}
	codec, err := nativeCompression(cfg.Compression)
	if err != nil {
		cl.Close()
		return nil, err
	}
	acks := int8(-1)
	switch cfg.Acks {
	case "0":
		acks = 0
	case "1":
		acks = 1
	}
	p := &producer{topic: topic, size: cfg.MessageSize, filler: make([]byte, cfg.MessageSize), pubLat: NewRecorder(), delay: NewRecorder()}
	_, _ = rand.Read(p.filler)
	p.natCl = cl
	p.nat = client.NewProducer(cl, client.ProducerOptions{Acks: acks, AcksSet: true, Linger: cfg.Linger, LingerSet: true, BatchBytes: cfg.BatchBytes,
		Compression: codec, NotIdempotent: !cfg.Idempotent, MaxBufferedBytes: cfg.BufferBytes, MaxInFlight: cfg.MaxInflight})
	p.natDone = p.nativeAcknowledged
	p.natLog = log
	return p, nil
}

func nativeCompression(name string) (int16, error) {
	switch name {
	case "", "none":
		return client.CompressionNone, nil
	case "gzip":
		return client.CompressionGzip, nil
	case "snappy":
		return client.CompressionSnappy, nil
	case "lz4":
		return client.CompressionLZ4, nil
	case "zstd":
		return client.CompressionZstd, nil
	}
	return 0, fmt.Errorf("%w: compression %q", ErrConfig, name)
}

// produceNative sends one record through the SDK, stamped as record does.
func (p *producer) produceNative(ctx context.Context, now time.Time) {
	nr, _ := p.pool.Get().(*nativeRecord)
	if nr == nil {
		nr = &nativeRecord{Record: client.Record{Value: make([]byte, p.size)}}
		copy(nr.Value, p.filler)
	}
	nr.Record = client.Record{Topic: p.topic, Partition: -1, Value: nr.Value, Timestamp: now, Opaque: nr}
	nr.sent = now
	binary.BigEndian.PutUint64(nr.Value, uint64(now.UnixNano()))
	p.nat.Produce(ctx, &nr.Record, p.natDone)
}

func (p *producer) nativeAcknowledged(r *client.Record, err error) {
	nr := r.Opaque.(*nativeRecord)
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, client.ErrClosed) {
			p.errs.Add(1)
			p.natLog.printf("native produce %s: %v", p.topic, err)
		}
	} else {
		p.pubLat.Record(time.Since(nr.sent))
		p.acked.Add(1)
		p.ackedBytes.Add(int64(len(r.Value)))
	}
	p.pool.Put(nr)
}

func newNativeConsumer(ctx context.Context, cfg *Config, id int, sub *subscription, fromStart bool, log *logOnce) (*consumer, error) {
	var parts []int32
	for p := int32(0); p < sub.partitions; p++ {
		if int(p)%cfg.Consumers == id%cfg.Consumers {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, nil // more consumers than partitions: this one idles
	}
	cl, err := dialNative(ctx, cfg, fmt.Sprintf("aerostream-bench-consumer-%d", id))
	if err != nil {
		return nil, err
	}
	start := client.StartLatest
	if fromStart {
		start = client.StartEarliest
	}
	co, err := client.NewConsumer(ctx, cl, client.ConsumerOptions{Topic: sub.topic, Partitions: parts, Start: start, StartSet: true,
		MaxWait: 500 * time.Millisecond, MaxBytes: 16 << 20, Push: true})
	if err != nil {
		cl.Close()
		return nil, err
	}
	sub.assigned.Add(int64(len(parts)))
	c := &consumer{sub: sub, e2e: NewRecorder(), log: log, natCl: cl, nat: co}
	c.assigned.Add(int64(len(parts)))
	return c, nil
}

func (c *consumer) runNative(ctx context.Context) {
	for ctx.Err() == nil {
		msgs, err := c.nat.Poll(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, client.ErrClosed) {
				return
			}
			c.errs.Add(1)
			c.log.printf("native fetch %s: %v", c.sub.topic, err)
			continue
		}
		nowNs := time.Now().UnixNano()
		var n, b, foreign int64
		for i := range msgs {
			v := msgs[i].Value
			n++
			b += int64(len(v))
			if len(v) < minMessageSize {
				foreign++
				continue
			}
			d := time.Duration(nowNs - int64(binary.BigEndian.Uint64(v)))
			if d < -time.Second || d > plausibleSkew {
				foreign++
				continue
			}
			c.e2e.Record(d)
		}
		c.msgs.Add(n)
		c.bytes.Add(b)
		c.foreign.Add(foreign)
	}
}
