package native

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Cluster is what the gateway needs from the metadata owner. tools/ wires
// it to the same metadata the Kafka gateway answers from (kmeta), so both
// protocols see one set of topics with the same ids. Errors wrap
// ErrUnknownTopic, a controller sentinel, or a *kerr.Error.
type Cluster interface {
	ClusterID() string
	Topic(ctx context.Context, name string) (Topic, error)
	TopicByID(ctx context.Context, id [16]byte) (Topic, error)
	Topics(ctx context.Context) ([]Topic, error)
	CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]*string) (Topic, error)
	DeleteTopic(ctx context.Context, name string) error
	// AlterConfigs sets the topic configs in set (a nil value returns the
	// config to its default) and leaves the others as they are.
	AlterConfigs(ctx context.Context, name string, set map[string]*string) error
}

// Topic is a topic's metadata.
type Topic struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Internal          bool
	Configs           map[string]string
	// Leaders holds each partition's leader store and epoch, by
	// partition; a short slice means unknown (-1, 0).
	Leaders []Leader
}

// Leader is a partition's leader store and its epoch.
type Leader struct{ Node, Epoch int32 }

func (t *Topic) leader(p int32) Leader {
	if p >= 0 && int(p) < len(t.Leaders) {
		return t.Leaders[p]
	}
	return Leader{Node: -1}
}

// Options configure a Gateway. Backend and Cluster are required.
type Options struct {
	Backend ring.Backend
	Cluster Cluster
	Logger  *slog.Logger
	NodeID  int32
	// MaxFrameBytes bounds a request frame; default wire.DefaultMaxFrameBytes.
	MaxFrameBytes int
	// MaxQueuedBytes is gateways.Server.MaxQueuedBytes.
	MaxQueuedBytes int64
	// DefaultPartitions and DefaultReplicationFactor fill a CreateTopic
	// that asks for -1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// MaxWait caps a fetch's long poll; default 30s.
	MaxWait time.Duration
	// Offsets stores groups' committed offsets; nil answers offset
	// requests with COORDINATOR_NOT_AVAILABLE.
	Offsets Offsets
	// ProducerIDs allocates idempotent producer ids (InitProducerID); nil
	// answers it with COORDINATOR_NOT_AVAILABLE.
	ProducerIDs ProducerIDs
	// StallTimeout closes a connection one of whose subscriptions has had
	// no credit for this long; default 2 minutes.
	StallTimeout time.Duration
	// Auth makes the listener a SASL one (sasl.go).
	Auth AuthOptions
}

// Gateway serves the native protocol.
type Gateway struct {
	opts   Options
	log    *slog.Logger
	srv    *gateways.Server
	bufs   sync.Pool // *[]byte response buffers
	groups groups

	auditLimit auth.AuditLimiter
	authFails  auth.FailureDelay
	// z is Options.Auth.Authorizer when it enforces ACLs, else nil.
	z *auth.Authorizer
}

// New checks opts and returns a Gateway.
func New(opts Options) (*Gateway, error) {
	if opts.Backend == nil || opts.Cluster == nil {
		return nil, errors.New("native gateway: Backend and Cluster are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = wire.DefaultMaxFrameBytes
	}
	if opts.DefaultPartitions <= 0 {
		opts.DefaultPartitions = 1
	}
	if opts.DefaultReplicationFactor <= 0 {
		opts.DefaultReplicationFactor = 1
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 30 * time.Second
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 2 * time.Minute
	}
	g := &Gateway{opts: opts, log: opts.Logger.With("component", "native-gateway")}
	if opts.Auth.Authorizer.Enabled() {
		g.z = opts.Auth.Authorizer
	}
	g.groups.init()
	g.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	g.srv = &gateways.Server{Name: "native", Protocol: g, Logger: opts.Logger,
		MaxFrameBytes: opts.MaxFrameBytes + wire.HeaderSize, MaxQueuedBytes: opts.MaxQueuedBytes,
		Principals: opts.Auth.Principals}
	return g, nil
}

// Serve serves ln until ctx ends (gateways.Server.Serve).
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error { return g.srv.Serve(ctx, ln) }

// Stats are the wire server's counters.
func (g *Gateway) Stats() gateways.Stats { return g.srv.Stats() }

// NewSession implements gateways.Protocol.
func (g *Gateway) NewSession(c *gateways.Conn) gateways.Session {
	s := &session{g: g, conn: c, topics: map[[16]byte]*Topic{}}
	s.prods.init()
	return s
}

// session is one connection's state, owned by its read goroutine.
type session struct {
	g      *Gateway
	conn   *gateways.Conn
	hello  bool
	sasl   connSASL
	authz  connAuthz
	op     wire.Opcode
	bad    error // a header that cannot be served: answered, then closed
	rbuf   []byte
	topics map[[16]byte]*Topic // ids this connection has looked up

	fetch     wire.Fetch
	ringParts []ring.FetchPartition
	produce   wire.ProduceMany
	// frame is the produce frame being handled, in a buffer of its own
	// (prods.frameBuf) that its goroutine gives back.
	frame []byte
	prods produces

	// connCtx is the connection's context (Handle's), which outlives the
	// request that starts a subscription.
	connCtx       context.Context
	subscriptions subscriptions
}

// empty is the frame ReadFrame returns for a header it refused, so that
// Handle can answer it before the connection closes.
var empty = []byte{}

func (s *session) ReadFrame(r *gateways.FrameReader, maxBytes int) ([]byte, error) {
	h, err := r.Peek(wire.HeaderSize)
	if err != nil {
		if len(h) > 0 && errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: connection closed inside a frame header", gateways.ErrMalformedFrame)
		}
		return nil, err
	}
	op, n, err := wire.ParseHeader(h, maxBytes-wire.HeaderSize)
	if err != nil {
		s.bad, s.op = err, op
		return empty, nil
	}
	_, _ = r.Discard(wire.HeaderSize)
	s.op = op
	if n < 4 {
		s.bad = fmt.Errorf("%w: payload of %d bytes has no correlation id", wire.ErrMalformed, n)
		if _, err := r.Discard(n); err != nil {
			return nil, err
		}
		return empty, nil
	}
	if op == wire.OpProduce || op == wire.OpProduceMany {
		// A produce is served after the next frame is read (pipelining),
		// so it needs a buffer of its own.
		b, err := r.Body(n, s.prods.frameBuf, s.prods.putFrame)
		s.frame = b
		return b, err
	}
	return r.Body(n, s.get, nil)
}

// get hands out the session's one request buffer for every frame but a
// produce: such a frame is served before the next is read, and no response
// aliases it.
func (s *session) get(n int) []byte {
	if cap(s.rbuf) < n {
		s.rbuf = make([]byte, n, max(n, 4096))
	}
	return s.rbuf[:n]
}

// Close stops the session's goroutines and waits for them: the plumbing
// requires pushers gone when it returns.
func (s *session) Close() {
	s.closeSubscriptions()
	s.prods.wg.Wait()
}

// Handle serves one frame: its payload starts with the correlation id.
func (s *session) Handle(ctx context.Context, frame []byte) (*gateways.Response, error) {
	if s.bad != nil {
		err := s.bad
		s.bad = nil
		code := codeFor(ErrBadRequest)
		if errors.Is(err, wire.ErrVersion) {
			code = codeFor(ErrUnsupportedVersion)
		}
		resp := s.errorFrame(wire.OpError, 0, code, err.Error())
		resp.CloseAfter()
		return resp, fmt.Errorf("%w: %v", gateways.ErrMalformedFrame, err)
	}
	s.connCtx = ctx
	r := wire.NewReader(frame)
	corr := r.U32("corr")
	if !s.op.Known() {
		err := fmt.Errorf("%w 0x%02X", ErrUnknownOpcode, byte(s.op))
		resp := s.errorFrame(wire.OpError, corr, codeFor(err), err.Error())
		resp.CloseAfter()
		return resp, fmt.Errorf("%w: %v", gateways.ErrMalformedFrame, err)
	}
	if !s.hello && s.op != wire.OpHandshake {
		resp := s.errorFrame(s.op, corr, codeFor(ErrHandshakeFirst), ErrHandshakeFirst.Error())
		resp.CloseAfter()
		return resp, fmt.Errorf("%w: %v before Handshake", gateways.ErrMalformedFrame, s.op)
	}
	if resp, err := s.checkSASL(corr); resp != nil {
		return resp, err
	}
	if s.g.z != nil && s.op != wire.OpHandshake && s.op != wire.OpSaslAuthenticate {
		if resp := s.authzFrame(corr); resp != nil { // authz.go
			return resp, nil
		}
	}
	var (
		resp *gateways.Response
		err  error
	)
	switch s.op {
	case wire.OpHandshake:
		resp, err = s.handshake(corr, &r)
	case wire.OpSaslAuthenticate:
		resp, err = s.saslAuthenticate(ctx, corr, &r)
	case wire.OpLookup:
		resp, err = s.lookup(ctx, corr, &r)
	case wire.OpProduce:
		resp, err = s.handleProduce(ctx, corr, &r, false)
	case wire.OpProduceMany:
		resp, err = s.handleProduce(ctx, corr, &r, true)
	case wire.OpFetch:
		resp, err = s.handleFetch(ctx, corr, &r)
	case wire.OpListOffsets:
		resp, err = s.listOffsets(ctx, corr, &r)
	case wire.OpCreateTopic:
		resp, err = s.createTopic(ctx, corr, &r)
	case wire.OpDeleteTopic:
		resp, err = s.deleteTopic(ctx, corr, &r)
	case wire.OpListTopics:
		resp, err = s.listTopics(ctx, corr, &r)
	case wire.OpDescribe:
		resp, err = s.describe(ctx, corr, &r)
	case wire.OpOffsetCommit:
		resp, err = s.offsetCommit(ctx, corr, &r)
	case wire.OpOffsetFetch:
		resp, err = s.offsetFetch(ctx, corr, &r)
	case wire.OpJoinGroup:
		resp, err = s.joinGroup(ctx, corr, &r)
	case wire.OpHeartbeat:
		resp, err = s.heartbeat(corr, &r, false)
	case wire.OpLeaveGroup:
		resp, err = s.heartbeat(corr, &r, true)
	case wire.OpSubscribe:
		resp, err = s.subscribe(ctx, corr, &r)
	case wire.OpCredit:
		resp, err = s.credit(&r, false)
	case wire.OpUnsubscribe:
		resp, err = s.credit(&r, true)
	case wire.OpAlterConfigs:
		resp, err = s.alterConfigs(ctx, corr, &r)
	case wire.OpInitProducerID:
		resp, err = s.initProducerID(ctx, corr, &r)
	case wire.OpDescribeGroup:
		resp, err = s.describeGroup(ctx, corr, &r)
	case wire.OpListGroups:
		resp, err = s.listGroups(ctx, corr, &r)
	case wire.OpGroupLag:
		resp, err = s.groupLag(ctx, corr, &r)
	}
	if err != nil && errors.Is(err, wire.ErrMalformed) {
		// The request's own bytes do not parse: answer what is wrong,
		// then close, since nothing after it can be trusted either.
		resp = s.errorFrame(s.op, corr, codeFor(ErrBadRequest), err.Error())
		resp.CloseAfter()
		return resp, fmt.Errorf("%w: %v", gateways.ErrMalformedFrame, err)
	}
	return resp, err
}

// buf takes a response buffer from the pool, header space reserved.
func (s *session) buf() *[]byte {
	b := s.g.bufs.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// respond frames body (built by fill after the head) as a response.
func (s *session) respond(op wire.Opcode, h wire.Head, fill func([]byte) []byte) *gateways.Response {
	bp := s.buf()
	b := wire.AppendHeader(*bp, op, 0)
	b = wire.AppendHead(b, h)
	if fill != nil {
		b = fill(b)
	}
	wire.PutLength(b)
	*bp = b
	resp := gateways.NewResponse(b)
	resp.OnRelease(func() { s.g.bufs.Put(bp) })
	return resp
}

func (s *session) errorFrame(op wire.Opcode, corr uint32, code int16, msg string) *gateways.Response {
	return s.respond(op, wire.Head{Corr: corr, Code: code, LeaderHint: -1, Message: msg}, nil)
}

// fail answers a request that failed as a whole.
func (s *session) fail(op wire.Opcode, corr uint32, err error, hint int32) *gateways.Response {
	code := codeFor(err)
	if code == -1 {
		s.conn.Log.Warn("request failed", "op", op.String(), "err", err)
	}
	return s.respond(op, wire.Head{Corr: corr, Code: code, LeaderHint: hint, Message: err.Error()}, nil)
}

// ok is a success head.
func ok(corr uint32) wire.Head { return wire.Head{Corr: corr, LeaderHint: -1} }

// topicByID resolves an id: from this connection's lookups, else from the
// metadata (a client may reuse ids across connections).
func (s *session) topicByID(ctx context.Context, id [16]byte) (*Topic, error) {
	if t, ok := s.topics[id]; ok {
		return t, nil
	}
	t, err := s.g.opts.Cluster.TopicByID(ctx, id)
	if err != nil {
		return nil, err
	}
	s.remember(t)
	return &t, nil
}

func (s *session) remember(t Topic) {
	if len(s.topics) >= maxTopicsPerConn {
		clear(s.topics)
	}
	s.topics[t.ID] = &t
}

// maxTopicsPerConn bounds the ids a connection caches.
const maxTopicsPerConn = 10000
