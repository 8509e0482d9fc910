package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Options configure a Gateway. Backend, Cluster and AdvertisedAddr are
// required; zero values elsewhere take the defaults noted.
type Options struct {
	Backend ring.Backend
	Cluster Cluster
	Logger  *slog.Logger
	// ProducerIDs allocates idempotent producer ids; nil keeps a counter
	// in the internal topic __producer_ids (producer_ids.go).
	ProducerIDs ProducerIDAllocator

	// NodeID is this gateway's broker id in Metadata. Default 0.
	NodeID int32
	// AdvertisedAddr is the host:port clients are told to connect to.
	AdvertisedAddr string
	// Rack is the broker rack shown in Metadata; nil for none.
	Rack *string

	// MaxRequestBytes is socket.request.max.bytes. Default 100 MiB.
	MaxRequestBytes int
	// MaxQueuedRequestBytes is queued.max.request.bytes: the request bytes
	// read and in service over all connections at once. Default
	// gateways.DefaultMaxQueuedBytes; negative means no bound.
	MaxQueuedRequestBytes int64
	// AutoCreateTopics is auto.create.topics.enable: Metadata for an
	// unknown topic creates it when the client allows it.
	AutoCreateTopics bool
	// DefaultPartitions is num.partitions, for auto-created topics and
	// CreateTopics with -1 partitions. Default 1.
	DefaultPartitions int32
	// OffsetsPartitions is offsets.topic.num.partitions, the partition
	// count of __consumer_offsets when the gateway creates it. Default 8.
	OffsetsPartitions int32
	// GroupMinSessionTimeout and GroupMaxSessionTimeout bound the session
	// timeouts members may ask for (Kafka's group.min/max.session.timeout.ms).
	// Defaults 6s and 30m.
	GroupMinSessionTimeout time.Duration
	GroupMaxSessionTimeout time.Duration
	// GroupInitialRebalanceDelay is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty group waits for more members.
	// Default 0 (Kafka's is 3s; a single-node event log rarely needs it).
	GroupInitialRebalanceDelay time.Duration
	// GroupConsumerMigrationPolicy is group.consumer.migration.policy:
	// "upgrade" or "bidirectional" let a consumer-protocol member join a
	// classic group that has members (groups_classic_members.go);
	// "downgrade" or "bidirectional" turn a consumer group whose last
	// consumer-protocol member left back into a classic group with its
	// classic members. Default "bidirectional".
	GroupConsumerMigrationPolicy string
	// TransactionalIDExpiration is transactional.id.expiration.ms: a
	// transactional id at rest this long is forgotten by its coordinator.
	// Default 7 days, Kafka's.
	TransactionalIDExpiration time.Duration
	// FetchSessionCacheSlots bounds the incremental fetch sessions kept
	// (max.incremental.fetch.session.cache.slots). Default 1000.
	FetchSessionCacheSlots int
	// LogDir is the directory DescribeLogDirs names. Default "/data".
	LogDir string
	// SchemaIDs answers broker-side schema validation
	// (schema_validation.go); nil refuses topics that ask for it.
	SchemaIDs SchemaIDs
	// Auth is SASL and the authorizer (auth.go); zero is PLAINTEXT with
	// every request allowed.
	Auth AuthOptions
}

func (o *Options) setDefaults() error {
	if o.Backend == nil || o.Cluster == nil {
		return errors.New("kafka gateway: Backend and Cluster are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = gateways.DefaultMaxFrameBytes
	}
	if o.DefaultPartitions <= 0 {
		o.DefaultPartitions = 1
	}
	if o.OffsetsPartitions <= 0 {
		o.OffsetsPartitions = 8
	}
	if o.GroupMinSessionTimeout <= 0 {
		o.GroupMinSessionTimeout = 6 * time.Second
	}
	if o.GroupMaxSessionTimeout <= 0 {
		o.GroupMaxSessionTimeout = 30 * time.Minute
	}
	// Kafka reads the policy without regard to case.
	o.GroupConsumerMigrationPolicy = strings.ToLower(o.GroupConsumerMigrationPolicy)
	switch o.GroupConsumerMigrationPolicy {
	case "":
		o.GroupConsumerMigrationPolicy = "bidirectional"
	case "bidirectional", "upgrade", "downgrade", "disabled":
	default:
		return fmt.Errorf("kafka gateway: group.consumer.migration.policy %q: want bidirectional, upgrade, downgrade or disabled", o.GroupConsumerMigrationPolicy)
	}
	if o.TransactionalIDExpiration <= 0 {
		o.TransactionalIDExpiration = defaultTxnIDExpiration
	}
	if o.FetchSessionCacheSlots <= 0 {
		o.FetchSessionCacheSlots = 1000
	}
	if o.LogDir == "" {
		o.LogDir = "/data"
	}
	host, port, err := net.SplitHostPort(o.AdvertisedAddr)
	if err != nil {
		return fmt.Errorf("kafka gateway: advertised address %q: %w", o.AdvertisedAddr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return fmt.Errorf("kafka gateway: advertised address %q: bad port", o.AdvertisedAddr)
	}
	if host == "" {
		return fmt.Errorf("kafka gateway: advertised address %q has no host", o.AdvertisedAddr)
	}
	return nil
}

// Gateway is a Kafka wire-protocol server in front of a ring Backend.
type Gateway struct {
	opts    Options
	log     *slog.Logger
	backend ring.Backend
	cluster Cluster
	host    string
	port    int32

	srv      *gateways.Server
	sessions *fetchSessions
	groups   *coordinator
	txns     *txnCoordinator
	seqs     seqGuard // produce_seq.go
	groupCfg groupConfigs
	shares   *shares
	pids     *producerIDs
	metrics  *requestMetrics

	auditLimit auth.AuditLimiter
	authFails  auth.FailureDelay
}

// New builds a Gateway. Serve runs it.
func New(opts Options) (*Gateway, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(opts.AdvertisedAddr)
	p, _ := strconv.Atoi(port)
	g := &Gateway{
		opts:    opts,
		log:     opts.Logger.With("component", "kafka-gateway"),
		backend: opts.Backend,
		cluster: opts.Cluster,
		host:    host,
		port:    int32(p),
	}
	g.sessions = newFetchSessions(opts.FetchSessionCacheSlots)
	g.groups = newCoordinator(g)
	g.txns = newTxnCoordinator(g)
	g.shares = newShares(g)
	g.metrics = newRequestMetrics()
	g.pids = &producerIDs{alloc: opts.ProducerIDs}
	if g.pids.alloc == nil {
		g.pids.alloc = &logProducerIDs{g: g}
	}
	g.srv = &gateways.Server{
		Name:           "kafka",
		Protocol:       g,
		Logger:         opts.Logger,
		MaxFrameBytes:  opts.MaxRequestBytes,
		MaxQueuedBytes: opts.MaxQueuedRequestBytes,
		Principals:     opts.Auth.Principals,
	}
	return g, nil
}

// Stats returns the connection-level counters.
func (g *Gateway) Stats() gateways.Stats { return g.srv.Stats() }

// Serve serves Kafka clients on ln until ctx ends, then drains the
// connections, stops the group coordinator and returns. The coordinator
// loads the committed offsets in the background; group requests answer
// COORDINATOR_LOAD_IN_PROGRESS until it is done.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.groups.run(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.txns.run(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.shares.run(ctx)
	}()
	err := g.srv.Serve(ctx, ln)
	wg.Wait()
	return err
}

// NewSession implements gateways.Protocol.
func (g *Gateway) NewSession(c *gateways.Conn) gateways.Session {
	return &session{g: g, conn: c, connPrincipal: "User:" + c.Principal().Name}
}

// session is one client connection's protocol state. It is used by the
// connection's read goroutine only.
type session struct {
	g    *Gateway
	conn *gateways.Conn
	// shareSessions are the share sessions opened on this connection:
	// closing it releases what their members hold, as Kafka does.
	shareSessions map[[2]string]bool
	auth          connAuth // SASL state (auth.go)
	// connPrincipal is who the connection acts for until SASL
	// authenticates it: its TLS client certificate's principal, else
	// User:ANONYMOUS.
	connPrincipal string
}

// ReadFrame reads one size-prefixed request.
func (s *session) ReadFrame(r *gateways.FrameReader, maxBytes int) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	switch {
	case n < 0:
		return nil, fmt.Errorf("%w: negative request size %d", gateways.ErrMalformedFrame, n)
	case int64(n) > int64(maxBytes):
		return nil, fmt.Errorf("%w: request of %d bytes, socket.request.max.bytes is %d", gateways.ErrFrameTooLarge, n, maxBytes)
	case n < 8:
		return nil, fmt.Errorf("%w: request of %d bytes cannot hold a header", gateways.ErrMalformedFrame, n)
	}
	return r.Body(int(n), getFrame, putFrame)
}

// Produce frames are the gateway's one large allocation per request (the
// records are decoded in place, not copied): at max throughput, zeroing
// and collecting them was ~8% of the broker's CPU. Frames of framePoolMin
// bytes or more come from pools by power-of-two size and go back once the
// handler says nothing refers to them any more (reqCtx.frameDone); any
// other frame is left to the collector, since a handler may keep parts of
// it (group metadata, for one).
const (
	framePoolMin   = 1 << 15 // 32 KiB
	framePoolShift = 15
	// 8 MiB. Larger frames come from producers with much in flight: at
	// full load in compare.sh's workload they are 9-10 MiB. Pooling up to
	// 16 MiB saved ~2% of the broker's CPU there (memclr and page faults)
	// and raised its RSS peak from ~430 to ~710 MiB, with no throughput to
	// show for it, so they are left to the collector.
	framePoolMax = 1 << 23
)

var framePools [24 - framePoolShift]sync.Pool // of *[]byte, cap 1<<(i+framePoolShift)

func framePoolIndex(n int) int {
	return bits.Len(uint(n-1)) - framePoolShift
}

func getFrame(n int) []byte {
	if n < framePoolMin || n > framePoolMax {
		return make([]byte, n)
	}
	i := framePoolIndex(n)
	if bp, ok := framePools[i].Get().(*[]byte); ok {
		return (*bp)[:n]
	}
	return make([]byte, n, 1<<(i+framePoolShift))
}

// putFrame recycles a frame from getFrame; nothing may refer to it after.
func putFrame(b []byte) {
	c := cap(b)
	if c < framePoolMin || c > framePoolMax || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	framePools[framePoolIndex(c)].Put(&b)
}

// Close implements gateways.Session.
func (s *session) Close() {
	for k := range s.shareSessions {
		s.g.shares.connClosed(s, k[0], k[1])
	}
}

// reqCtx is one request in service.
type reqCtx struct {
	s        *session
	key      int16
	version  int16
	corr     int32
	clientID string
	req      kmsg.Request

	// raw, when set by a handler, is the response body built in pieces
	// (Fetch): the gateway only prefixes the header.
	raw *gateways.Response
	// noResponse: the request gets no response (acks=0 produce).
	noResponse bool
	// closeAfter: close the connection after this request (a failed
	// acks=0 produce).
	closeAfter bool
	// frameDone: the handler is done with the request frame (nothing it
	// started, nor the response, refers to it), so it may be recycled.
	frameDone bool
}

// handlerFunc serves one request. A returned error closes the connection;
// Kafka-level errors go in the response.
type handlerFunc func(g *Gateway, ctx context.Context, rc *reqCtx) (kmsg.Response, error)

// apiKey is a key the gateway serves, with the versions it serves.
type apiKey struct {
	key, min, max int16
	fn            handlerFunc
}

var apiKeys = map[int16]apiKey{}

// regKey registers a served key; each NN_name.go file calls it from init.
func regKey(key, min, max int16, fn handlerFunc) {
	if _, dup := apiKeys[key]; dup {
		panic(fmt.Sprintf("kafka: key %d registered twice", key))
	}
	if kr := kmsg.RequestForKey(key); kr == nil || kr.MaxVersion() < max {
		panic(fmt.Sprintf("kafka: key %d v%d is beyond what kmsg encodes", key, max))
	}
	apiKeys[key] = apiKey{key: key, min: min, max: max, fn: fn}
}

// header is a parsed request header.
type header struct {
	key, version int16
	corr         int32
	clientID     string
}

// errUnsupportedVersion marks a request for a version of a served key the
// gateway does not serve. ApiVersions answers it; any other key closes the
// connection, as Kafka does.
var errUnsupportedVersion = errors.New("unsupported request version")

// parseRequest decodes a request frame. It never panics: every decoder is
// fuzzed (FuzzRequestDecode).
func parseRequest(frame []byte) (header, kmsg.Request, error) {
	r := kbin.Reader{Src: frame}
	h := header{key: r.Int16(), version: r.Int16(), corr: r.Int32()}
	if cid := r.NullableString(); cid != nil {
		h.clientID = *cid
	}
	if err := r.Complete(); err != nil {
		return h, nil, fmt.Errorf("%w: request header: %v", gateways.ErrMalformedFrame, err)
	}
	ak, ok := apiKeys[h.key]
	if !ok {
		return h, nil, fmt.Errorf("%w: api key %d (%s) is not served", gateways.ErrMalformedFrame, h.key, kmsg.NameForKey(h.key))
	}
	req := kmsg.RequestForKey(h.key)
	if h.version < ak.min || h.version > ak.max {
		return h, req, fmt.Errorf("%w: %w: %s v%d (served: v%d-v%d)", gateways.ErrMalformedFrame, errUnsupportedVersion, kmsg.NameForKey(h.key), h.version, ak.min, ak.max)
	}
	body, err := decodeBody(req, h.version, r.Src)
	if err != nil {
		return h, nil, err
	}
	return h, body, nil
}

// decodeBody decodes a request body (after the v1 part of the header) at
// version: the flexible header's tagged fields, then the request.
func decodeBody(req kmsg.Request, version int16, src []byte) (kmsg.Request, error) {
	req.SetVersion(version)
	if req.IsFlexible() {
		r := kbin.Reader{Src: src}
		kmsg.SkipTags(&r)
		if err := r.Complete(); err != nil {
			return nil, fmt.Errorf("%w: request header tags: %v", gateways.ErrMalformedFrame, err)
		}
		src = r.Src
	}
	if err := req.ReadFrom(src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %v", gateways.ErrMalformedFrame, kmsg.NameForKey(req.Key()), version, err)
	}
	return req, nil
}

// Handle implements gateways.Session.
func (s *session) Handle(ctx context.Context, frame []byte) (*gateways.Response, error) {
	h, req, err := parseRequest(frame)
	if err != nil {
		if errors.Is(err, errUnsupportedVersion) && h.key == 18 {
			return s.encode(h, apiVersionsUnsupported(h.version)), nil
		}
		return nil, err
	}
	if err := s.checkAuthenticated(h.key); err != nil {
		return nil, err
	}
	start := time.Now()
	defer s.g.metrics.observe(h.key, start)
	rc := &reqCtx{s: s, key: h.key, version: h.version, corr: h.corr, clientID: h.clientID, req: req}
	resp, err := s.g.serve(ctx, rc)
	if err != nil {
		return nil, err
	}
	var out *gateways.Response
	switch {
	case rc.noResponse:
	case rc.raw != nil:
		out = s.frameRaw(h, rc.raw)
	case resp != nil:
		resp.SetVersion(h.version)
		out = s.encode(h, resp) // copies what it takes from the request
	default:
		return nil, fmt.Errorf("%s handler returned no response", kmsg.NameForKey(h.key))
	}
	if rc.frameDone {
		rc.req, req = nil, nil
		putFrame(frame)
	}
	if rc.closeAfter {
		if out == nil {
			return nil, errClosedAfterAcks0
		}
		out.CloseAfter()
	}
	return out, nil
}

var errClosedAfterAcks0 = errors.New("closing after a failed acks=0 produce")

// responseHeader appends the size placeholder and the response header.
// ApiVersions always answers with header v0, so that a client that sent a
// version we do not know can still read it.
func responseHeader(dst []byte, h header, flexible bool) []byte {
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt32(dst, h.corr)
	if flexible && h.key != 18 {
		dst = append(dst, 0) // no tagged fields
	}
	return dst
}

func (s *session) encode(h header, resp kmsg.Response) *gateways.Response {
	buf := responseHeader(make([]byte, 0, 256), h, resp.IsFlexible())
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return gateways.NewResponse(buf)
}

// frameRaw puts the size prefix and header in front of a response body
// built in pieces.
func (s *session) frameRaw(h header, body *gateways.Response) *gateways.Response {
	flexible := kmsg.RequestForKey(h.key)
	flexible.SetVersion(h.version)
	hdr := responseHeader(make([]byte, 0, 16), h, flexible.IsFlexible())
	binary.BigEndian.PutUint32(hdr, uint32(len(hdr)-4+body.Len()))
	out := gateways.NewResponse(hdr)
	out.Append(body)
	return out
}
