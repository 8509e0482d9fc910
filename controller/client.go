package controller

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ClientOptions configure a Client.
type ClientOptions struct {
	// Timeout bounds a whole call, retries included, when its ctx has no
	// deadline; default 30s.
	Timeout time.Duration
	Logger  *slog.Logger
	// TLS, when set, makes the client speak https to controllers whose
	// listener serves mutual TLS: give it a client certificate of the
	// cluster CA and that CA. An empty ServerName is the dialled host.
	TLS *tls.Config
	// ClusterSecret, when set, signs every request with the cluster
	// credential (clusterauth.go), which controllers with
	// Options.ClusterSecret require, and refuses every answer that does
	// not prove the controller holds it too.
	ClusterSecret []byte
}

// Client speaks the client API to a controller cluster. It starts with the
// first address, follows the leader each NOT_LEADER answer names, and moves
// on to the next address when one does not answer, so it keeps working
// through a leader change. It is safe for concurrent use.
//
// Retries: a call is retried when it certainly had no effect (the node was
// not the leader, or the connection could not be made). A write whose
// outcome is unknown (a timeout, a connection lost after sending) returns
// an error wrapping ErrTimeout rather than risk applying it twice; reads,
// heartbeats and CreateTopics, which carries a request id that makes it
// idempotent, are retried on any failure, on the other controllers too.
type Client struct {
	addrs []string
	// hc pools connections for reads and heartbeats. Writes go through
	// hcw, a fresh connection each: a pooled connection the server has
	// just closed fails a request after it was written, which for a write
	// would leave its outcome unknown; a fresh one fails at dial, which is
	// safe to retry.
	hc, hcw *http.Client
	opts    ClientOptions
	scheme  string // http:// or https://

	mu struct {
		sync.Mutex
		target string
		next   int
		// proven holds the controllers that have proven the cluster
		// secret in an answer to this client.
		proven map[string]bool
	}
}

var _ API = (*Client)(nil)

// NewClient returns a client of the controllers at addrs (host:port).
func NewClient(addrs []string, opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	dial := (&net.Dialer{Timeout: 3 * time.Second}).DialContext
	c := &Client{
		addrs:  append([]string(nil), addrs...),
		opts:   opts,
		scheme: "http://",
		hc: &http.Client{Transport: &http.Transport{
			DialContext:         dial,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     time.Minute,
		}},
		hcw: &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}},
	}
	if opts.TLS != nil {
		c.scheme = "https://"
		dialTLS := tlsDialer(dial, opts.TLS)
		for _, hc := range []*http.Client{c.hc, c.hcw} {
			hc.Transport.(*http.Transport).DialTLSContext = dialTLS
		}
	}
	return c
}

// tlsDialer dials and completes the TLS handshake before a request is
// written, reporting a failed handshake as a failed dial: nothing was
// sent, so even a write may be retried on another controller.
func tlsDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := cfg
		if tc.ServerName == "" {
			tc = cfg.Clone()
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn := tls.Client(nc, tc)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, &net.OpError{Op: "dial", Net: network, Addr: nc.RemoteAddr(), Err: fmt.Errorf("TLS handshake: %w", err)}
		}
		return conn, nil
	}
}

// certificateRefused reports whether err is a TLS peer refusing this
// client's certificate, or this client refusing the server's.
func certificateRefused(err error) bool {
	// Over TCP, crypto/tls reports the peer's alert as a net.OpError.
	var remote *net.OpError
	var alert tls.AlertError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &remote) && remote.Op == "remote error" || errors.As(err, &alert) || errors.As(err, &verify)
}

// Close releases idle connections.
func (c *Client) Close() {
	c.hc.CloseIdleConnections()
	c.hcw.CloseIdleConnections()
}

// Target is the controller the client currently sends to.
func (c *Client) Target() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.targetLocked()
}

func (c *Client) targetLocked() string {
	if c.mu.target == "" && len(c.addrs) > 0 {
		c.mu.target = c.addrs[c.mu.next%len(c.addrs)]
		c.mu.next++
	}
	return c.mu.target
}

func (c *Client) setTarget(addr string) {
	c.mu.Lock()
	c.mu.target = addr
	c.mu.Unlock()
}

func (c *Client) isProven(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.proven[addr]
}

func (c *Client) setProven(addr string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.proven == nil {
		c.mu.proven = map[string]bool{}
	}
	if ok {
		c.mu.proven[addr] = true
	} else {
		delete(c.mu.proven, addr)
	}
}

// rotate moves off a target that did not answer, unless another call
// already has.
func (c *Client) rotate(from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.target == from {
		c.mu.target = ""
	}
}

// callKind is the retry policy of a call.
type callKind int

const (
	read       callKind = iota // retried on any failure
	write                      // retried only when it certainly had no effect
	idempotent                 // a write that is safe to repeat: retried like a read
)

func (c *Client) call(ctx context.Context, path string, kind callKind, req, resp any) error {
	if len(c.addrs) == 0 {
		return fmt.Errorf("%w: no controller addresses", ErrInvalidRequest)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	backoff := 20 * time.Millisecond
	var last error
	for hops := 0; ; hops++ {
		target := c.Target()
		var err error
		if len(c.opts.ClusterSecret) > 0 && path != pathCluster && !c.isProven(target) {
			// An answer's proof comes after the request has taken effect,
			// so a controller is asked to prove the secret with a read
			// before it is sent anything else, a write most of all.
			err = c.roundTrip(ctx, target, pathCluster, false, []byte("{}"), nil)
		}
		if err == nil {
			err = c.roundTrip(ctx, target, path, kind != read, body, resp)
		}
		if err == nil {
			return nil
		}
		last = err
		var nl *NotLeaderError
		var dialErr *net.OpError
		retry := false
		switch {
		case errors.As(err, &nl):
			retry = true
			if nl.LeaderAddr != "" && nl.LeaderAddr != target && hops < 2*len(c.addrs)+2 {
				c.setTarget(nl.LeaderAddr)
				continue // straight to the named leader
			}
			c.rotate(target)
		case errors.As(err, &dialErr) && dialErr.Op == "dial":
			retry = true
			c.rotate(target)
		case errors.Is(err, errTransport):
			c.rotate(target)
			retry = kind != write
		case errors.Is(err, ErrClosed):
			c.rotate(target)
			retry = kind != write
		case errors.Is(err, ErrTimeout):
			retry = kind != write
		}
		if !retry {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: no controller answered in time (last: %v)", ErrTimeout, last)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// errTransport marks a failure after the request may have been sent.
var errTransport = errors.New("controller connection failed")

func (c *Client) roundTrip(ctx context.Context, target, path string, isWrite bool, body []byte, resp any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.scheme+target+path+"?leader=1", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	var nonce string
	if len(c.opts.ClusterSecret) > 0 {
		nonce = signRequest(c.opts.ClusterSecret, hreq, body, time.Now())
	}
	hc := c.hc
	if isWrite {
		hc = c.hcw
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		if certificateRefused(err) {
			// A certificate one side does not trust stays untrusted:
			// retrying, on this controller or another, cannot help.
			return fmt.Errorf("controller %s: TLS: %w", target, err)
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return op
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s: %v", ErrTimeout, target, ctx.Err())
		}
		return fmt.Errorf("%w: %s: %v", errTransport, target, err)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%w: %s: reading the answer: %v", errTransport, target, err)
	}
	if nonce != "" {
		if err := checkAnswer(c.opts.ClusterSecret, nonce, hresp.Header, hresp.StatusCode, data); err != nil {
			return c.unproven(target, hresp.StatusCode, data, err)
		}
		c.setProven(target, true)
	}
	if hresp.StatusCode == http.StatusOK {
		if resp == nil {
			return nil
		}
		if err := json.Unmarshal(data, resp); err != nil {
			return fmt.Errorf("%w: %s: undecodable answer: %v", errTransport, target, err)
		}
		return nil
	}
	var eb notLeaderBody
	if err := json.Unmarshal(data, &eb); err != nil || eb.Error == nil {
		return fmt.Errorf("%w: %s answered HTTP %d: %s", errTransport, target, hresp.StatusCode, strings.TrimSpace(string(data)))
	}
	if eb.Error.Code == wireCode(ErrNotLeader) {
		return &NotLeaderError{LeaderID: eb.LeaderID, LeaderAddr: eb.LeaderAddr}
	}
	if eb.Error.Code == wireCode(ErrUnauthenticated) {
		return fmt.Errorf("controller %s: %w", target, eb.Error)
	}
	return eb.Error
}

// unproven is the error of an answer from target without a valid proof
// of the cluster secret (err says why). A controller refusing this
// client's credential cannot prove it, so its own reason is kept; any
// other answer is not acted on. Neither is retried, and the next call
// moves on to another controller.
func (c *Client) unproven(target string, status int, data []byte, err error) error {
	c.setProven(target, false)
	c.rotate(target)
	var eb notLeaderBody
	if status == http.StatusUnauthorized && json.Unmarshal(data, &eb) == nil && eb.Error != nil && eb.Error.Code == wireCode(ErrUnauthenticated) {
		return fmt.Errorf("controller %s: %w", target, eb.Error)
	}
	return fmt.Errorf("controller %s: %w", target, err)
}

// CreateTopics creates topics. Without a RequestID it sets one, so that it
// can retry a create whose answer was lost and still report the topics it
// created as created.
func (c *Client) CreateTopics(ctx context.Context, req CreateTopicsRequest) (resp CreateTopicsResponse, err error) {
	if req.RequestID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		req.RequestID = hex.EncodeToString(b[:])
	}
	return resp, c.call(ctx, pathCreateTopics, idempotent, req, &resp)
}

// DeleteTopics deletes topics.
func (c *Client) DeleteTopics(ctx context.Context, req DeleteTopicsRequest) (resp TopicsResponse, err error) {
	return resp, c.call(ctx, pathDeleteTopics, write, req, &resp)
}

// CreatePartitions grows topics.
func (c *Client) CreatePartitions(ctx context.Context, req CreatePartitionsRequest) (resp TopicsResponse, err error) {
	return resp, c.call(ctx, pathCreatePartitions, write, req, &resp)
}

// AlterConfigs changes configs (replace or incremental per resource).
func (c *Client) AlterConfigs(ctx context.Context, req AlterConfigsRequest) (resp AlterConfigsResponse, err error) {
	return resp, c.call(ctx, pathAlterConfigs, write, req, &resp)
}

// IncrementalAlterConfigs applies ops to one resource (Kafka's
// IncrementalAlterConfigs for a single resource).
func (c *Client) IncrementalAlterConfigs(ctx context.Context, typ, name string, ops []ConfigOp, validateOnly bool) error {
	resp, err := c.AlterConfigs(ctx, AlterConfigsRequest{
		Resources:    []AlterConfigsResource{{Type: typ, Name: name, Incremental: true, Ops: ops}},
		ValidateOnly: validateOnly,
	})
	if err != nil {
		return err
	}
	return resp.Resources[0].Err()
}

// DescribeConfigs describes resources.
func (c *Client) DescribeConfigs(ctx context.Context, req DescribeConfigsRequest) (resp DescribeConfigsResponse, err error) {
	return resp, c.call(ctx, pathDescribeConfigs, read, req, &resp)
}

// Metadata describes topics and nodes.
func (c *Client) Metadata(ctx context.Context, req MetadataRequest) (resp MetadataResponse, err error) {
	return resp, c.call(ctx, pathMetadata, read, req, &resp)
}

// RegisterNode registers a store or gateway. Registering again is
// harmless, so it is retried like a read.
func (c *Client) RegisterNode(ctx context.Context, req RegisterNodeRequest) (resp HeartbeatResponse, err error) {
	return resp, c.call(ctx, pathRegisterNode, read, req, &resp)
}

// Heartbeat renews a node's session.
func (c *Client) Heartbeat(ctx context.Context, req HeartbeatRequest) (resp HeartbeatResponse, err error) {
	return resp, c.call(ctx, pathHeartbeat, read, req, &resp)
}

// ListNodes lists registered nodes.
func (c *Client) ListNodes(ctx context.Context) (resp NodesResponse, err error) {
	return resp, c.call(ctx, pathNodes, read, struct{}{}, &resp)
}

// ClusterInfo describes the controller cluster as the current target (the
// leader, once the client has found it) sees it.
func (c *Client) ClusterInfo(ctx context.Context) (resp ClusterInfo, err error) {
	return resp, c.call(ctx, pathCluster, read, struct{}{}, &resp)
}

// AddVoter adds a controller voter; adding one that is already a voter at
// the same address is a no-op, so it is retried like a read.
func (c *Client) AddVoter(ctx context.Context, req AddVoterRequest) error {
	return c.call(ctx, pathAddVoter, read, req, nil)
}

// RemoveVoter removes a controller voter.
func (c *Client) RemoveVoter(ctx context.Context, req RemoveVoterRequest) error {
	return c.call(ctx, pathRemoveVoter, write, req, nil)
}

// AlterPartition asks for a partition's ISR to change. It is not retried
// once sent: a retry of one that was applied would be refused as stale,
// and the leader store reads the partition again in either case.
func (c *Client) AlterPartition(ctx context.Context, req AlterPartitionRequest) (resp PartitionInfo, err error) {
	return resp, c.call(ctx, pathAlterPartition, write, req, &resp)
}

// AlterPartitionReassignments starts, replaces or cancels reassignments.
func (c *Client) AlterPartitionReassignments(ctx context.Context, req ReassignRequest) (resp ReassignResponse, err error) {
	return resp, c.call(ctx, pathReassign, write, req, &resp)
}

// ListPartitionReassignments lists the reassignments in progress.
func (c *Client) ListPartitionReassignments(ctx context.Context, req ListReassignmentsRequest) (resp ListReassignmentsResponse, err error) {
	return resp, c.call(ctx, pathListReassign, read, req, &resp)
}

// DrainStore drains a store, or reports how far its drain has gone;
// calling it again is harmless, so it is retried like a read.
func (c *Client) DrainStore(ctx context.Context, req DrainRequest) (resp DrainStatus, err error) {
	return resp, c.call(ctx, pathDrainStore, idempotent, req, &resp)
}
