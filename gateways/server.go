package gateways

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/internal/bytebudget"
)

// Protocol is a wire protocol served by a Server.
type Protocol interface {
	// NewSession is called once per accepted connection, on its read
	// goroutine, before the first frame is read.
	NewSession(c *Conn) Session
}

// Session is one connection's protocol state. ReadFrame and Handle are
// called from the connection's read goroutine only, one at a time; Close is
// called once, after the last of them has returned and the write goroutine
// has written (or dropped) every response.
type Session interface {
	// ReadFrame reads one request frame of at most maxBytes bytes: its
	// header from r, its body with r.Body, which bounds the memory a
	// frame's claimed size can take. An error ends the connection: one
	// wrapping ErrFrameTooLarge or ErrMalformedFrame is logged as a
	// protocol error, anything else (EOF, a reset) as the client going
	// away.
	ReadFrame(r *FrameReader, maxBytes int) ([]byte, error)
	// Handle serves one frame and returns the response to write, or nil
	// when the request gets none. ctx ends when the connection closes or
	// the server drains. A non-nil error closes the connection once what is
	// already queued (and resp, if not nil) is written.
	Handle(ctx context.Context, frame []byte) (resp *Response, err error)
	// Close releases the session's state.
	Close()
}

// Principal is who a connection acts for.
type Principal struct {
	Mechanism string // how it was authenticated; "" for Anonymous
	Name      string
}

// MechanismTLS is the Mechanism of a principal a verified TLS client
// certificate named.
const MechanismTLS = "SSL"

// Anonymous is the principal of every connection until an authentication
// exchange sets another.
var Anonymous = Principal{Name: "ANONYMOUS"}

// Conn is what a Session knows of its connection.
type Conn struct {
	ID     uint64
	Remote net.Addr
	Local  net.Addr
	Log    *slog.Logger // carries the remote address and connection id

	principal atomic.Pointer[Principal]

	// push and writerDone are the write goroutine's second queue and its
	// end, for Push.
	push       chan *Response
	writerDone <-chan struct{}
}

// ErrConnClosed: Push on a connection whose writer has stopped.
var ErrConnClosed = errors.New("connection closed")

// Push queues a response the client did not ask for right now (a
// protocol's server-push stream), from any goroutine. It waits while the
// writer's queue is full, until ctx ends, and fails with ErrConnClosed once
// the connection's writer has stopped; a failed Push releases resp. Pushed
// responses are written between the read goroutine's responses, in the
// order they were pushed. A Session stops its pushers by the time its Close
// returns.
func (c *Conn) Push(ctx context.Context, resp *Response) error {
	select {
	case c.push <- resp:
		return nil
	case <-c.writerDone:
		resp.release()
		return ErrConnClosed
	case <-ctx.Done():
		resp.release()
		return ctx.Err()
	}
}

// Principal returns who the connection acts for.
func (c *Conn) Principal() Principal {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return Anonymous
}

// SetPrincipal is the authentication hook: a protocol's authentication
// exchange calls it once the client has proved who it is.
func (c *Conn) SetPrincipal(p Principal) { c.principal.Store(&p) }

// Server serves a Protocol on a listener. Set the exported fields before
// Serve; zero values take the defaults.
type Server struct {
	// Name labels log lines ("kafka", "native").
	Name     string
	Protocol Protocol
	Logger   *slog.Logger
	// MaxFrameBytes bounds one request frame (Kafka's
	// socket.request.max.bytes). Default 100 MiB.
	MaxFrameBytes int
	// MaxQueuedBytes bounds the request bytes read and in service over
	// all connections at once (Kafka's queued.max.request.bytes); a
	// connection waits to read a frame's body while they are spent.
	// Default DefaultMaxQueuedBytes; negative means no bound.
	MaxQueuedBytes int64
	// MaxConns bounds the open connections; 0 means no bound.
	MaxConns int
	// IdleTimeout closes a connection that sends no request for this long
	// (Kafka's connections.max.idle.ms). Default 10 minutes; negative
	// disables it.
	IdleTimeout time.Duration
	// DrainTimeout bounds how long a closing connection may spend writing
	// the responses it owes. Default 5s.
	DrainTimeout time.Duration
	// QueueDepth bounds the responses queued for one connection's writer;
	// the reader waits while the queue is full. Default 32.
	QueueDepth int
	// HandshakeTimeout bounds the TLS handshake a connection of a TLS
	// listener completes before it is served. Default 10s.
	HandshakeTimeout time.Duration
	// Principals names the principal of a TLS client that presented a
	// verified certificate (tls.principal_mapping_rules); nil is Kafka's
	// DEFAULT, the subject's full distinguished name. An authentication
	// exchange (SASL on SASL_SSL) replaces it.
	Principals *auth.PrincipalMapper

	nextID atomic.Uint64
	budget atomic.Pointer[bytebudget.Budget] // set by Serve; nil without a bound
	stats  struct {
		conns, open, frames, protocolErrors, handshakeErrors, panics, sendfileBytes, copiedBytes atomic.Int64
	}
}

// Stats counts what a Server has done.
type Stats struct {
	Connections    int64 // accepted
	Open           int64 // open right now
	Frames         int64 // request frames read
	ProtocolErrors int64 // connections closed for a bad frame
	// HandshakeErrors counts connections closed because their TLS
	// handshake failed or timed out, or their certificate named no
	// principal.
	HandshakeErrors int64
	Panics          int64 // connections closed because handling a frame panicked
	SendfileBytes   int64 // file bytes written with sendfile(2)
	CopiedBytes     int64 // file bytes written through a user-space buffer
	QueuedBytes     int64 // request bytes reserved right now (MaxQueuedBytes)
	QueueWaits      int64 // frames whose body waited for MaxQueuedBytes
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Connections:     s.stats.conns.Load(),
		Open:            s.stats.open.Load(),
		Frames:          s.stats.frames.Load(),
		ProtocolErrors:  s.stats.protocolErrors.Load(),
		HandshakeErrors: s.stats.handshakeErrors.Load(),
		Panics:          s.stats.panics.Load(),
		SendfileBytes:   s.stats.sendfileBytes.Load(),
		CopiedBytes:     s.stats.copiedBytes.Load(),
	}
	if b := s.budget.Load(); b != nil {
		st.QueuedBytes, st.QueueWaits = b.InUse(), b.Waits()
	}
	return st
}

// DefaultMaxFrameBytes is Kafka's socket.request.max.bytes default.
const DefaultMaxFrameBytes = 100 << 20

type serverConfig struct {
	maxFrame   int
	idle       time.Duration
	drain      time.Duration
	handshake  time.Duration
	queueDepth int
	log        *slog.Logger
}

func (s *Server) config() serverConfig {
	c := serverConfig{maxFrame: s.MaxFrameBytes, idle: s.IdleTimeout, drain: s.DrainTimeout, handshake: s.HandshakeTimeout,
		queueDepth: s.QueueDepth, log: s.Logger}
	if c.handshake <= 0 {
		c.handshake = 10 * time.Second
	}
	if c.maxFrame <= 0 {
		c.maxFrame = DefaultMaxFrameBytes
	}
	if c.idle == 0 {
		c.idle = 10 * time.Minute
	}
	if c.drain <= 0 {
		c.drain = 5 * time.Second
	}
	if c.queueDepth <= 0 {
		c.queueDepth = 32
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	name := s.Name
	if name == "" {
		name = "gateway"
	}
	c.log = c.log.With("gateway", name)
	return c
}

// Serve accepts connections on ln until ctx ends, then closes ln, drains
// every connection and returns once all are closed. It returns nil after
// ctx ends, or the listener's error if accepting failed first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.Protocol == nil {
		return errors.New("gateways: Server.Protocol is nil")
	}
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

	cfg.log.Info("gateway serving", "addr", ln.Addr().String(), "max_frame_bytes", cfg.maxFrame)
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
			// Out of descriptors and the like: wait and retry rather
			// than stop serving.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			cfg.log.Warn("accept failed", "err", aerr, "retry_in", backoff)
			select {
			case <-time.After(backoff):
				continue
			case <-ctx.Done():
			}
			break
		}
		backoff = 0
		s.stats.conns.Add(1)
		if s.MaxConns > 0 && s.stats.open.Load() >= int64(s.MaxConns) {
			cfg.log.Warn("closing new connection", "remote", nc.RemoteAddr().String(), "err", ErrTooManyConnections, "max_conns", s.MaxConns)
			_ = nc.Close()
			continue
		}
		s.stats.open.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.stats.open.Add(-1)
			s.serveConn(connCtx, cfg, budget, nc)
		}()
	}
	stopConns()
	_ = ln.Close()
	wg.Wait()
	cfg.log.Info("gateway stopped", "addr", ln.Addr().String())
	return err
}

// serveConn runs one connection: this goroutine reads and handles, a
// second one writes.
func (s *Server) serveConn(shutdown context.Context, cfg serverConfig, budget *bytebudget.Budget, nc net.Conn) {
	id := s.nextID.Add(1)
	c := &Conn{ID: id, Remote: nc.RemoteAddr(), Local: nc.LocalAddr()}
	c.Log = cfg.log.With("remote", nc.RemoteAddr().String(), "conn", id)
	if tc, ok := nc.(*tls.Conn); ok {
		if err := s.handshake(shutdown, cfg, tc, c); err != nil {
			switch {
			case shutdown.Err() != nil:
			case errors.Is(err, errClosedBeforeHandshake):
				// A TCP probe (a kubelet's, a load balancer's) opens
				// and closes without a byte; it is no failure.
				c.Log.Debug("connection closed before a TLS handshake")
			default:
				s.stats.handshakeErrors.Add(1)
				c.Log.Info("TLS handshake failed, closing connection", "err", err, "handshake_timeout", cfg.handshake)
			}
			_ = nc.Close()
			return
		}
	}

	// ctx ends on drain or when the connection dies, so that a handler
	// parked in a long poll returns.
	ctx, cancel := context.WithCancel(shutdown)
	defer cancel()
	stopDeadlines := context.AfterFunc(shutdown, func() {
		_ = nc.SetReadDeadline(time.Now())
		_ = nc.SetWriteDeadline(time.Now().Add(cfg.drain))
	})
	defer stopDeadlines()

	out := make(chan *Response, cfg.queueDepth)
	writerDone := make(chan struct{})
	c.push, c.writerDone = make(chan *Response, cfg.queueDepth), writerDone
	// Runs after the Session's Close, by which its pushers have stopped:
	// what one pushed while the writer was stopping is released here.
	defer (&connWriter{}).drainPushed(c.push)
	w := &connWriter{srv: s, nc: nc, log: c.Log}
	go func() {
		defer close(writerDone)
		w.loop(out, c.push, cancel)
	}()

	sess, err := s.newSession(c)
	if err == nil {
		err = s.readLoop(ctx, cfg, budget, nc, sess, out, writerDone)
		defer sess.Close()
	}
	switch {
	case shutdown.Err() != nil:
		c.Log.Debug("connection closing: server draining")
	case errors.Is(err, ErrFrameTooLarge) || errors.Is(err, ErrMalformedFrame):
		s.stats.protocolErrors.Add(1)
		c.Log.Warn("protocol error, closing connection", "err", err)
	case errors.Is(err, errPanic):
		s.stats.panics.Add(1)
		c.Log.Error("request handling panicked, closing connection", "err", err)
	case errors.Is(err, errIdle):
		c.Log.Debug("closing idle connection", "idle_timeout", cfg.idle)
	case err != nil && !quietClose(err):
		c.Log.Info("connection closed", "err", err)
	default:
		c.Log.Debug("connection closed")
	}
	// Stop reading; the writer delivers what is queued, bounded by the
	// drain timeout even for a peer that stopped reading.
	_ = nc.SetWriteDeadline(time.Now().Add(cfg.drain))
	close(out)
	<-writerDone
	cancel()
	_ = nc.Close()
}

var (
	errPanic = errors.New("panic")
	errIdle  = errors.New("idle timeout")
)

// errClosedBeforeHandshake: the client closed the connection before it
// sent a TLS record.
var errClosedBeforeHandshake = errors.New("closed before a TLS handshake")

// handshake completes a TLS connection's handshake within the handshake
// timeout, so that a client that does not speak TLS, or stalls, costs one
// goroutine for that long and not the idle timeout, and sets the
// principal of a verified client certificate, as Kafka's SSL listener
// does with ssl.client.auth.
func (s *Server) handshake(ctx context.Context, cfg serverConfig, tc *tls.Conn, c *Conn) error {
	hctx, cancel := context.WithTimeout(ctx, cfg.handshake)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		if hctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("no TLS handshake within %s: %w", cfg.handshake, err)
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %w", errClosedBeforeHandshake, err)
		}
		return err
	}
	st := tc.ConnectionState()
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil // no certificate (client_auth none or requested): anonymous until SASL
	}
	name, err := s.Principals.CertName(st.VerifiedChains[0][0])
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	c.SetPrincipal(Principal{Mechanism: MechanismTLS, Name: name})
	c.Log.Debug("tls: client certificate principal", "principal", "User:"+name)
	return nil
}

func (s *Server) newSession(c *Conn) (sess Session, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: new session: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	return s.Protocol.NewSession(c), nil
}

func (s *Server) readLoop(ctx context.Context, cfg serverConfig, budget *bytebudget.Budget, nc net.Conn, sess Session, out chan<- *Response, writerDone <-chan struct{}) error {
	fr := &FrameReader{Reader: bufio.NewReaderSize(nc, 64<<10), ctx: ctx, budget: budget}
	defer fr.done()
	for {
		if ctx.Err() != nil {
			return ctx.Err() // draining: do not wait for another request
		}
		if cfg.idle > 0 {
			_ = nc.SetReadDeadline(time.Now().Add(cfg.idle))
		}
		// The drain sets a read deadline in the past; if it fired while
		// the line above replaced it, end here instead of waiting out the
		// idle timeout.
		if ctx.Err() != nil {
			return ctx.Err()
		}
		frame, err := s.readFrame(sess, fr, cfg.maxFrame)
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
				return errIdle
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err() // draining: do not start new work
		}
		s.stats.frames.Add(1)
		// While a request is in service the idle clock does not run: a
		// long poll is not idleness.
		_ = nc.SetReadDeadline(time.Time{})
		resp, herr := s.handle(ctx, sess, frame)
		fr.done()
		if resp != nil {
			select {
			case out <- resp:
			case <-writerDone:
				resp.release()
				return net.ErrClosed // the writer failed and closed the socket
			}
		}
		if herr != nil {
			return herr
		}
	}
}

func (s *Server) readFrame(sess Session, fr *FrameReader, maxBytes int) (frame []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading a frame: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	return sess.ReadFrame(fr, maxBytes)
}

func (s *Server) handle(ctx context.Context, sess Session, frame []byte) (resp *Response, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp = nil
			err = fmt.Errorf("%w: handling a frame: %v\n%s", errPanic, r, debug.Stack())
		}
	}()
	return sess.Handle(ctx, frame)
}

// quietClose reports errors that mean the peer went away, which is routine.
func quietClose(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, context.Canceled) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}
