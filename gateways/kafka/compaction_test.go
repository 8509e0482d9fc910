package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func topicConfig(name, value string) kmsg.CreateTopicsRequestTopicConfig {
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	return c
}

// TestCompactedTopicClients: franz-go writes 10 keys x 200 versions, zstd
// batches, with tombstones, to a topic created with cleanup.policy=compact;
// once the store's cleaner has run, a franz-go consumer from the start
// reads the compacted batches (fewer records than offsets, empty ones,
// gaps) and gets exactly the latest value of each live key, and no
// deleted key.
func TestCompactedTopicClients(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	createTopic(t, cl, "compacted", 1, topicConfig("cleanup.policy", "compact"), topicConfig("segment.bytes", "16384"),
		topicConfig("delete.retention.ms", "0"), topicConfig("min.cleanable.dirty.ratio", "0"))
	want := map[string]string{}
	wantOffset := map[string]int64{}
	for v := 0; v < 200; v++ {
		var recs []*kgo.Record
		for k := 0; k < 10; k++ {
			key := fmt.Sprintf("k%d", k)
			r := &kgo.Record{Topic: "compacted", Key: []byte(key), Value: []byte(fmt.Sprintf("v%d-%s", v, key))}
			if k < 3 && v == 199 {
				r.Value = nil
			}
			recs = append(recs, r)
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Record.Value == nil {
				delete(want, string(r.Record.Key))
			} else {
				want[string(r.Record.Key)] = string(r.Record.Value)
				wantOffset[string(r.Record.Key)] = r.Record.Offset
			}
		}
	}
	if err := e.store.RollPartition(ctx, "compacted", 0); err != nil {
		t.Fatal(err)
	}
	before, _ := e.store.DescribePartition(ctx, "compacted", 0)
	if err := e.store.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Settle(ctx, "compacted", 0); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.store.DescribePartition(ctx, "compacted", 0); after.Size >= before.Size/4 {
		t.Fatalf("cleaning left %d of %d bytes", after.Size, before.Size)
	}
	var last int64
	for _, o := range wantOffset {
		last = max(last, o)
	}

	consumer := newClient(t, e.addr, kgo.ConsumeTopics("compacted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	n := 0
	for done := false; !done; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if r.Value == nil {
				delete(got, string(r.Key))
			} else {
				got[string(r.Key)] = string(r.Value)
			}
			if o, ok := wantOffset[string(r.Key)]; ok && o != r.Offset && r.Offset >= o {
				t.Errorf("key %s at offset %d, written at %d", r.Key, r.Offset, o)
			}
			done = done || r.Offset >= last
		})
	}
	if n != len(want) {
		t.Errorf("consumed %d records, want exactly the %d live keys' latest", n, len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("key %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("deleted key %s consumed", k)
		}
	}
}

// TestCommittedOffsetsAfterCleaning: __consumer_offsets is compacted; a
// group's commits, cleaned down to the latest per partition, load after a
// restart of the gateway.
func TestCommittedOffsetsAfterCleaning(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "src", 2)
	produceN(t, cl, "src", 0, 60)
	consumeGroup(t, e.addr, "g", "src", 60)
	produceN(t, cl, "src", 60, 40)
	consumeGroup(t, e.addr, "g", "src", 40)
	ctx := testCtx(t)
	for p := int32(0); p < 4; p++ {
		if err := e.store.RollPartition(ctx, offsetsTopic, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.CleanNow(ctx); err != nil {
		t.Fatal(err)
	}
	var removed bool
	for deadline := time.Now().Add(10 * time.Second); !removed && time.Now().Before(deadline); {
		removed = e.store.CleanerStats().RecordsRemoved > 0
		if !removed {
			time.Sleep(10 * time.Millisecond) // the swap's chore runs on the shard's chore goroutine
		}
	}
	if !removed {
		t.Fatalf("the cleaner removed nothing from %s: %+v", offsetsTopic, e.store.CleanerStats())
	}
	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "g"
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			total += p.Offset
		}
	}
	if total != 100 {
		t.Errorf("committed offsets sum to %d after cleaning and a restart, want 100", total)
	}
}

// TestCompactedTopicRefusesNullKeys: as Kafka's LogValidator does, a
// compacted topic refuses a batch holding a record without a key with
// INVALID_RECORD, naming each such record in record_errors, and writes
// nothing of it; keyed records (an empty key is a key) still go in, a
// delete-policy topic takes null keys, and turning compaction on later
// makes the same batch refused.
func TestCompactedTopicRefusesNullKeys(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "compacted-keys", 1, topicConfig("cleanup.policy", "compact,delete"))
	createTopic(t, cl, "plain-keys", 1)

	// franz-go sees Kafka's error.
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compacted-keys", Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("null key on a compacted topic: %v, want INVALID_RECORD", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "compacted-keys", Key: []byte{}, Value: []byte("empty key")}).FirstErr(); err != nil {
		t.Fatalf("empty key refused: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "plain-keys", Value: []byte("no key")}).FirstErr(); err != nil {
		t.Fatalf("null key on a delete-policy topic: %v", err)
	}

	// The raw answer: record_errors for records 1 and 3, Kafka's message.
	mixed := func() []byte {
		b := gzipBatch(t, appendBatch(nil, time.Now().UnixMilli(), []record{
			{key: []byte("a"), value: []byte("1")}, {value: []byte("2")},
			{key: []byte("b"), value: []byte("3")}, {value: []byte("4")}}))
		binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32c))
		return b
	}
	ids := map[string][16]byte{}
	mreq := kmsg.NewPtrMetadataRequest()
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range mresp.Topics {
		ids[*mt.Topic] = mt.TopicID
	}
	produce := func(topic string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest() // franz-go sends v13: topics by id
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = mixed()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	sp := produce("compacted-keys")
	if sp.ErrorCode != kerr.InvalidRecord.Code || sp.BaseOffset != -1 {
		t.Fatalf("mixed batch answered code %d offset %d", sp.ErrorCode, sp.BaseOffset)
	}
	const recMsg = "Compacted topic cannot accept message without key in topic partition compacted-keys-0"
	if len(sp.ErrorRecords) != 2 || sp.ErrorRecords[0].RelativeOffset != 1 || sp.ErrorRecords[1].RelativeOffset != 3 ||
		sp.ErrorRecords[0].ErrorMessage == nil || *sp.ErrorRecords[0].ErrorMessage != recMsg {
		t.Fatalf("record errors %+v", sp.ErrorRecords)
	}
	wantMsg := "One or more records have been rejected due to 2 record errors in total, and only showing the first three errors at most: " +
		"[RecordError(batchIndex=1, message='" + recMsg + "'), RecordError(batchIndex=3, message='" + recMsg + "')]"
	if sp.ErrorMessage == nil || *sp.ErrorMessage != wantMsg {
		t.Fatalf("error message %v", sp.ErrorMessage)
	}
	// Nothing of the refused batches was written: the log holds the one
	// record with an empty key.
	if info, err := e.store.DescribePartition(ctx, "compacted-keys", 0); err != nil || info.LogEndOffset != 1 {
		t.Fatalf("compacted log end %d (%v), want 1", info.LogEndOffset, err)
	}

	if sp := produce("plain-keys"); sp.ErrorCode != 0 {
		t.Fatalf("mixed batch on a delete-policy topic: code %d", sp.ErrorCode)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "plain-keys"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	if resp, err := alter.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, resp)
	}
	if sp := produce("plain-keys"); sp.ErrorCode != kerr.InvalidRecord.Code || len(sp.ErrorRecords) != 2 {
		t.Fatalf("after cleanup.policy=compact: code %d, %d record errors", sp.ErrorCode, len(sp.ErrorRecords))
	}
}
