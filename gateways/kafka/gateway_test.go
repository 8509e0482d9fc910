package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32, configs ...kmsg.CreateTopicsRequestTopicConfig) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor, rt.Configs = name, partitions, 1, configs
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v (%v)", name, err, resp.Topics[0].ErrorMessage)
	}
}

func TestProduceConsume(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr, kgo.DefaultProduceTopic("pc"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "pc", 3)

	const n = 2000
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("value-%d-%064d", i, i)), Partition: int32(i % 3)}
		cl.Produce(testCtx(t), r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	consumer := newClient(t, e.addr, kgo.ConsumeTopics("pc"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	perPartition := map[int32]int64{}
	for len(seen) < n {
		fs := consumer.PollFetches(testCtx(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if next := perPartition[r.Partition]; r.Offset != next {
				t.Fatalf("partition %d: offset %d, expected %d", r.Partition, r.Offset, next)
			}
			perPartition[r.Partition] = r.Offset + 1
			seen[string(r.Key)] = true
		})
	}
	// Values are padded so that each partition's range is above the size
	// the writer copies instead (gateways.copyBelowBytes).
	if s := e.gw.Stats(); s.SendfileBytes == 0 {
		t.Errorf("no record byte went out with sendfile: %+v", s)
	}
}

// rawConn speaks the Kafka framing by hand, for requests a client would
// not send.
type rawConn struct {
	t  *testing.T
	nc net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc}
}

func (c *rawConn) send(key, version int16, corr int32, body []byte) {
	b := make([]byte, 4, 64+len(body))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	r := kmsg.RequestForKey(key)
	if r != nil {
		r.SetVersion(version)
		if r.IsFlexible() {
			b = append(b, 0)
		}
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one response frame; io.EOF when the gateway closed.
func (c *rawConn) recv() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

func TestApiVersions(t *testing.T) {
	e := newTestEnv(t)
	c := dialRaw(t, e.addr)

	// A version from the future gets the v0 answer with our range.
	c.send(18, 99, 7, nil)
	b, err := c.recv()
	if err != nil {
		t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(b)); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("unsupported version answer: %+v", resp)
	}

	// The connection carries on: a v3 request lists what is served.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
	c.send(18, 3, 8, req.AppendTo(nil))
	if b, err = c.recv(); err != nil {
		t.Fatal(err)
	}
	resp = kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(b[4:]); err != nil {
		t.Fatal(err)
	}
	served := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = true
	}
	for _, k := range []int16{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 32, 33, 35, 36, 37, 42, 44, 47, 50, 51, 60, 65, 66, 68, 69, 76, 77, 78, 79, 90, 91, 92} {
		if !served[k] {
			t.Errorf("key %d (%s) not advertised", k, kmsg.NameForKey(k))
		}
	}
	for _, k := range []int16{} {
		if served[k] {
			t.Errorf("key %d (%s) advertised but not served", k, kmsg.NameForKey(k))
		}
	}
}

// TestBadInputClosesOnlyThatConnection: an oversized frame, an unknown key
// and an unsupported version each close their connection, and the gateway
// keeps serving the others.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.MaxRequestBytes = 1 << 20 })
	good := newClient(t, e.addr)
	if err := good.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		send func(c *rawConn)
	}{
		{"oversized frame", func(c *rawConn) {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], 2<<20)
			_, _ = c.nc.Write(b[:])
		}},
		{"negative size", func(c *rawConn) { _, _ = c.nc.Write([]byte{0xff, 0xff, 0xff, 0xf0}) }},
		{"unknown key", func(c *rawConn) { c.send(9999, 0, 1, nil) }},
		{"unserved key", func(c *rawConn) { c.send(26, 0, 1, nil) }}, // EndTxn
		{"unsupported version", func(c *rawConn) { c.send(3, 99, 1, nil) }},
		{"truncated body", func(c *rawConn) { c.send(3, 12, 1, []byte{5}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, e.addr)
			tc.send(c)
			if b, err := c.recv(); err == nil {
				t.Fatalf("got a %d-byte response, want the connection closed", len(b))
			}
			if err := good.Ping(testCtx(t)); err != nil {
				t.Fatalf("other connection broke: %v", err)
			}
		})
	}
	if s := e.gw.Stats(); s.ProtocolErrors < int64(len(cases)) {
		t.Errorf("protocol errors %d, want at least %d", s.ProtocolErrors, len(cases))
	}
}
