package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// fakePusher is the gateway's side of one subscription, as little as a
// consumer needs: it answers the Subscribe, then pushes the same batch
// again and again, each time with the next base offset, and reads (and
// drops) the client's Credit frames. It allocates nothing per push, so a
// benchmark's allocs/op are the consumer's.
type fakePusher struct {
	nc    net.Conn
	batch []byte // one RecordBatch v2 of count records
	count int64
	// stamp, when set, writes each record's offset into the first 8
	// bytes of its value (at vals) before each push, and the CRC again.
	stamp bool
	vals  []int
	done  chan struct{}
}

// newFakePushConsumer returns a Consumer in push mode on one end of a pipe
// whose other end fakePusher serves.
func newFakePushConsumer(t testing.TB, records, size int, credit int64) (*Consumer, *fakePusher) {
	cn, sn := net.Pipe()
	var bb wire.BatchBuilder
	var vals [][]byte
	for i := range records {
		v := bytes.Repeat([]byte{byte(0x80 + i)}, size)
		vals = append(vals, v)
		bb.Add(time.Now().UnixMilli(), nil, v, nil)
	}
	batch, err := bb.AppendBatch(nil)
	if err != nil {
		t.Fatal(err)
	}
	fp := &fakePusher{nc: sn, batch: batch, count: int64(records), done: make(chan struct{})}
	for _, v := range vals {
		fp.vals = append(fp.vals, bytes.Index(batch, v))
	}
	c := newConn(cn, 64<<20)
	co := &Consumer{c: c, topic: TopicInfo{Name: "t", Partitions: 1}, pos: map[int32]int64{0: 0}, hw: map[int32]int64{}, order: []int32{0},
		opts: ConsumerOptions{Topic: "t", Push: true, MaxWait: 10 * time.Second, MaxBytes: 4 << 20, CreditBytes: credit}}
	return co, fp
}

// serve runs the fake gateway until the pipe closes.
func (fp *fakePusher) serve() {
	defer close(fp.done)
	var h [wire.HeaderSize]byte
	body := make([]byte, 1<<10)
	var corr uint32
	for corr == 0 {
		op, n, err := fp.readFrame(h[:], &body)
		if err != nil {
			return
		}
		if op == wire.OpSubscribe {
			corr = binary.BigEndian.Uint32(body[:n])
			b := wire.AppendHeader(nil, wire.OpSubscribe, 0)
			b = wire.AppendHead(b, wire.Head{Corr: corr, LeaderHint: -1})
			wire.PutLength(b)
			if _, err := fp.nc.Write(b); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			if _, _, err := fp.readFrame(h[:], &body); err != nil {
				return
			}
		}
	}()
	push := wire.AppendHeader(nil, wire.OpSubscribe, 0)
	push = wire.AppendHead(push, wire.Head{Corr: corr, LeaderHint: -1})
	push = wire.AppendU16(push, 1)
	push = wire.AppendFetchedHead(push, &wire.FetchedPartition{HighWatermark: 1 << 62}, len(fp.batch))
	push = append(push, fp.batch...)
	wire.PutLength(push)
	batch := push[len(push)-len(fp.batch):]
	for base := int64(0); ; base += fp.count {
		binary.BigEndian.PutUint64(batch, uint64(base))
		if fp.stamp {
			for i, at := range fp.vals {
				binary.BigEndian.PutUint64(batch[at:], uint64(base+int64(i)))
			}
			binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], castagnoli))
		}
		if _, err := fp.nc.Write(push); err != nil {
			return
		}
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (fp *fakePusher) readFrame(h []byte, body *[]byte) (wire.Opcode, int, error) {
	if _, err := io.ReadFull(fp.nc, h); err != nil {
		return 0, 0, err
	}
	op, n, err := wire.ParseHeader(h, 1<<20)
	if err != nil {
		return 0, 0, err
	}
	if cap(*body) < n {
		*body = make([]byte, n)
	}
	*body = (*body)[:n]
	_, err = io.ReadFull(fp.nc, *body)
	return op, n, err
}

// BenchmarkPushPoll is one push frame (a batch of 16 records of 1 KiB) per
// Poll, through the SDK's reader goroutine, decoder and credit accounting.
func BenchmarkPushPoll(b *testing.B) {
	co, fp := newFakePushConsumer(b, 16, 1024, 8<<20)
	go fp.serve()
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(16 * 1024)
	var n int
	for b.Loop() {
		msgs, err := co.Poll(ctx)
		if err != nil {
			b.Fatal(err)
		}
		n += len(msgs)
	}
	b.StopTimer()
	if n == 0 {
		b.Fatal("no messages")
	}
	if err := co.Close(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		b.Fatal(err)
	}
	_ = fp.nc.Close()
	<-fp.done
}
