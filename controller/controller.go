package controller

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/aerostream/aerostream/catalog"
)

// Defaults for Options.
//
// The session timeout bounds failover: a leader store that dies is fenced
// and replaced about one session timeout later. Kafka's broker session is
// 9 s; ours is short because stores and controllers are expected on one
// network, and a store keeps its leadership lease from these heartbeats.
const (
	DefaultSessionTimeout    = 2 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultRaftTimeout       = time.Second
	// DefaultLeaderRebalanceInterval is how often the leader hands
	// leadership back to preferred replicas.
	DefaultLeaderRebalanceInterval = 5 * time.Second
)

// Options configure a Controller.
type Options struct {
	// NodeID is this voter's id, unique in the controller cluster.
	NodeID int32
	// Dir holds the Raft state: the log and stable store (pebble, in
	// Dir/log) and snapshots (Dir/snapshots).
	Dir string
	// Listener serves Raft and the client API (see transport.go). The
	// caller binds it, so that a taken port fails before any state opens.
	Listener net.Listener
	// TLS, when set, is completed on every connection to Listener, Raft
	// and client API alike (transport.go); give it client certificates
	// required against the cluster CA, so that only nodes holding a
	// certificate of it reach Raft or the API. PeerTLS is then what this
	// voter dials the others with (Raft, joining, AddVoter's checks): the
	// node certificate and the same CA.
	TLS, PeerTLS *tls.Config
	// ClusterSecret, when set, is the cluster credential (clusterauth.go):
	// the client API and Raft refuse whoever does not prove it, and this
	// voter proves it to the others. Every node and client of the cluster
	// holds the same secret, of at least MinClusterSecretBytes.
	ClusterSecret []byte
	// OldClusterSecrets are accepted too but never presented: during a
	// rolling rotation (clusterauth.go), the new secret before it is
	// presented, then the old one until every node presents the new.
	OldClusterSecrets [][]byte
	// Advertise is the host:port other controllers and clients reach this
	// one at; empty means the listener's address, with an unspecified host
	// (":8001", "0.0.0.0:8001") replaced by the machine's hostname.
	Advertise string
	// Bootstrap forms a new single-voter cluster when Dir holds no Raft
	// state; ignored when it does.
	Bootstrap bool
	// Join lists controllers of an existing cluster. When Dir holds no Raft
	// state, the controller asks them (AddVoter) to add it, retrying until
	// one of them, or the leader it names, accepts. Ignored when it does.
	Join []string

	SessionTimeout    time.Duration // a node without heartbeat for this long is down; default 2s
	HeartbeatInterval time.Duration // what nodes are told to keep; default 500ms
	// LeaderRebalanceInterval is how often the leader moves leadership back
	// to preferred replicas (Kafka's auto.leader.rebalance.enable, on by
	// default); default DefaultLeaderRebalanceInterval, negative turns it
	// off.
	LeaderRebalanceInterval time.Duration
	// RaftTimeout is Raft's heartbeat and election timeout (the leader
	// lease is half); default 1s, which elects a new leader within about
	// two to three seconds of losing one.
	RaftTimeout time.Duration

	// TopicDefaults are this node's static topic defaults (Kafka names), as
	// DescribeConfigs reports them when neither the topic nor the dynamic
	// cluster defaults set a config.
	TopicDefaults map[string]string

	Logger *slog.Logger

	// Raft, when set, replaces the transport and stores built from Dir and
	// Listener (tests: raft.NewInmemTransport and raft.NewInmemStore).
	Raft *RaftDeps
}

// RaftDeps are the pieces of Raft a test injects.
type RaftDeps struct {
	Transport raft.Transport
	Logs      raft.LogStore
	Stable    raft.StableStore
	Snapshots raft.SnapshotStore
	// Voters, with Options.Bootstrap, is the initial configuration instead
	// of this node alone.
	Voters []raft.Server
	// Tune adjusts the Raft configuration (snapshot thresholds, say).
	Tune func(*raft.Config)
	// PeerInfo answers for the controller at a Raft address, as the client
	// API's ClusterInfo would; AddVoter needs it to check that a new
	// controller is there and to see when it has caught up.
	PeerInfo func(ctx context.Context, addr string) (ClusterInfo, error)
}

// Controller is one controller voter: the FSM, Raft, the client API server
// and, while leader, the session checker.
type Controller struct {
	opts  Options
	log   *slog.Logger
	fsm   *FSM
	raft  *raft.Raft
	store *catalog.RaftStore // nil with injected deps
	mux   *mux
	http  *http.Server
	peers *Client // reaches other controllers directly, for AddVoter
	addr  string  // advertised
	// clusterAuth checks the cluster credential; nil without a secret.
	clusterAuth *clusterAuth

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// failed is closed when a loop that serves the port dies on its own
	// (failErr says why): the voter is then half-alive, and Wait tells
	// its process to stop.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error

	mu struct {
		sync.Mutex
		lastSeen map[int32]time.Time // leader only
		// heard is when the leader last had a registration or heartbeat
		// from each node (lastSeen is also set for every node when a
		// leader starts).
		heard map[int32]time.Time
		// applied is the metadata version each node says it has acted on;
		// appliedCh is closed (and replaced) when one moves.
		applied   map[int32]uint64
		appliedCh chan struct{}
		// stats is each store's last HeartbeatRequest.Stats (leader
		// only: it is not replicated).
		stats map[int32]StoreStats
	}
}

var _ API = (*Controller)(nil)

// Open starts a controller voter. It returns once Raft runs; the cluster
// may still be electing a leader.
func Open(opts Options) (_ *Controller, err error) {
	if opts.NodeID < 0 {
		return nil, fmt.Errorf("%w: node id %d is negative", ErrInvalidRequest, opts.NodeID)
	}
	if opts.Bootstrap && len(opts.Join) > 0 {
		return nil, fmt.Errorf("%w: bootstrap and join both set: a node either forms a new cluster or joins one", ErrInvalidRequest)
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.RaftTimeout <= 0 {
		opts.RaftTimeout = DefaultRaftTimeout
	}
	if opts.LeaderRebalanceInterval == 0 {
		opts.LeaderRebalanceInterval = DefaultLeaderRebalanceInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if _, err := validateConfigs(opts.TopicDefaults, false); err != nil {
		return nil, fmt.Errorf("topic defaults: %w", err)
	}
	log := opts.Logger.With("component", "controller")
	if opts.TLS != nil && opts.PeerTLS == nil {
		return nil, fmt.Errorf("%w: TLS without PeerTLS: a voter serving TLS dials the others with it", ErrInvalidRequest)
	}
	if len(opts.ClusterSecret) > 0 || len(opts.OldClusterSecrets) > 0 {
		for _, secret := range append([][]byte{opts.ClusterSecret}, opts.OldClusterSecrets...) {
			if err := CheckClusterSecret(secret); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
			}
		}
	}
	c := &Controller{opts: opts, log: log, fsm: NewFSM(log), peers: NewClient(nil, peerOptions(opts)), failed: make(chan struct{}),
		clusterAuth: newClusterAuth(opts.ClusterSecret, opts.OldClusterSecrets, log)}
	c.mu.lastSeen = map[int32]time.Time{}
	c.mu.heard = map[int32]time.Time{}
	c.mu.applied = map[int32]uint64{}
	c.mu.appliedCh = make(chan struct{})
	c.mu.stats = map[int32]StoreStats{}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			c.cancel()
			if c.mux != nil {
				c.mux.close()
			}
			if c.store != nil {
				_ = c.store.Close()
			}
		}
	}()

	hlog := newHclog(opts.Logger)
	deps := opts.Raft
	var snaps raft.SnapshotStore
	if deps == nil {
		if opts.Listener == nil {
			return nil, fmt.Errorf("%w: no listener", ErrInvalidRequest)
		}
		c.addr, err = advertised(opts.Listener.Addr(), opts.Advertise)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("controller: %w", err)
		}
		c.store, err = catalog.OpenRaftStore(filepath.Join(opts.Dir, "log"), catalog.Options{Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("controller: open raft log: %w", err)
		}
		snaps, err = raft.NewFileSnapshotStoreWithLogger(opts.Dir, 2, hlog)
		if err != nil {
			return nil, fmt.Errorf("controller: snapshot store: %w", err)
		}
	} else {
		c.addr = string(deps.Transport.LocalAddr())
	}
	var existing bool
	if deps == nil {
		existing, err = raft.HasExistingState(c.store, c.store, snaps)
	} else {
		existing, err = raft.HasExistingState(deps.Logs, deps.Stable, deps.Snapshots)
	}
	if err != nil {
		return nil, fmt.Errorf("controller: read raft state: %w", err)
	}
	if !existing && !opts.Bootstrap && len(opts.Join) == 0 {
		return nil, fmt.Errorf("%w: %s holds no controller state: set bootstrap to start a new cluster, or join to join an existing one", ErrInvalidRequest, opts.Dir)
	}
	if deps == nil {
		// From here on a failed start must also stop the transport's
		// goroutines: Raft is not there yet to do it.
		c.mux = newMux(opts.Listener, tcpAddr(c.addr), opts.TLS, c.clusterAuth, log, c.fail)
		trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  streamLayer{chanListener: c.mux.raft, tls: opts.PeerTLS, secret: opts.ClusterSecret},
			MaxPool: 3,
			Timeout: 10 * time.Second,
			Logger:  hlog,
		})
		defer func() {
			if err != nil {
				_ = trans.Close()
			}
		}()
		deps = &RaftDeps{Transport: trans, Logs: c.store, Stable: c.store, Snapshots: snaps}
	}

	cfg := raft.DefaultConfig()
	cfg.LocalID = serverID(opts.NodeID)
	cfg.Logger = hlog
	cfg.HeartbeatTimeout = opts.RaftTimeout
	cfg.ElectionTimeout = opts.RaftTimeout
	cfg.LeaderLeaseTimeout = opts.RaftTimeout / 2
	// A removed voter stays up, answering reads and redirects, until its
	// operator stops it.
	cfg.ShutdownOnRemove = false
	if opts.Raft != nil && opts.Raft.Tune != nil {
		opts.Raft.Tune(cfg)
	}

	if !existing && opts.Bootstrap {
		voters := deps.Voters
		if len(voters) == 0 {
			voters = []raft.Server{{Suffrage: raft.Voter, ID: cfg.LocalID, Address: deps.Transport.LocalAddr()}}
		}
		err := raft.BootstrapCluster(cfg, deps.Logs, deps.Stable, deps.Snapshots, deps.Transport, raft.Configuration{Servers: voters})
		if err != nil {
			return nil, fmt.Errorf("controller: bootstrap: %w", err)
		}
		log.Info("bootstrapped a new controller cluster", "node_id", opts.NodeID, "address", c.addr)
	}
	c.raft, err = raft.NewRaft(cfg, c.fsm, deps.Logs, deps.Stable, deps.Snapshots, deps.Transport)
	if err != nil {
		return nil, fmt.Errorf("controller: start raft: %w", err)
	}
	c.electAloneAtOnce()

	if c.mux != nil {
		c.http = &http.Server{
			Handler:           c.handler(),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slogStd(log),
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			err := c.http.Serve(c.mux.api)
			if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				c.fail(fmt.Errorf("client API server: %w", err))
			}
		}()
	}
	c.wg.Add(1)
	go c.watchLeadership()
	if !existing && len(opts.Join) > 0 {
		c.wg.Add(1)
		go c.join()
	}
	return c, nil
}

// fail records that a serving loop died on its own; the first reason
// wins.
func (c *Controller) fail(err error) {
	c.failOnce.Do(func() {
		c.log.Error("controller serving loop died", "err", err)
		c.failErr = err
		close(c.failed)
	})
}

// Wait returns nil when ctx ends, or an error when one of the loops that
// serve the controller's port (its accept loop, the client API server)
// has died on its own, leaving Raft and the clients unserved: the
// process should then stop rather than run half-alive.
func (c *Controller) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.failed:
		return c.failErr
	}
}

// Close stops the controller: the client API, the leader loops, Raft, and
// the Raft store.
func (c *Controller) Close() error {
	c.handOver()
	c.cancel()
	if c.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.http.Shutdown(ctx)
		cancel()
	}
	err := c.raft.Shutdown().Error()
	c.peers.Close()
	if c.mux != nil {
		c.mux.close()
	}
	c.wg.Wait()
	if c.store != nil {
		if cerr := c.store.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// handOver passes leadership to another voter before a clean stop, so the
// cluster does not wait out an election timeout.
func (c *Controller) handOver() {
	if !c.IsLeader() {
		return
	}
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters < 2 {
		return
	}
	if err := c.raft.LeadershipTransfer().Error(); err != nil {
		c.log.Warn("handing leadership over before stopping", "err", err)
		return
	}
	c.log.Info("handed leadership over before stopping")
}

// electAloneAtOnce starts an election at once when this node is the only
// voter. There is no leader to hear from, so waiting out the heartbeat
// timeout would only hold back the first write after every restart.
// Shrinking the heartbeat timeout makes Raft fire a follower's timer at once,
// and a node that has heard from no one then stands for election; the
// timeout goes back to its value straight after.
func (c *Controller) electAloneAtOnce() {
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	voters, self := 0, false
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == serverID(c.opts.NodeID)
		}
	}
	if voters != 1 || !self {
		return
	}
	orig := c.raft.ReloadableConfig()
	short := orig
	short.HeartbeatTimeout -= time.Millisecond
	if err := c.raft.ReloadConfig(short); err != nil {
		c.log.Debug("single voter: cannot start the election early", "err", err)
		return
	}
	if err := c.raft.ReloadConfig(orig); err != nil {
		c.log.Warn("single voter: restoring the heartbeat timeout", "err", err)
	}
}

// AwaitSoleLeadership waits until this controller leads, if it is the
// only voter (serve's), and says whether it leads; a controller with other
// voters returns at once, as its election is theirs too. The election is
// a matter of milliseconds, but one lost to a busy machine would meet a
// client that acted on the start being done.
func (c *Controller) AwaitSoleLeadership(ctx context.Context) bool {
	f := c.raft.GetConfiguration()
	if f.Error() != nil {
		return c.IsLeader()
	}
	voters := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters != 1 {
		return c.IsLeader()
	}
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for !c.IsLeader() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// Addr is the advertised address of this controller.
func (c *Controller) Addr() string { return c.addr }

// FSM gives read access to the local state.
func (c *Controller) FSM() *FSM { return c.fsm }

// IsLeader reports whether this controller is the Raft leader.
func (c *Controller) IsLeader() bool { return c.raft.State() == raft.Leader }

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

func parseServerID(id raft.ServerID) int32 {
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// advertised derives the address to advertise.
func advertised(bound net.Addr, advertise string) (string, error) {
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			return "", fmt.Errorf("%w: advertise address %q: want host:port", ErrInvalidRequest, advertise)
		}
		return advertise, nil
	}
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host, err = os.Hostname()
		if err != nil {
			return "", fmt.Errorf("controller: no advertise address and no hostname: %w", err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

// leader returns the current leader's id and address (-1, "" if unknown).
func (c *Controller) leader() (int32, string) {
	addr, id := c.raft.LeaderWithID()
	if addr == "" {
		return -1, ""
	}
	return parseServerID(id), string(addr)
}

func (c *Controller) notLeader() error {
	id, addr := c.leader()
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

// proposeTimeout bounds one Raft write when ctx has no deadline.
const proposeTimeout = 10 * time.Second

// propose replicates and applies a command through Raft.
func (c *Controller) propose(ctx context.Context, p any) (*applyResult, error) {
	if c.raft.State() != raft.Leader {
		return nil, c.notLeader()
	}
	b, err := encodeCommand(newCommand(p))
	if err != nil {
		return nil, err
	}
	timeout := proposeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	f := c.raft.Apply(b, timeout)
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
			return nil, c.notLeader()
		case errors.Is(err, raft.ErrRaftShutdown):
			return nil, ErrClosed
		default: // ErrLeadershipLost, ErrEnqueueTimeout
			return nil, fmt.Errorf("%w: %v", ErrTimeout, err)
		}
	}
	r, ok := f.Response().(*applyResult)
	if !ok {
		return nil, fmt.Errorf("%w: no result from the state machine", ErrTimeout)
	}
	return r, r.err
}

// watchLeadership runs the leader's duties while this node leads.
func (c *Controller) watchLeadership() {
	defer c.wg.Done()
	var duty *leaderDuty
	defer func() { duty.end() }()
	for {
		select {
		case <-c.ctx.Done():
			return
		case leader := <-c.raft.LeaderCh():
			duty.end()
			duty = nil
			if !leader {
				c.log.Info("lost controller leadership", "node_id", c.opts.NodeID)
				continue
			}
			c.log.Info("became controller leader", "node_id", c.opts.NodeID, "address", c.addr)
			duty = c.startDuty()
		}
	}
}

// leaderDuty is one term's run of lead.
type leaderDuty struct {
	stop context.CancelFunc
	done chan struct{}
}

func (c *Controller) startDuty() *leaderDuty {
	ctx, stop := context.WithCancel(c.ctx)
	d := &leaderDuty{stop: stop, done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		c.lead(ctx)
	}()
	go func() {
		defer wg.Done()
		c.rebalanceLeaders(ctx)
	}()
	go func() {
		defer wg.Done()
		c.promoteLoop(ctx)
	}()
	go func() {
		wg.Wait()
		close(d.done)
	}()
	return d
}

func (d *leaderDuty) end() {
	if d != nil {
		d.stop()
		<-d.done
	}
}

// lead sets the cluster id if the cluster has none, then marks nodes down
// when their session times out.
func (c *Controller) lead(ctx context.Context) {
	// Everything committed before this term is applied after the barrier,
	// so the FSM is current.
	if err := c.raft.Barrier(c.opts.RaftTimeout * 5).Error(); err != nil {
		c.log.Warn("leader barrier", "err", err)
	}
	now := time.Now()
	c.mu.Lock()
	c.mu.lastSeen = map[int32]time.Time{}
	c.mu.applied = map[int32]uint64{}
	c.mu.stats = map[int32]StoreStats{} // what a former term heard is stale
	for _, n := range c.fsm.Nodes() {
		c.mu.lastSeen[n.ID] = now // a new leader gives every node a full session
	}
	c.mu.Unlock()
	if c.fsm.ClusterID() == "" {
		if _, err := c.propose(ctx, &cmdSetClusterID{ClusterID: newClusterID()}); err != nil && ctx.Err() == nil {
			c.log.Warn("setting the cluster id", "err", err)
		}
	}
	// Checked ten times a session, so that a node is marked down at most a
	// tenth of a session late: failover time is the session plus this.
	tick := time.NewTicker(min(max(c.opts.SessionTimeout/10, 10*time.Millisecond), 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if c.fsm.ClusterID() == "" {
			_, _ = c.propose(ctx, &cmdSetClusterID{ClusterID: newClusterID()})
		}
		var down []int32
		now := time.Now()
		c.mu.Lock()
		for _, n := range c.fsm.Nodes() {
			seen, ok := c.mu.lastSeen[n.ID]
			if !ok {
				c.mu.lastSeen[n.ID], seen = now, now
			}
			if n.Live && now.Sub(seen) > c.opts.SessionTimeout {
				down = append(down, n.ID)
			}
		}
		c.mu.Unlock()
		if len(down) > 0 {
			c.log.Info("session timeout: marking nodes down", "nodes", down, "timeout", c.opts.SessionTimeout)
			if _, err := c.propose(ctx, &cmdSetLiveness{Down: down, NowMs: now.UnixMilli()}); err != nil && ctx.Err() == nil {
				c.log.Warn("marking nodes down", "err", err)
			}
		}
	}
}

// newClusterID draws a Kafka-style cluster id (a base64 UUID).
func newClusterID() string {
	var id TopicID
	_, _ = rand.Read(id[:])
	return id.String()
}

// join asks the Join controllers to add this node as a voter, until one
// accepts or the controller closes.
func (c *Controller) join() {
	defer c.wg.Done()
	cl := NewClient(c.opts.Join, peerOptions(c.opts))
	defer cl.Close()
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		err := cl.AddVoter(ctx, AddVoterRequest{ID: c.opts.NodeID, Address: c.addr})
		cancel()
		if err == nil {
			c.log.Info("joined the controller cluster", "node_id", c.opts.NodeID, "via", c.opts.Join)
			return
		}
		if attempt%10 == 0 {
			c.log.Warn("joining the controller cluster", "via", c.opts.Join, "err", err)
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// touch renews id's session and returns when.
func (c *Controller) touch(id int32) time.Time {
	now := time.Now()
	c.mu.Lock()
	c.mu.lastSeen[id] = now
	c.mu.heard[id] = now
	c.mu.Unlock()
	return now
}

func (c *Controller) lastHeard(id int32) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.heard[id]
	return t, ok
}

// setApplied records the version node id has acted on.
func (c *Controller) setApplied(id int32, v uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v > c.mu.applied[id] {
		c.mu.applied[id] = v
		close(c.mu.appliedCh)
		c.mu.appliedCh = make(chan struct{})
	}
}

// waitApplied waits until every store in stores that is live has acted on
// version, or until timeout; it returns the stores that have not.
func (c *Controller) waitApplied(ctx context.Context, stores map[int32]bool, version uint64, timeout time.Duration) []int32 {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		var missing []int32
		c.mu.Lock()
		ch := c.mu.appliedCh
		for id := range stores {
			if n, ok := c.fsm.Node(id); ok && n.Live && c.mu.applied[id] < version {
				missing = append(missing, id)
			}
		}
		c.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-c.fsm.changedSince(c.fsm.Version()): // a store went down
		case <-t.C:
			return missing
		case <-ctx.Done():
			return missing
		case <-c.ctx.Done():
			return missing
		}
	}
}

func (c *Controller) lastSeen(id int32) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.lastSeen[id]
	return t, ok
}
