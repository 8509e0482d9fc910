package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// The share groups' dead-letter topic (Kafka 4.4's KIP-1191): a record a
// member rejects, or that reaches share.delivery.count.limit deliveries,
// is written to the topic the group config
// errors.deadletterqueue.topic.name names, with Kafka's headers
// __dlq.errors.{group,topic,partition,offset,delivery.count,message}
// (values as decimal strings). With errors.deadletterqueue.copy.record
// .enable the original key, value and headers come along too; without
// (Kafka's default) the DLQ record is the headers alone. A DLQ topic
// that does not exist is created with num.partitions partitions (Kafka
// asks for errors.deadletterqueue.group.enable=true on the topic instead;
// our topics need no such opt-in). The record goes to the DLQ partition
// of the same number, modulo the DLQ topic's partition count.

// DLQ header names, as Kafka 4.4 writes them.
const (
	dlqHeaderGroup     = "__dlq.errors.group"
	dlqHeaderTopic     = "__dlq.errors.topic"
	dlqHeaderPartition = "__dlq.errors.partition"
	dlqHeaderOffset    = "__dlq.errors.offset"
	dlqHeaderCount     = "__dlq.errors.delivery.count"
	dlqHeaderMessage   = "__dlq.errors.message"
)

// headerRecord is a record with headers, for the DLQ.
type headerRecord struct {
	key, value []byte
	headers    []kgo.RecordHeader
}

// writeDLQ writes archived records of a share partition to the group's
// dead-letter topic (acks all); with none configured it has nothing to do.
func (g *Gateway) writeDLQ(ctx context.Context, sp *sharePartition, es []dlqEntry) error {
	name := g.groupCfg.get(sp.group, "errors.deadletterqueue.topic.name")
	if name == "" {
		return nil
	}
	t, err := g.cluster.Topic(ctx, name)
	if errors.Is(err, ErrUnknownTopic) {
		t, err = g.cluster.CreateTopic(ctx, CreateTopic{Name: name, Partitions: g.opts.DefaultPartitions, ReplicationFactor: 1})
		if errors.Is(err, ErrTopicExists) {
			t, err = g.cluster.Topic(ctx, name)
		}
	}
	if err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", name, err)
	}
	if t.Partitions <= 0 {
		return fmt.Errorf("dead-letter topic %s has no partitions", name)
	}
	var orig map[int64]*kgo.Record
	if g.groupCfg.get(sp.group, "errors.deadletterqueue.copy.record.enable") == "true" {
		if orig, err = g.readOriginals(ctx, sp, es); err != nil {
			return err
		}
	}
	recs := make([]headerRecord, 0, len(es))
	for _, e := range es {
		hr := headerRecord{}
		if r := orig[e.offset]; r != nil {
			hr.key, hr.value = r.Key, r.Value
			for _, h := range r.Headers {
				hr.headers = append(hr.headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
			}
		}
		hr.headers = append(hr.headers,
			kgo.RecordHeader{Key: dlqHeaderGroup, Value: []byte(sp.group)},
			kgo.RecordHeader{Key: dlqHeaderTopic, Value: []byte(sp.topic)},
			kgo.RecordHeader{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(sp.part)))},
			kgo.RecordHeader{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(e.offset, 10))},
			kgo.RecordHeader{Key: dlqHeaderCount, Value: []byte(strconv.Itoa(int(e.count)))},
			kgo.RecordHeader{Key: dlqHeaderMessage, Value: []byte(e.reason)},
		)
		recs = append(recs, hr)
	}
	_, err = g.backend.Produce(ctx, &ring.ProduceRequest{
		Topic: name, Partition: sp.part % t.Partitions, Acks: -1,
		Records: appendHeaderBatch(nil, time.Now().UnixMilli(), recs),
	})
	if err != nil {
		return fmt.Errorf("writing dead-letter topic %s: %w", name, err)
	}
	return nil
}

// readOriginals reads the records at the entries' offsets from the log,
// decompressing as needed.
func (g *Gateway) readOriginals(ctx context.Context, sp *sharePartition, es []dlqEntry) (map[int64]*kgo.Record, error) {
	out := map[int64]*kgo.Record{}
	dec := kgo.DefaultDecompressor()
	for _, e := range es {
		if out[e.offset] != nil {
			continue
		}
		data, _, err := g.readShareLog(ctx, sp.topic, sp.part, e.offset, 1<<20, ring.ReadUncommitted)
		if err != nil {
			return nil, fmt.Errorf("reading %s-%d at %d for the dead-letter topic: %w", sp.topic, sp.part, e.offset, err)
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.RecordBatches, rp.HighWatermark = sp.part, data, e.offset+1<<40
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: sp.topic, Partition: sp.part, Offset: e.offset}, &rp, dec, nil)
		for _, r := range fp.Records {
			out[r.Offset] = r
		}
	}
	return out, nil
}

// appendHeaderBatch appends an uncompressed RecordBatch v2 of recs, with
// their headers, all at timestamp ts, with no producer.
func appendHeaderBatch(dst []byte, ts int64, recs []headerRecord) []byte {
	start := len(dst)
	dst = kbin.AppendInt64(dst, 0)
	dst = kbin.AppendInt32(dst, 0)
	dst = kbin.AppendInt32(dst, -1)
	dst = append(dst, 2)
	dst = kbin.AppendInt32(dst, 0)
	crcFrom := len(dst)
	dst = kbin.AppendInt16(dst, 0)
	dst = kbin.AppendInt32(dst, int32(len(recs)-1))
	dst = kbin.AppendInt64(dst, ts)
	dst = kbin.AppendInt64(dst, ts)
	dst = kbin.AppendInt64(dst, -1)
	dst = kbin.AppendInt16(dst, -1)
	dst = kbin.AppendInt32(dst, -1)
	dst = kbin.AppendInt32(dst, int32(len(recs)))
	var body []byte
	for i, r := range recs {
		body = body[:0]
		body = append(body, 0)
		body = kbin.AppendVarlong(body, 0)
		body = kbin.AppendVarint(body, int32(i))
		body = kbin.AppendVarintBytes(body, r.key)
		body = kbin.AppendVarintBytes(body, r.value)
		body = kbin.AppendVarint(body, int32(len(r.headers)))
		for _, h := range r.headers {
			body = kbin.AppendVarintString(body, h.Key)
			body = kbin.AppendVarintBytes(body, h.Value)
		}
		dst = kbin.AppendVarint(dst, int32(len(body)))
		dst = append(dst, body...)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[start+17:], crc32.Checksum(dst[crcFrom:], crc32c))
	return dst
}
