package ring

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DialOptions configure the network Backend returned by Dial. Zero values
// take the defaults.
type DialOptions struct {
	// MaxPayloadBytes bounds the payload of a response frame the client
	// reads; a larger one breaks the connection. It should be at least the
	// server's MaxPayloadBytes. Default DefaultMaxPayloadBytes.
	MaxPayloadBytes int
	// DialTimeout bounds each connection's dial and handshake when ctx has
	// no earlier deadline. Default 10s.
	DialTimeout time.Duration
	// Logger receives connection events; default slog.Default().
	Logger *slog.Logger
	// TLS, when set, wraps every connection in TLS (tls.go): give it the
	// node certificate and the cluster CA. An empty ServerName is the
	// dialled host.
	TLS *tls.Config
}

// client is the network Backend. It holds one connection per shard; each
// connection has a write goroutine and a read goroutine, and callers wait on
// their own call's channel, so one connection carries many requests at once.
type client struct {
	network, address string
	maxPayload       int
	dialTimeout      time.Duration
	log              *slog.Logger
	tls              *tls.Config // nil: plaintext

	// The ring as described by the server at Dial.
	shards      int
	ringVersion int64
	serverMax   int // the server's frame payload limit

	slots  []*shardSlot
	closed atomic.Bool
	wg     sync.WaitGroup // connection goroutines
}

var _ Backend = (*client)(nil)

// shardSlot holds a shard's current connection. Calls load it without a
// lock; dialMu serializes redials, so a broken shard is redialled once and
// not once per waiting call.
type shardSlot struct {
	conn   atomic.Pointer[clientConn]
	dialMu sync.Mutex
}

var errClientClosed = fmt.Errorf("%w: ring client closed", ErrClosed)

// Dial connects to a ring server at addr, "host:port" or "unix:/path". It
// asks the server for the ring on a first connection, then opens one
// connection per shard, each introduced by a Hello. The Backend it returns
// routes each partition to its shard's connection and redials a broken
// connection on the next call that needs it.
func Dial(ctx context.Context, addr string, opts DialOptions) (Backend, error) {
	c := &client{
		maxPayload:  opts.MaxPayloadBytes,
		dialTimeout: opts.DialTimeout,
		log:         opts.Logger,
	}
	if c.maxPayload <= 0 {
		c.maxPayload = DefaultMaxPayloadBytes
	}
	if c.dialTimeout <= 0 {
		c.dialTimeout = 10 * time.Second
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		c.network, c.address = "unix", path
	} else {
		c.network, c.address = "tcp", addr
	}
	c.tls = clientTLS(opts.TLS, c.network, c.address)
	c.log = c.log.With("component", "ring-client", "addr", addr)

	if err := c.describe(ctx); err != nil {
		return nil, fmt.Errorf("ring dial %s: %w", addr, err)
	}
	c.slots = make([]*shardSlot, c.shards)
	for i := range c.slots {
		c.slots[i] = &shardSlot{}
		cc, err := c.dialShard(ctx, i)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("ring dial %s: %w", addr, err)
		}
		c.slots[i].conn.Store(cc)
	}
	c.log.Debug("ring dialled", "shards", c.shards, "ring_version", c.ringVersion)
	return c, nil
}

// dialRaw opens a connection whose deadline follows ctx (bounded by
// DialTimeout) until the returned stop is called.
func (c *client) dialRaw(ctx context.Context) (net.Conn, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	var d net.Dialer
	nc, err := d.DialContext(ctx, c.network, c.address)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if c.tls != nil {
		tc := tls.Client(nc, c.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			cancel()
			_ = nc.Close()
			return nil, nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stopAfter := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	stop := func() {
		stopAfter()
		cancel()
		_ = nc.SetDeadline(time.Time{})
	}
	return nc, stop, nil
}

// handshake sends one request on a fresh connection and reads its answer
// synchronously, before any goroutine owns the connection.
func (c *client) handshake(nc net.Conn, br *bufio.Reader, req *request) (*response, error) {
	req.Corr = 1
	if _, err := nc.Write(appendRequest(nil, req)); err != nil {
		return nil, err
	}
	op, payload, err := readFrame(br, c.maxPayload)
	if err != nil {
		return nil, err
	}
	if op != req.Op && op != OpError {
		return nil, fmt.Errorf("%w: %v answered with %v", ErrProtocol, req.Op, op)
	}
	resp, err := decodeResponse(op, payload)
	if err != nil {
		return nil, err
	}
	if op == OpError && resp.Code == codeNone {
		return nil, fmt.Errorf("%w: error frame without an error", ErrProtocol)
	}
	if err := resp.err(); err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *client) describe(ctx context.Context) error {
	nc, stop, err := c.dialRaw(ctx)
	if err != nil {
		return err
	}
	defer func() {
		stop()
		_ = nc.Close()
	}()
	resp, err := c.handshake(nc, bufio.NewReader(nc), &request{Op: OpDescribe})
	if err != nil {
		return fmt.Errorf("describing ring: %w", err)
	}
	if resp.Shards <= 0 || resp.MaxPayload == 0 {
		return fmt.Errorf("%w: ring of %d shards with a %d-byte frame limit", ErrProtocol, resp.Shards, resp.MaxPayload)
	}
	c.shards = int(resp.Shards)
	c.ringVersion = resp.RingVersion
	c.serverMax = int(resp.MaxPayload)
	return nil
}

// dialShard opens shard's connection, says Hello and starts its goroutines.
func (c *client) dialShard(ctx context.Context, shard int) (*clientConn, error) {
	nc, stop, err := c.dialRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("dialing shard %d: %w", shard, err)
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	_, err = c.handshake(nc, br, &request{Op: OpHello, Shard: int32(shard), RingVersion: c.ringVersion})
	stop()
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("hello to shard %d: %w", shard, err)
	}
	cc := &clientConn{
		cl:     c,
		shard:  shard,
		nc:     nc,
		br:     br,
		writes: make(chan []byte, 64),
		done:   make(chan struct{}),
	}
	cc.mu.next = 1 // the hello used 1
	cc.mu.pending = make(map[uint32]*call)
	c.wg.Add(2)
	go cc.readLoop()
	go cc.writeLoop()
	return cc, nil
}

// conn returns shard's live connection, dialling a new one if it broke.
func (c *client) conn(ctx context.Context, shard int) (*clientConn, error) {
	s := c.slots[shard]
	if cc := s.conn.Load(); cc != nil && cc.alive() {
		return cc, nil
	}
	s.dialMu.Lock()
	defer s.dialMu.Unlock()
	if c.closed.Load() {
		return nil, errClientClosed
	}
	if cc := s.conn.Load(); cc != nil && cc.alive() {
		return cc, nil // another call redialled while we waited
	}
	cc, err := c.dialShard(ctx, shard)
	if err != nil {
		return nil, fmt.Errorf("%w: redialling: %w", ErrConnClosed, err)
	}
	c.log.Info("ring shard redialled", "shard", shard)
	s.conn.Store(cc)
	return cc, nil
}

func (c *client) do(ctx context.Context, shard int, req *request) (*response, error) {
	if c.closed.Load() {
		return nil, errClientClosed
	}
	cc, err := c.conn(ctx, shard)
	if err != nil {
		return nil, err
	}
	return cc.roundTrip(ctx, req)
}

func (c *client) shardOf(topic string, partition int32) int {
	return ShardFor(topic, partition, c.shards)
}

func (c *client) Produce(ctx context.Context, req *ProduceRequest) (ProduceResult, error) {
	if err := checkTopic(req.Topic); err != nil {
		return ProduceResult{}, err
	}
	resp, err := c.do(ctx, c.shardOf(req.Topic, req.Partition), &request{
		Op: OpProduce, Topic: req.Topic, Partition: req.Partition, Acks: req.Acks, Records: req.Records,
	})
	if err != nil {
		if errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrConnClosed) {
			err = fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
		}
		return ProduceResult{}, err
	}
	return resp.Produce, nil
}

// ProduceBatch sends one ProduceBatch message per shard the parts belong
// to, all before waiting for any answer, so a request over many
// partitions costs one round trip and no goroutine. A shard's message too
// large for the server's frame limit goes as one Produce per part instead,
// so each part gets the error its own size earns.
func (c *client) ProduceBatch(ctx context.Context, parts []ProducePart) {
	for i := range parts {
		parts[i].Result, parts[i].Err = ProduceResult{}, nil
	}
	type group struct {
		shard int
		idx   []int
		req   request
		f     sent
		err   error
	}
	var small [8]group
	groups := small[:0]
	for i := range parts {
		if err := checkTopic(parts[i].Topic); err != nil {
			parts[i].Err = err
			continue
		}
		sh := c.shardOf(parts[i].Topic, parts[i].Partition)
		var g *group
		for j := range groups {
			if groups[j].shard == sh {
				g = &groups[j]
				break
			}
		}
		if g == nil {
			groups = append(groups, group{shard: sh, req: request{Op: OpProduceBatch}})
			g = &groups[len(groups)-1]
		}
		g.idx = append(g.idx, i)
		g.req.Parts = append(g.req.Parts, ProducePart{ProduceRequest: parts[i].ProduceRequest})
	}
	for j := range groups {
		g := &groups[j]
		if c.closed.Load() {
			g.err = errClientClosed
			continue
		}
		cc, err := c.conn(ctx, g.shard)
		if err == nil {
			g.f, err = cc.send(ctx, &g.req)
		}
		g.err = err
	}
	for j := range groups {
		g := &groups[j]
		if g.err == nil {
			var resp *response
			if resp, g.err = g.f.await(ctx); g.err == nil && len(resp.Parts) != len(g.idx) {
				g.err = fmt.Errorf("%w: ProduceBatch of %d parts answered with %d", ErrProtocol, len(g.idx), len(resp.Parts))
			}
			if g.err == nil {
				for k, i := range g.idx {
					parts[i].Result, parts[i].Err = resp.Parts[k].Result, resp.Parts[k].Err
				}
				continue
			}
		}
		for _, i := range g.idx {
			if errors.Is(g.err, ErrFrameTooLarge) && !errors.Is(g.err, ErrConnClosed) {
				parts[i].Result, parts[i].Err = c.Produce(ctx, &parts[i].ProduceRequest)
				continue
			}
			parts[i].Err = g.err
		}
	}
}

// Fetch goes to the shard of the first partition; the server serves every
// partition of the request, whichever shard owns it.
func (c *client) Fetch(ctx context.Context, req *FetchRequest) (FetchResult, error) {
	shard := 0
	for i, p := range req.Partitions {
		if err := checkTopic(p.Topic); err != nil {
			return FetchResult{}, err
		}
		if i == 0 {
			shard = c.shardOf(p.Topic, p.Partition)
		}
	}
	resp, err := c.do(ctx, shard, &request{Op: OpFetch, Fetch: *req})
	if err != nil {
		return FetchResult{}, err
	}
	return resp.Fetch, nil
}

func (c *client) ListOffsets(ctx context.Context, topic string, partition int32, timestamp int64) (OffsetResult, error) {
	if err := checkTopic(topic); err != nil {
		return OffsetResult{}, err
	}
	resp, err := c.do(ctx, c.shardOf(topic, partition), &request{
		Op: OpListOffsets, Topic: topic, Partition: partition, Timestamp: timestamp,
	})
	if err != nil {
		return OffsetResult{}, err
	}
	return resp.Offset, nil
}

func (c *client) CreatePartition(ctx context.Context, topic string, partition int32, cfg PartitionConfig) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	_, err := c.do(ctx, c.shardOf(topic, partition), &request{
		Op: OpCreatePartition, Topic: topic, Partition: partition, Config: cfg,
	})
	return err
}

func (c *client) DeletePartition(ctx context.Context, topic string, partition int32) error {
	if err := checkTopic(topic); err != nil {
		return err
	}
	_, err := c.do(ctx, c.shardOf(topic, partition), &request{Op: OpDeletePartition, Topic: topic, Partition: partition})
	return err
}

func (c *client) DescribePartition(ctx context.Context, topic string, partition int32) (PartitionInfo, error) {
	if err := checkTopic(topic); err != nil {
		return PartitionInfo{}, err
	}
	resp, err := c.do(ctx, c.shardOf(topic, partition), &request{Op: OpDescribePartition, Topic: topic, Partition: partition})
	if err != nil {
		return PartitionInfo{}, err
	}
	return resp.Info, nil
}

// ListPartitions goes over shard 0's connection; the server lists every
// shard's partitions.
func (c *client) ListPartitions(ctx context.Context) ([]PartitionInfo, error) {
	resp, err := c.do(ctx, 0, &request{Op: OpListPartitions})
	if err != nil {
		return nil, err
	}
	return resp.Infos, nil
}

func (c *client) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (int64, error) {
	if err := checkTopic(topic); err != nil {
		return 0, err
	}
	resp, err := c.do(ctx, c.shardOf(topic, partition), &request{
		Op: OpDeleteRecords, Topic: topic, Partition: partition, Before: before,
	})
	if err != nil {
		return 0, err
	}
	return resp.LogStart, nil
}

func (c *client) OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (EpochEnd, error) {
	if err := checkTopic(topic); err != nil {
		return EpochEnd{}, err
	}
	resp, err := c.do(ctx, c.shardOf(topic, partition), &request{
		Op: OpOffsetForLeaderEpoch, Topic: topic, Partition: partition, Epoch: epoch,
	})
	if err != nil {
		return EpochEnd{}, err
	}
	return resp.EpochEnd, nil
}

func (c *client) WriteTxnMarker(ctx context.Context, m TxnMarker) (int64, error) {
	if err := checkTopic(m.Topic); err != nil {
		return 0, err
	}
	resp, err := c.do(ctx, c.shardOf(m.Topic, m.Partition), &request{
		Op: OpTxnMarker, Topic: m.Topic, Partition: m.Partition, Marker: m,
	})
	if err != nil {
		return 0, err
	}
	return resp.MarkerAt, nil
}

// Close closes every connection, failing calls in flight, and waits for the
// connections' goroutines to end.
func (c *client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	for _, s := range c.slots {
		if s == nil {
			continue
		}
		s.dialMu.Lock()
		if cc := s.conn.Load(); cc != nil {
			cc.fail(errClientClosed)
		}
		s.dialMu.Unlock()
	}
	c.wg.Wait()
	return nil
}

// clientConn is one shard connection.
type clientConn struct {
	cl     *client
	shard  int
	nc     net.Conn
	br     *bufio.Reader // read goroutine only
	writes chan []byte   // whole frames, to the write goroutine
	done   chan struct{} // closed by fail

	mu struct {
		sync.Mutex
		next    uint32
		pending map[uint32]*call
		err     error // set once, by fail
	}
}

// call is one request waiting for its response. res has room for the one
// result it gets, so the reader and fail never block on it.
type call struct {
	res chan callResult
}

type callResult struct {
	op      Opcode
	payload []byte
	err     error
}

func (cc *clientConn) alive() bool {
	select {
	case <-cc.done:
		return false
	default:
		return true
	}
}

// roundTrip sends req and waits for its response, or for ctx, or for the
// connection to fail. A call abandoned through ctx sends a Cancel so the
// server can stop working on it.
func (cc *clientConn) roundTrip(ctx context.Context, req *request) (*response, error) {
	f, err := cc.send(ctx, req)
	if err != nil {
		return nil, err
	}
	return f.await(ctx)
}

// sent is a request on its way: await collects its response. Splitting
// the two lets one caller have requests in flight on several shards.
type sent struct {
	cc   *clientConn
	op   Opcode
	corr uint32
	cl   *call
}

// send queues req on the connection; the first half of roundTrip.
func (cc *clientConn) send(ctx context.Context, req *request) (sent, error) {
	if err := ctx.Err(); err != nil {
		return sent{}, err
	}
	if dl, ok := ctx.Deadline(); ok {
		req.Timeout = time.Until(dl)
		if req.Timeout <= 0 {
			return sent{}, context.DeadlineExceeded
		}
	}
	frame := appendRequest(nil, req) // correlation id patched in below
	if n := len(frame) - headerSize; n > cc.cl.serverMax {
		return sent{}, fmt.Errorf("%w: %v request of %d bytes, server limit %d", ErrFrameTooLarge, req.Op, n, cc.cl.serverMax)
	}

	cl := &call{res: make(chan callResult, 1)}
	cc.mu.Lock()
	if err := cc.mu.err; err != nil {
		cc.mu.Unlock()
		return sent{}, err
	}
	cc.mu.next++
	if cc.mu.next == 0 {
		cc.mu.next = 1 // 0 is the connection-level id of Error frames
	}
	corr := cc.mu.next
	cc.mu.pending[corr] = cl
	cc.mu.Unlock()
	binary.BigEndian.PutUint32(frame[headerSize:], corr)

	select {
	case cc.writes <- frame:
	case <-cc.done:
		// fail has handed cl its error; await collects it.
	case <-ctx.Done():
		cc.forget(corr)
		return sent{}, ctx.Err()
	}
	return sent{cc: cc, op: req.Op, corr: corr, cl: cl}, nil
}

// await waits for the response to a sent request; the second half of
// roundTrip.
func (f sent) await(ctx context.Context) (*response, error) {
	cc, cl, corr := f.cc, f.cl, f.corr
	select {
	case r := <-cl.res:
		if r.err != nil {
			return nil, r.err
		}
		if r.op != f.op {
			return nil, fmt.Errorf("%w: %v request answered with %v", ErrProtocol, f.op, r.op)
		}
		resp, err := decodeResponse(r.op, r.payload)
		if err != nil {
			cc.cl.log.Warn("ring malformed response", "shard", cc.shard, "op", r.op.String(), "err", err)
			return nil, err
		}
		if err := resp.err(); err != nil {
			return nil, err
		}
		return resp, nil
	case <-ctx.Done():
		if cc.forget(corr) {
			cc.sendCancel(corr)
		}
		return nil, ctx.Err()
	}
}

// forget drops a pending call; it reports whether the call was still
// waiting (and so the server may still be working on it).
func (cc *clientConn) forget(corr uint32) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	_, ok := cc.mu.pending[corr]
	delete(cc.mu.pending, corr)
	return ok
}

// sendCancel is best effort: with the write queue full the server's own
// timeout will end the request instead.
func (cc *clientConn) sendCancel(corr uint32) {
	select {
	case cc.writes <- appendRequest(nil, &request{Op: OpCancel, Corr: corr}):
	default:
	}
}

// fail marks the connection dead once: it records why, closes the socket
// (waking both goroutines) and fails every pending call with that reason.
func (cc *clientConn) fail(cause error) {
	cc.mu.Lock()
	if cc.mu.err != nil {
		cc.mu.Unlock()
		return
	}
	err := fmt.Errorf("%w: shard %d at %s: %w", ErrConnClosed, cc.shard, cc.cl.address, cause)
	cc.mu.err = err
	pending := cc.mu.pending
	cc.mu.pending = nil
	cc.mu.Unlock()

	close(cc.done)
	_ = cc.nc.Close()
	for _, cl := range pending {
		cl.res <- callResult{err: err}
	}
	if !errors.Is(cause, errClientClosed) {
		cc.cl.log.Warn("ring connection lost", "shard", cc.shard, "err", cause, "failed_calls", len(pending))
	}
}

func (cc *clientConn) readLoop() {
	defer cc.cl.wg.Done()
	for {
		op, payload, err := readFrame(cc.br, cc.cl.maxPayload)
		if err != nil {
			cc.fail(err)
			return
		}
		if op == OpError {
			resp, derr := decodeResponse(op, payload)
			switch {
			case derr != nil:
				cc.fail(derr)
			case resp.Code == codeNone:
				cc.fail(fmt.Errorf("%w: error frame without an error", ErrProtocol))
			default:
				cc.fail(fmt.Errorf("server closed the connection: %w", resp.err()))
			}
			return
		}
		if len(payload) < 4 {
			cc.fail(fmt.Errorf("%w: %v response of %d bytes", ErrProtocol, op, len(payload)))
			return
		}
		corr := binary.BigEndian.Uint32(payload)
		cc.mu.Lock()
		cl := cc.mu.pending[corr]
		delete(cc.mu.pending, corr)
		cc.mu.Unlock()
		if cl != nil { // nil: the caller gave up on it
			cl.res <- callResult{op: op, payload: payload}
		}
	}
}

// writeLoop owns the socket's write side; frames queued behind each other
// share one flush.
func (cc *clientConn) writeLoop() {
	defer cc.cl.wg.Done()
	bw := bufio.NewWriterSize(cc.nc, 64<<10)
	for {
		select {
		case f := <-cc.writes:
			_, err := bw.Write(f)
			for err == nil && len(cc.writes) > 0 {
				_, err = bw.Write(<-cc.writes)
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil {
				cc.fail(err)
				return
			}
		case <-cc.done:
			return
		}
	}
}
