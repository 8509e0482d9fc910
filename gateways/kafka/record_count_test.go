package kafka

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// TestProduceLyingRecordCount is the reported case end to end: a gzip
// batch claiming 2^31-1 records while holding one, with a valid CRC, is
// refused with CORRUPT_MESSAGE and takes no offsets; the next honest batch
// lands at offset 0.
func TestProduceLyingRecordCount(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	ctx := testCtx(t)
	createTopic(t, cl, "lie", 1)
	produce := func(records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "lie"
		topic, _ := e.cluster.Topic(ctx, "lie")
		rt.TopicID = topic.ID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = records
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}

	honest := logtest.Batch(1, logtest.Record{Value: []byte("x")})
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(honest[61:])
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lie := append(append([]byte(nil), honest[:61]...), z.Bytes()...)
	binary.BigEndian.PutUint32(lie[8:], uint32(len(lie)-12))
	binary.BigEndian.PutUint16(lie[21:], 1) // gzip
	binary.BigEndian.PutUint32(lie[23:], math.MaxInt32-1)
	binary.BigEndian.PutUint32(lie[57:], math.MaxInt32)
	binary.BigEndian.PutUint32(lie[17:], crc32.Checksum(lie[21:], crc32.MakeTable(crc32.Castagnoli)))

	if r := produce(lie); r.ErrorCode != kerr.CorruptMessage.Code {
		t.Fatalf("a batch claiming 2^31-1 records for one: error %d, base offset %d; want CORRUPT_MESSAGE", r.ErrorCode, r.BaseOffset)
	}
	if r := produce(honest); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("the next honest batch: error %d at offset %d, want offset 0", r.ErrorCode, r.BaseOffset)
	}
}
