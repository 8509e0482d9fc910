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
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/logstore"
	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/aerostream/aerostream/internal/bytebudget"
)

// ringVersion is the version of the ring this server describes. A single
// store's ring never changes, so it is a constant; the number moves once the
// controller places partitions over several stores, and a Hello naming any
// other version is refused with ErrStaleRing.
const ringVersion int64 = 1

// Server serves a store's shards over the ring protocol. Set the exported
// fields before calling Serve; zero values take the defaults.
type Server struct {
	// MaxPayloadBytes bounds the payload of a frame the server reads and of
	// a fetch response it writes. A larger request frame gets an error frame
	// and its connection is closed. Default DefaultMaxPayloadBytes.
	MaxPayloadBytes int
	// MaxInFlight bounds the requests one connection may have in service at
	// once; the server stops reading that connection while at the bound.
	// Default 256.
	MaxInFlight int
	// DrainTimeout bounds how long a closing connection may spend writing
	// the responses it still owes. Default 5s.
	DrainTimeout time.Duration
	// MaxQueuedBytes bounds the request payload bytes read and in service
	// over all connections at once (as Kafka's queued.max.request.bytes);
	// a connection waits to read a payload while they are spent. Default
	// DefaultMaxQueuedBytes; negative means no bound.
	MaxQueuedBytes int64
	// TLS, when set, makes every connection complete a TLS handshake
	// before its first frame (tls.go); give it client certificates
	// required, so that only the cluster's nodes reach the shards. A
	// connection whose handshake fails is logged and closed.
	TLS *tls.Config

	budget atomic.Pointer[bytebudget.Budget] // set by Serve; nil without a bound
	store  *logstore.Store
	logger *slog.Logger
	stats  struct {
		conns, requests, inFlight, protocolErrors, sendfileBytes, copiedBytes, tlsFailures atomic.Int64
	}
}

// ServerStats counts what a Server has done since it was made.
type ServerStats struct {
	Connections    int64 // connections accepted
	Requests       int64 // requests decoded
	InFlight       int64 // requests being served right now
	ProtocolErrors int64 // connections closed for breaking the protocol
	SendfileBytes  int64 // record bytes written to sockets with sendfile(2)
	CopiedBytes    int64 // record bytes written from user-space buffers
	QueuedBytes    int64 // request payload bytes reserved right now
	QueueWaits     int64 // payloads that waited for MaxQueuedBytes
	TLSFailures    int64 // connections closed for a failed TLS handshake
}

// NewServer returns a Server for s. logger may be nil (slog.Default).
func NewServer(s *logstore.Store, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	return &Server{store: s, logger: logger.With("component", "ring-server")}
}

// Stats returns the server's counters.
func (s *Server) Stats() ServerStats {
	st := ServerStats{
		Connections:    s.stats.conns.Load(),
		Requests:       s.stats.requests.Load(),
		InFlight:       s.stats.inFlight.Load(),
		ProtocolErrors: s.stats.protocolErrors.Load(),
		SendfileBytes:  s.stats.sendfileBytes.Load(),
		CopiedBytes:    s.stats.copiedBytes.Load(),
		TLSFailures:    s.stats.tlsFailures.Load(),
	}
	if b := s.budget.Load(); b != nil {
		st.QueuedBytes, st.QueueWaits = b.InUse(), b.Waits()
	}
	return st
}

// serverConfig is the Server's settings with defaults applied, copied once
// per Serve so connections never read the exported fields concurrently with
// a caller writing them.
type serverConfig struct {
	maxPayload  int
	maxInFlight int
	drain       time.Duration
	shards      int
}

func (s *Server) config() serverConfig {
	c := serverConfig{
		maxPayload:  s.MaxPayloadBytes,
		maxInFlight: s.MaxInFlight,
		drain:       s.DrainTimeout,
		shards:      s.store.NumShards(),
	}
	if c.maxPayload <= 0 || c.maxPayload > 1<<31-1 {
		c.maxPayload = DefaultMaxPayloadBytes
	}
	if c.maxInFlight <= 0 {
		c.maxInFlight = 256
	}
	if c.drain <= 0 {
		c.drain = 5 * time.Second
	}
	return c
}

// Serve accepts ring connections on ln until ctx is done, then closes ln,
// lets every connection finish the requests it has in service (long-polling
// fetches are cut short) and returns once all of them are closed. It returns
// nil after ctx is done, or the listener's error if accepting failed first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	cfg := s.config()
	var budget *bytebudget.Budget
	switch q := s.MaxQueuedBytes; {
	case q == 0:
		budget = bytebudget.New(DefaultMaxQueuedBytes)
	case q > 0:
		budget = bytebudget.New(q)
	}
	s.budget.Store(budget)
	connCtx, stopConns := context.WithCancel(ctx)
	defer stopConns()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()

	tlsCfg := s.TLS
	s.logger.Info("ring serving", "addr", ln.Addr().String(), "shards", cfg.shards, "ring_version", ringVersion, "tls", tlsCfg != nil)
	var (
		wg      sync.WaitGroup
		err     error
		backoff time.Duration
	)
	for {
		nc, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(aerr, net.ErrClosed) {
				err = aerr
				break
			}
			// Out of descriptors and the like: wait and retry, as
			// net/http does, rather than give up serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("ring accept failed", "err", aerr, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ctx.Done():
			}
			break
		}
		backoff = 0
		s.stats.conns.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if tlsCfg != nil {
				var ok bool
				if nc, ok = s.acceptTLS(connCtx, tlsCfg, nc); !ok {
					return
				}
			}
			s.serveConn(connCtx, cfg, budget, nc)
		}()
	}
	// A failed listener ends the connections too: Serve must not return
	// while they still run, and nothing else would stop them.
	stopConns()
	_ = ln.Close()
	wg.Wait()
	s.logger.Info("ring stopped", "addr", ln.Addr().String())
	return err
}

// serverConn is one ring connection. Its read goroutine (serveConn's own)
// owns the socket's read side and the hello state; its write goroutine owns
// the write side; request handlers run one goroutine each and hand their
// responses to the writer.
type serverConn struct {
	srv      *Server
	cfg      serverConfig
	nc       net.Conn
	log      *slog.Logger
	shutdown context.Context // the Serve context
	connCtx  context.Context // ends when the connection does
	fetchCtx context.Context // connCtx, also ended by shutdown

	out      chan *outMsg  // to the writer; closed after handlers are done
	sem      chan struct{} // in-flight bound
	handlers sync.WaitGroup

	shard int // -1 until Hello; read goroutine only

	budget *bytebudget.Budget // the server's; nil without a bound
	held   int64              // reserved for the frame being dispatched; read goroutine only

	mu struct {
		sync.Mutex
		inflight map[uint32]context.CancelFunc
	}
}

// protoError is a protocol violation: the connection gets an Error frame
// for corr and is closed.
type protoError struct {
	corr uint32
	err  error
}

func (e *protoError) Error() string { return e.err.Error() }
func (e *protoError) Unwrap() error { return e.err }

func (s *Server) serveConn(shutdown context.Context, cfg serverConfig, budget *bytebudget.Budget, nc net.Conn) {
	connCtx, cancelConn := context.WithCancel(context.WithoutCancel(shutdown))
	fetchCtx, cancelFetch := context.WithCancel(connCtx)
	c := &serverConn{
		srv:      s,
		cfg:      cfg,
		nc:       nc,
		log:      s.logger.With("remote", nc.RemoteAddr().String()),
		shutdown: shutdown,
		connCtx:  connCtx,
		fetchCtx: fetchCtx,
		out:      make(chan *outMsg, 64),
		sem:      make(chan struct{}, cfg.maxInFlight),
		shard:    -1,
		budget:   budget,
	}
	c.mu.inflight = make(map[uint32]context.CancelFunc)
	// On shutdown: stop long polls, stop reading, and give the writer
	// DrainTimeout to deliver what is owed even to a peer that stopped
	// reading, so the drain cannot hang.
	stopFetch := context.AfterFunc(shutdown, cancelFetch)
	stopDeadlines := context.AfterFunc(shutdown, func() {
		_ = nc.SetReadDeadline(time.Now())
		_ = nc.SetWriteDeadline(time.Now().Add(cfg.drain))
	})
	defer func() {
		stopFetch()
		stopDeadlines()
		cancelFetch()
		cancelConn()
	}()

	c.log.Debug("ring connection opened")
	writerDone := make(chan struct{})
	// The writer gets the logger as it is now: the read goroutine adds the
	// shard to c.log at Hello, and the two must not share the field.
	go func(log *slog.Logger) {
		defer close(writerDone)
		c.writeLoop(log)
	}(c.log)

	err := c.readLoop()
	var final *outMsg
	var pe *protoError
	switch {
	case shutdown.Err() != nil:
		c.log.Debug("ring connection closing: server stopping")
	case errors.As(err, &pe):
		s.stats.protocolErrors.Add(1)
		c.log.Warn("ring protocol error, closing connection", "err", pe.err)
		cancelConn()
		code, msg := wireError(pe.err)
		final = &outMsg{parts: []outPart{{b: appendResponse(nil, &response{Op: OpError, Corr: pe.corr, Code: code, Msg: msg})}}}
	default:
		// The peer went away (or the writer failed): nobody will read
		// the answers to what is still in service.
		c.log.Debug("ring connection closed", "err", err)
		cancelConn()
	}
	_ = nc.SetWriteDeadline(time.Now().Add(cfg.drain))
	c.handlers.Wait()
	if final != nil {
		c.out <- final
	}
	close(c.out)
	<-writerDone
	_ = nc.Close()
}

func (c *serverConn) readLoop() error {
	br := bufio.NewReaderSize(c.nc, 64<<10)
	defer c.releaseHeld()
	for {
		op, payload, err := c.readFrame(br)
		if err != nil {
			if errors.Is(err, ErrProtocol) || errors.Is(err, ErrFrameTooLarge) {
				return &protoError{err: err}
			}
			return err
		}
		c.srv.stats.requests.Add(1)
		req, err := decodeRequest(op, payload)
		if err != nil {
			if req != nil && errors.Is(err, ErrUnsupported) {
				// A newer client: answer, and keep the connection.
				c.reply(&response{Op: op, Corr: req.Corr}, err)
				continue
			}
			var corr uint32
			if req != nil {
				corr = req.Corr
			}
			return &protoError{corr: corr, err: err}
		}
		err = c.dispatch(req)
		c.releaseHeld() // unless a handler took the reservation over
		if err != nil {
			return err
		}
	}
}

// readFrame reads one request frame, reserving its payload's size in the
// server's budget before reading the payload; the reservation is c.held
// until a handler takes it over or the frame is done with.
func (c *serverConn) readFrame(br *bufio.Reader) (Opcode, []byte, error) {
	op, n, err := readHeader(br, c.cfg.maxPayload)
	if err != nil {
		return op, nil, err
	}
	if c.budget != nil {
		// fetchCtx ends on shutdown too, which a wait must honour.
		if err := c.budget.Acquire(c.fetchCtx, int64(n)); err != nil {
			return op, nil, err
		}
		c.held = int64(n)
	}
	payload, err := readPayload(br, op, n)
	return op, payload, err
}

func (c *serverConn) releaseHeld() {
	if c.held > 0 {
		c.budget.Release(c.held)
		c.held = 0
	}
}

// dispatch answers connection-level requests itself and starts a handler
// for the rest. A returned error closes the connection.
func (c *serverConn) dispatch(req *request) error {
	switch req.Op {
	case OpDescribe:
		c.reply(&response{
			Op: OpDescribe, Corr: req.Corr,
			RingVersion: ringVersion, Shards: int32(c.cfg.shards), MaxPayload: uint32(c.cfg.maxPayload),
		}, nil)
		return nil
	case OpHello:
		switch {
		case c.shard >= 0:
			return &protoError{req.Corr, fmt.Errorf("%w: second hello on a shard %d connection", ErrProtocol, c.shard)}
		case req.Shard < 0 || int(req.Shard) >= c.cfg.shards:
			return &protoError{req.Corr, fmt.Errorf("%w: hello for shard %d, ring has %d shards", ErrWrongShard, req.Shard, c.cfg.shards)}
		case req.RingVersion != ringVersion:
			return &protoError{req.Corr, fmt.Errorf("%w: hello for ring version %d, server is on %d", ErrStaleRing, req.RingVersion, ringVersion)}
		}
		c.shard = int(req.Shard)
		c.log = c.log.With("shard", c.shard)
		c.reply(&response{Op: OpHello, Corr: req.Corr}, nil)
		return nil
	case OpCancel:
		c.mu.Lock()
		cancel := c.mu.inflight[req.Corr]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	}
	if c.shard < 0 {
		return &protoError{req.Corr, fmt.Errorf("%w: %v before hello", ErrProtocol, req.Op)}
	}
	if owner, ok := c.owner(req); ok && owner != c.shard {
		c.reply(&response{Op: req.Op, Corr: req.Corr},
			fmt.Errorf("%w: %s/%d belongs to shard %d, connection is shard %d", ErrWrongShard, req.Topic, req.Partition, owner, c.shard))
		return nil
	}

	c.sem <- struct{}{}
	base := c.connCtx
	if req.Op == OpFetch {
		base = c.fetchCtx
	}
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeout(base, req.Timeout)
	} else {
		ctx, cancel = context.WithCancel(base)
	}
	c.mu.Lock()
	_, dup := c.mu.inflight[req.Corr]
	if !dup {
		c.mu.inflight[req.Corr] = cancel
	}
	c.mu.Unlock()
	if dup {
		cancel()
		<-c.sem
		return &protoError{req.Corr, fmt.Errorf("%w: correlation id %d already in flight", ErrProtocol, req.Corr)}
	}
	c.handlers.Add(1)
	c.srv.stats.inFlight.Add(1)
	held := c.held
	c.held = 0
	go c.handle(ctx, cancel, req, held)
	return nil
}

// owner is the shard a request must arrive on: its partition's, or for a
// fetch its first partition's. Requests not tied to a partition may use any
// shard connection.
func (c *serverConn) owner(req *request) (int, bool) {
	switch req.Op {
	case OpListPartitions, OpProduceBatch:
		// A batch's parts may belong to several shards; the store routes
		// each to its own.
		return 0, false
	case OpFetch:
		if len(req.Fetch.Partitions) == 0 {
			return 0, false
		}
		p := req.Fetch.Partitions[0]
		return logstore.ShardFor(p.Topic, p.Partition, c.cfg.shards), true
	}
	return logstore.ShardFor(req.Topic, req.Partition, c.cfg.shards), true
}

// handle serves req, then gives back the held bytes its frame reserved.
func (c *serverConn) handle(ctx context.Context, cancel context.CancelFunc, req *request, held int64) {
	defer func() {
		if held > 0 {
			c.budget.Release(held)
		}
		c.mu.Lock()
		delete(c.mu.inflight, req.Corr)
		c.mu.Unlock()
		cancel()
		<-c.sem
		c.srv.stats.inFlight.Add(-1)
		c.handlers.Done()
	}()
	c.out <- c.execute(ctx, req)
}

// execute runs one request against the store and builds its response.
func (c *serverConn) execute(ctx context.Context, req *request) *outMsg {
	st := c.srv.store
	resp := &response{Op: req.Op, Corr: req.Corr}
	var err error
	switch req.Op {
	case OpProduce:
		resp.Produce, err = st.Produce(ctx, &ProduceRequest{
			Topic: req.Topic, Partition: req.Partition, Acks: req.Acks, Records: req.Records,
		})
	case OpProduceBatch:
		st.ProduceBatch(ctx, req.Parts)
		for i := range req.Parts {
			if p := &req.Parts[i]; p.Err != nil && c.shutdown.Err() != nil && errors.Is(p.Err, context.Canceled) {
				p.Err = fmt.Errorf("%w: ring server stopping: %v", ErrClosed, p.Err)
			}
		}
		resp.Parts = req.Parts
	case OpFetch:
		res, ferr := st.Fetch(ctx, &req.Fetch)
		if ferr == nil {
			if msg, ok := c.fetchResponse(req.Corr, &res); ok {
				return msg
			}
			res.Release()
			err = fmt.Errorf("%w: fetch response exceeds the %d-byte frame limit; lower the fetch max bytes", ErrFrameTooLarge, c.cfg.maxPayload)
		} else {
			res.Release()
			err = ferr
		}
	case OpListOffsets:
		resp.Offset, err = st.ListOffsets(ctx, req.Topic, req.Partition, req.Timestamp)
	case OpCreatePartition:
		err = st.CreatePartition(ctx, req.Topic, req.Partition, req.Config)
	case OpDeletePartition:
		err = st.DeletePartition(ctx, req.Topic, req.Partition)
	case OpDescribePartition:
		resp.Info, err = st.DescribePartition(ctx, req.Topic, req.Partition)
	case OpListPartitions:
		resp.Infos, err = st.ListPartitions(ctx)
	case OpDeleteRecords:
		resp.LogStart, err = st.DeleteRecords(ctx, req.Topic, req.Partition, req.Before)
	case OpOffsetForLeaderEpoch:
		resp.EpochEnd, err = st.OffsetForLeaderEpoch(ctx, req.Topic, req.Partition, req.Epoch)
	case OpTxnMarker:
		resp.MarkerAt, err = st.WriteTxnMarker(ctx, req.Marker)
	default:
		err = fmt.Errorf("%w: %v", ErrUnsupported, req.Op)
	}
	if err != nil && c.shutdown.Err() != nil && errors.Is(err, context.Canceled) {
		// Our own shutdown cancelled it, not the client: say so in a way
		// the client can retry elsewhere.
		err = fmt.Errorf("%w: ring server stopping: %v", ErrClosed, err)
	}
	return c.responseMsg(resp, err)
}

// reply queues a response from the read goroutine.
func (c *serverConn) reply(resp *response, err error) {
	c.out <- c.responseMsg(resp, err)
}

func (c *serverConn) responseMsg(resp *response, err error) *outMsg {
	if err != nil {
		resp.Code, resp.Msg = wireError(err)
	}
	return &outMsg{parts: []outPart{{b: appendResponse(nil, resp)}}}
}

// fetchResponse lays out a fetch response as metadata slices interleaved
// with the partitions' records, so file ranges go to the socket without
// passing through user space. ok is false when the response would not fit
// in a frame.
func (c *serverConn) fetchResponse(corr uint32, res *FetchResult) (*outMsg, bool) {
	meta := make([]byte, 0, 32+64*len(res.Partitions))
	meta = appendHeader(meta, OpFetch, 0)
	meta = kbin.AppendUint32(meta, corr)
	meta = kbin.AppendInt16(meta, codeNone)
	meta = kbin.AppendArrayLen(meta, len(res.Partitions))
	cuts := make([]int, len(res.Partitions))
	records := 0
	for i := range res.Partitions {
		p := &res.Partitions[i]
		n := p.Records.Size()
		meta = appendFetchPartitionMeta(meta, p, n)
		cuts[i] = len(meta)
		records += n
	}
	payload := len(meta) - headerSize + records
	if payload > c.cfg.maxPayload {
		return nil, false
	}
	// The length covers the records that follow meta, not meta alone.
	binary.BigEndian.PutUint32(meta[3:headerSize], uint32(payload))

	msg := &outMsg{release: res.Release}
	prev := 0
	for i := range res.Partitions {
		msg.parts = append(msg.parts, outPart{b: meta[prev:cuts[i]]}, outPart{rec: &res.Partitions[i].Records})
		prev = cuts[i]
	}
	if len(res.Partitions) == 0 {
		msg.parts = append(msg.parts, outPart{b: meta})
	}
	return msg, true
}

// outMsg is one response frame in parts: encoded bytes and record ranges.
// release, if set, runs once the frame is written or dropped.
type outMsg struct {
	parts   []outPart
	release func()
}

type outPart struct {
	b   []byte
	rec *Records
}

// writeLoop owns the socket's write side. It batches frames that queue up
// behind each other into one flush, and after a write error keeps draining
// the queue so that handlers never block and fetch results are released.
func (c *serverConn) writeLoop(log *slog.Logger) {
	bw := bufio.NewWriterSize(c.nc, 64<<10)
	var failed error
	for msg := range c.out {
		if failed == nil {
			failed = c.writeMsg(bw, msg)
			if failed == nil && len(c.out) == 0 {
				failed = bw.Flush()
			}
			if failed != nil {
				log.Debug("ring write failed", "err", failed)
				_ = c.nc.Close() // wakes the read goroutine
			}
		}
		if msg.release != nil {
			msg.release()
		}
	}
	if failed == nil {
		_ = bw.Flush()
	}
}

func (c *serverConn) writeMsg(bw *bufio.Writer, msg *outMsg) error {
	for _, p := range msg.parts {
		if p.rec == nil {
			if _, err := bw.Write(p.b); err != nil {
				return err
			}
			continue
		}
		r := p.rec
		if r.File == nil {
			if _, err := bw.Write(r.Bytes); err != nil {
				return err
			}
			for _, b := range r.More {
				if _, err := bw.Write(b); err != nil {
					return err
				}
			}
			c.srv.stats.copiedBytes.Add(int64(r.Size()))
			continue
		}
		if r.Len == 0 {
			continue
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		sent, copied, err := SendRange(c.nc, r.File, r.Pos, r.Len)
		c.srv.stats.sendfileBytes.Add(int64(sent))
		c.srv.stats.copiedBytes.Add(int64(copied))
		if err != nil {
			return fmt.Errorf("sending %d record bytes: %w", r.Len, err)
		}
	}
	return nil
}
