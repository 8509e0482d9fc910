package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// conn is one connection to a gateway. Requests are pipelined: each
// carries a correlation id, a writer serialises frames, and one reader
// goroutine hands each response to the request waiting for that id. A
// request whose ctx ends stops waiting; its late response is dropped.
type conn struct {
	nc      net.Conn
	maxRead int

	wmu  sync.Mutex // guards writes and wbuf
	wbuf []byte

	mu struct {
		sync.Mutex
		next    uint32
		pending map[uint32]chan frame
		subs    map[uint32]*pushStream // subscriptions: every frame of the id
		err     error                  // set once the reader stops
	}
	done    chan struct{}
	closing chan struct{} // closed by close, so a blocked push delivery gives up
	once    sync.Once
}

type frame struct {
	op      wire.Opcode
	payload []byte
}

// pushStream is one subscription's delivery: its frames in order, and the
// buffers its consumer is done with, which the reader fills with the next
// pushes, so that following a partition allocates nothing per push once
// the buffers have grown to the pushes' size. The consumer owns a frame's
// buffer from receiving it until it calls put.
type pushStream struct {
	ch   chan frame
	free chan []byte
	// pooled is the capacity of the buffers in free, kept under limit:
	// rotating buffers would otherwise each grow to the largest push
	// seen, holding far more than the credit window lets be in flight.
	pooled atomic.Int64
	limit  int64
}

// pushQueue is how many pushes can wait for their consumer; the credit
// window bounds their bytes.
const pushQueue = 64

func newPushStream(limit int64) *pushStream {
	return &pushStream{ch: make(chan frame, pushQueue), free: make(chan []byte, pushQueue+2), limit: limit}
}

// buffer returns a buffer of n bytes, a freed one when one is big enough.
func (s *pushStream) buffer(n int) []byte {
	select {
	case b := <-s.free:
		s.pooled.Add(-int64(cap(b)))
		if cap(b) >= n {
			return b[:n]
		}
	default:
	}
	return make([]byte, n)
}

// put gives a delivered frame's buffer back for a later push. The caller
// must not touch b, or anything sliced from it, afterwards.
func (s *pushStream) put(b []byte) {
	if b == nil || s.pooled.Load()+int64(cap(b)) > s.limit {
		return
	}
	select {
	case s.free <- b[:0]:
		s.pooled.Add(int64(cap(b)))
	default:
	}
}

func dialConn(ctx context.Context, addr string, maxRead int, tc *tls.Config) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, addr, err)
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		_ = tcp.SetNoDelay(true)
	}
	if tc != nil {
		tc = tc.Clone()
		if tc.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				tc.ServerName = host
			}
		}
		tlsConn := tls.Client(nc, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("%w: %s: TLS: %v", ErrUnreachable, addr, err)
		}
		nc = tlsConn
	}
	return newConn(nc, maxRead), nil
}

// newConn starts the reader of an established connection.
func newConn(nc net.Conn, maxRead int) *conn {
	c := &conn{nc: nc, maxRead: maxRead, done: make(chan struct{}), closing: make(chan struct{})}
	c.mu.pending = map[uint32]chan frame{}
	c.mu.subs = map[uint32]*pushStream{}
	go c.readLoop()
	return c
}

func (c *conn) readLoop() {
	defer close(c.done)
	br := bufio.NewReaderSize(c.nc, 64<<10)
	var h [wire.HeaderSize + 4]byte // a header and a correlation id
	var err error
	for {
		if _, err = io.ReadFull(br, h[:wire.HeaderSize]); err != nil {
			break
		}
		var op wire.Opcode
		var n int
		op, n, err = wire.ParseHeader(h[:wire.HeaderSize], c.maxRead)
		if err != nil {
			break
		}
		if n < 4 {
			err = fmt.Errorf("%w: response without a correlation id", wire.ErrMalformed)
			break
		}
		// The correlation id first: a subscription's push is read into
		// a buffer its consumer gave back, not a new one.
		if _, err = io.ReadFull(br, h[wire.HeaderSize:]); err != nil {
			break
		}
		corr := binary.BigEndian.Uint32(h[wire.HeaderSize:])
		c.mu.Lock()
		ch, ok := c.mu.pending[corr]
		delete(c.mu.pending, corr)
		sub := c.mu.subs[corr]
		c.mu.Unlock()
		var p []byte
		if sub != nil && !ok {
			p = sub.buffer(n)
		} else {
			p = make([]byte, n)
		}
		copy(p, h[wire.HeaderSize:])
		if _, err = io.ReadFull(br, p[4:]); err != nil {
			break
		}
		if ok {
			ch <- frame{op: op, payload: p}
		} else if sub != nil {
			// A subscription's reader takes its pushes in order; the
			// credit it gives back bounds how many can queue here.
			select {
			case sub.ch <- frame{op: op, payload: p}:
			case <-c.closing:
				err = ErrClosed
			}
			if err != nil {
				break
			}
		} else if op == wire.OpError {
			// The gateway refused a frame it could not tie to a request
			// and is closing: say why to everyone waiting.
			r := wire.NewReader(p)
			h := wire.ReadHead(&r)
			err = &Error{Code: h.Code, Message: h.Message}
			break
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	c.mu.Lock()
	c.mu.err = err
	for id, ch := range c.mu.pending {
		close(ch)
		delete(c.mu.pending, id)
	}
	for id, sub := range c.mu.subs {
		close(sub.ch)
		delete(c.mu.subs, id)
	}
	c.mu.Unlock()
	_ = c.nc.Close()
}

// send writes a request built by fill and returns the channel its response
// arrives on (closed if the connection dies first), or nil for a request
// that gets none (acks=0).
func (c *conn) send(op wire.Opcode, noResponse bool, fill func([]byte) []byte) (uint32, chan frame, error) {
	c.mu.Lock()
	if c.mu.err != nil {
		err := c.mu.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.mu.next++
	corr := c.mu.next
	var ch chan frame
	if !noResponse {
		ch = make(chan frame, 1)
		c.mu.pending[corr] = ch
	}
	c.mu.Unlock()

	c.wmu.Lock()
	b := wire.AppendHeader(c.wbuf[:0], op, 0)
	b = wire.AppendU32(b, corr)
	b = fill(b)
	wire.PutLength(b)
	_, err := c.nc.Write(b)
	// Kept up to a producer's largest request (maxRequestBytes and
	// change), so a busy producer does not grow a buffer per request.
	if cap(b) <= 2*maxRequestBytes {
		c.wbuf = b
	}
	c.wmu.Unlock()
	if err != nil {
		c.forget(corr)
		_ = c.nc.Close()
		return 0, nil, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return corr, ch, nil
}

// subscribe sends a Subscribe built by fill; every frame under its id
// (the answer first, then the pushes) arrives on the returned stream's
// channel, closed when the connection dies. The stream keeps up to
// poolBytes of freed buffers for later pushes.
func (c *conn) subscribe(poolBytes int64, fill func([]byte) []byte) (uint32, *pushStream, error) {
	c.mu.Lock()
	if c.mu.err != nil {
		err := c.mu.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.mu.next++
	corr := c.mu.next
	sub := newPushStream(poolBytes)
	c.mu.subs[corr] = sub
	c.mu.Unlock()
	c.wmu.Lock()
	b := wire.AppendHeader(c.wbuf[:0], wire.OpSubscribe, 0)
	b = wire.AppendU32(b, corr)
	b = fill(b)
	wire.PutLength(b)
	_, err := c.nc.Write(b)
	c.wbuf = b
	c.wmu.Unlock()
	if err != nil {
		c.unsubscribeLocal(corr)
		_ = c.nc.Close()
		return 0, nil, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return corr, sub, nil
}

// unsubscribeLocal stops delivering a subscription's frames.
func (c *conn) unsubscribeLocal(corr uint32) {
	c.mu.Lock()
	delete(c.mu.subs, corr)
	c.mu.Unlock()
}

func (c *conn) forget(corr uint32) {
	c.mu.Lock()
	delete(c.mu.pending, corr)
	c.mu.Unlock()
}

// sendProduceMany writes m with writev: the fields go through the write
// buffer, and each partition's records straight from the caller's batch,
// so a producer's record bytes are not copied once more per request.
func (c *conn) sendProduceMany(m *wire.ProduceMany) (uint32, chan frame, error) {
	c.mu.Lock()
	if c.mu.err != nil {
		err := c.mu.err
		c.mu.Unlock()
		return 0, nil, err
	}
	c.mu.next++
	corr := c.mu.next
	var ch chan frame
	if m.Acks != 0 {
		ch = make(chan frame, 1)
		c.mu.pending[corr] = ch
	}
	c.mu.Unlock()

	c.wmu.Lock()
	b := wire.AppendHeader(c.wbuf[:0], wire.OpProduceMany, 0)
	b = wire.AppendU32(b, corr)
	b = append(b, byte(m.Acks))
	b = wire.AppendI32(b, m.TimeoutMs)
	b = wire.AppendU32(b, uint32(len(m.Partitions)))
	// cuts[i] ends the fields before partition i's records.
	cuts := make([]int, len(m.Partitions))
	total := 0
	for i := range m.Partitions {
		p := &m.Partitions[i]
		b = append(b, p.TopicID[:]...)
		b = wire.AppendI32(b, p.Partition)
		b = wire.AppendU32(b, uint32(len(p.Records)))
		cuts[i] = len(b)
		total += len(p.Records)
	}
	binary.BigEndian.PutUint32(b[3:], uint32(len(b)-wire.HeaderSize+total))
	bufs := make(net.Buffers, 0, 2*len(m.Partitions)+1)
	prev := 0
	for i := range m.Partitions {
		bufs = append(bufs, b[prev:cuts[i]], m.Partitions[i].Records)
		prev = cuts[i]
	}
	if prev < len(b) {
		bufs = append(bufs, b[prev:])
	}
	_, err := bufs.WriteTo(c.nc)
	c.wbuf = b
	c.wmu.Unlock()
	if err != nil {
		c.forget(corr)
		_ = c.nc.Close()
		return 0, nil, fmt.Errorf("%w: %v", ErrClosed, err)
	}
	return corr, ch, nil
}

// roundTrip sends a request and decodes its response's head; the rest of
// the payload is returned in r. A non-zero error code comes back as an
// *Error.
func (c *conn) roundTrip(ctx context.Context, op wire.Opcode, fill func([]byte) []byte) (wire.Reader, error) {
	corr, ch, err := c.send(op, false, fill)
	if err != nil {
		return wire.Reader{}, err
	}
	return c.await(ctx, corr, ch)
}

// await waits for the response to corr on ch.
func (c *conn) await(ctx context.Context, corr uint32, ch chan frame) (wire.Reader, error) {
	select {
	case f, ok := <-ch:
		if !ok {
			return wire.Reader{}, c.closedErr()
		}
		r := wire.NewReader(f.payload)
		h := wire.ReadHead(&r)
		if err := r.Err(); err != nil {
			return r, err
		}
		if h.Code != 0 {
			return r, &Error{Code: h.Code, Message: h.Message, LeaderHint: h.LeaderHint, ThrottleMs: h.ThrottleMs}
		}
		return r, nil
	case <-ctx.Done():
		c.forget(corr)
		return wire.Reader{}, ctx.Err()
	}
}

func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.err != nil {
		return c.mu.err
	}
	return ErrClosed
}

// dead reports whether the reader has stopped.
func (c *conn) dead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.err != nil
}

func (c *conn) close() error {
	c.once.Do(func() { close(c.closing) })
	err := c.nc.Close()
	<-c.done
	return err
}
