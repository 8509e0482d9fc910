package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// DefaultAddr is where a gateway listens unless configured otherwise.
const DefaultAddr = "127.0.0.1:9091"

// Options configure a Client.
type Options struct {
	// ClientID names the client in the gateway's logs.
	ClientID string
	// MaxFrameBytes bounds a response frame the client reads; default
	// wire.DefaultMaxFrameBytes plus room for the head.
	MaxFrameBytes int
	// TLS, when set, runs every connection over TLS (an SSL:// or
	// SASL_SSL:// listener).
	TLS *tls.Config
	// SASL authenticates every connection with a franz-go SASL mechanism
	// (sasl/scram, sasl/plain), as a Kafka client would; nil for none.
	SASL sasl.Mechanism
}

// Client is a connection to a native gateway: the admin calls, topic
// lookups, and the transport producers use. Consumers open their own
// connection (a long poll holds a connection's place in line). A Client is
// safe for concurrent use.
type Client struct {
	addr string
	opts Options
	c    *conn
	hs   wire.HandshakeResponse

	mu struct {
		sync.Mutex
		topics map[string]TopicInfo
	}
	// forgets counts Forget calls, so that copies of lookups kept
	// elsewhere (a Producer's) know to look again.
	forgets atomic.Uint64
}

// TopicInfo is a topic as the gateway describes it.
type TopicInfo struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
}

// Dial connects to the gateway at addr and performs the handshake.
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	if opts.MaxFrameBytes <= 0 {
		opts.MaxFrameBytes = wire.DefaultMaxFrameBytes + 1<<20
	}
	if opts.ClientID == "" {
		opts.ClientID = "aerostream-go"
	}
	c, hs, err := dialHandshake(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	cl := &Client{addr: addr, opts: opts, c: c, hs: hs}
	cl.mu.topics = map[string]TopicInfo{}
	return cl, nil
}

func dialHandshake(ctx context.Context, addr string, opts Options) (*conn, wire.HandshakeResponse, error) {
	var hs wire.HandshakeResponse
	c, err := dialConn(ctx, addr, opts.MaxFrameBytes, opts.TLS)
	if err != nil {
		return nil, hs, err
	}
	req := wire.Handshake{Version: uint16(wire.Version), Features: wire.FeatureIdempotence | wire.FeatureLongPoll | wire.FeatureZeroCopyFetch | wire.FeatureFetchCommit,
		MaxFrameBytes: uint32(opts.MaxFrameBytes), ClientID: opts.ClientID}
	if opts.SASL != nil {
		req.AuthMechanism = opts.SASL.Name()
	}
	r, err := c.roundTrip(ctx, wire.OpHandshake, req.Append)
	if err == nil {
		err = hs.Decode(&r)
	}
	if err == nil && opts.SASL != nil {
		err = authenticate(ctx, c, addr, opts.SASL)
	}
	if err != nil {
		_ = c.close()
		return nil, hs, fmt.Errorf("handshake with %s: %w", addr, err)
	}
	return c, hs, nil
}

// authenticate runs a SASL exchange after the handshake: the mechanism's
// messages go in SaslAuthenticate frames until its session is done.
func authenticate(ctx context.Context, c *conn, addr string, m sasl.Mechanism) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	sess, msg, err := m.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Name(), err)
	}
	for {
		req := wire.SaslAuthenticate{Auth: msg}
		r, err := c.roundTrip(ctx, wire.OpSaslAuthenticate, req.Append)
		if err != nil {
			return fmt.Errorf("%s authentication: %w", m.Name(), err)
		}
		var resp wire.SaslAuthenticateResponse
		if err := resp.Decode(&r); err != nil {
			return err
		}
		done, next, err := sess.Challenge(resp.Auth)
		if err != nil {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		if done {
			return nil
		}
		msg = next
	}
}

// ClusterID is the cluster's id, from the handshake.
func (cl *Client) ClusterID() string { return cl.hs.ClusterID }

// Close closes the connection; calls in flight fail with ErrClosed.
func (cl *Client) Close() error { return cl.c.close() }

// Topic looks a topic up by name, once per Client: later calls answer
// from the cache until Forget.
func (cl *Client) Topic(ctx context.Context, name string) (TopicInfo, error) {
	cl.mu.Lock()
	t, ok := cl.mu.topics[name]
	cl.mu.Unlock()
	if ok {
		return t, nil
	}
	req := wire.Lookup{Names: []string{name}}
	r, err := cl.c.roundTrip(ctx, wire.OpLookup, req.Append)
	if err != nil {
		return TopicInfo{}, err
	}
	var out wire.Topics
	if err := out.Decode(&r); err != nil {
		return TopicInfo{}, err
	}
	if len(out.Topics) != 1 {
		return TopicInfo{}, fmt.Errorf("%w: lookup answered %d topics", wire.ErrMalformed, len(out.Topics))
	}
	ti := out.Topics[0]
	if ti.Code != 0 {
		return TopicInfo{}, fmt.Errorf("topic %q: %w", name, &Error{Code: ti.Code, LeaderHint: -1})
	}
	t = TopicInfo{Name: ti.Name, ID: ti.ID, Partitions: ti.Partitions, ReplicationFactor: ti.ReplicationFactor}
	cl.mu.Lock()
	cl.mu.topics[name] = t
	cl.mu.Unlock()
	return t, nil
}

// Forget drops a topic from the lookup cache (after it was deleted or
// grew).
func (cl *Client) Forget(name string) {
	cl.forgets.Add(1)
	cl.mu.Lock()
	delete(cl.mu.topics, name)
	cl.mu.Unlock()
}

// CreateTopic creates a topic; partitions or rf -1 take the gateway's
// defaults.
func (cl *Client) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (TopicInfo, error) {
	req := wire.CreateTopic{Name: name, Partitions: partitions, ReplicationFactor: rf}
	for k, v := range configs {
		req.Configs = append(req.Configs, wire.Config{Key: k, Value: v})
	}
	r, err := cl.c.roundTrip(ctx, wire.OpCreateTopic, req.Append)
	if err != nil {
		return TopicInfo{}, err
	}
	var out wire.Topics
	if err := out.Decode(&r); err != nil {
		return TopicInfo{}, err
	}
	if len(out.Topics) != 1 {
		return TopicInfo{}, fmt.Errorf("%w: create answered %d topics", wire.ErrMalformed, len(out.Topics))
	}
	ti := out.Topics[0]
	t := TopicInfo{Name: ti.Name, ID: ti.ID, Partitions: ti.Partitions, ReplicationFactor: ti.ReplicationFactor}
	cl.mu.Lock()
	cl.mu.topics[name] = t
	cl.mu.Unlock()
	return t, nil
}

// DeleteTopic deletes a topic and its data.
func (cl *Client) DeleteTopic(ctx context.Context, name string) error {
	req := wire.TopicName{Name: name}
	cl.Forget(name)
	_, err := cl.c.roundTrip(ctx, wire.OpDeleteTopic, req.Append)
	return err
}

// ListTopics lists every topic, by name.
func (cl *Client) ListTopics(ctx context.Context) ([]TopicInfo, error) {
	r, err := cl.c.roundTrip(ctx, wire.OpListTopics, func(b []byte) []byte { return b })
	if err != nil {
		return nil, err
	}
	var out wire.Topics
	if err := out.Decode(&r); err != nil {
		return nil, err
	}
	ts := make([]TopicInfo, 0, len(out.Topics))
	for _, ti := range out.Topics {
		ts = append(ts, TopicInfo{Name: ti.Name, ID: ti.ID, Partitions: ti.Partitions, ReplicationFactor: ti.ReplicationFactor})
	}
	return ts, nil
}

// PartitionState is a partition's log as Describe reports it.
type PartitionState struct {
	Partition      int32
	Err            error // nil, or the *Error the store answered
	Leader         int32
	LeaderEpoch    int32
	LogStartOffset int64
	HighWatermark  int64
}

// TopicDescription is a topic, its configs and its partitions' logs.
type TopicDescription struct {
	TopicInfo
	Configs    map[string]string
	Partitions []PartitionState
}

// Describe describes a topic.
func (cl *Client) Describe(ctx context.Context, name string) (TopicDescription, error) {
	req := wire.TopicName{Name: name}
	r, err := cl.c.roundTrip(ctx, wire.OpDescribe, req.Append)
	if err != nil {
		return TopicDescription{}, err
	}
	var out wire.Description
	if err := out.Decode(&r); err != nil {
		return TopicDescription{}, err
	}
	d := TopicDescription{TopicInfo: TopicInfo{Name: out.Topic.Name, ID: out.Topic.ID, Partitions: out.Topic.Partitions,
		ReplicationFactor: out.Topic.ReplicationFactor}, Configs: map[string]string{}}
	for _, c := range out.Configs {
		d.Configs[c.Key] = c.Value
	}
	for _, p := range out.Partitions {
		ps := PartitionState{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, LogStartOffset: p.LogStartOffset, HighWatermark: p.HighWatermark}
		if p.Code != 0 {
			ps.Err = &Error{Code: p.Code, LeaderHint: -1}
		}
		d.Partitions = append(d.Partitions, ps)
	}
	return d, nil
}

// Special timestamps for ListOffset.
const (
	Latest   int64 = -1
	Earliest int64 = -2
)

// ListOffset returns the first offset of a partition whose record
// timestamp is at or after ts (Unix milliseconds), or Latest / Earliest;
// -1 when no record is that late.
func (cl *Client) ListOffset(ctx context.Context, topic string, partition int32, ts int64) (int64, error) {
	t, err := cl.Topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	req := wire.ListOffsets{TopicID: t.ID, Partition: partition, Timestamp: ts}
	r, err := cl.c.roundTrip(ctx, wire.OpListOffsets, req.Append)
	if err != nil {
		return 0, err
	}
	var out wire.OffsetAt
	if err := out.Decode(&r); err != nil {
		return 0, err
	}
	return out.Offset, nil
}

// OffsetForTime is ListOffset for a time.
func (cl *Client) OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, error) {
	return cl.ListOffset(ctx, topic, partition, t.UnixMilli())
}

// retriable says whether err may pass on retry.
func retriable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retriable()
	}
	return false
}

// AlterConfigs sets topic configs (Kafka's names) and returns the configs in
// reset to their defaults; the others keep their values.
func (cl *Client) AlterConfigs(ctx context.Context, topic string, set map[string]string, reset ...string) error {
	req := wire.AlterConfigs{Name: topic, Deleted: reset}
	for k, v := range set {
		req.Set = append(req.Set, wire.Config{Key: k, Value: v})
	}
	_, err := cl.c.roundTrip(ctx, wire.OpAlterConfigs, req.Append)
	return err
}
