package kmeta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/logstore/ring"
)

// StoreRing is a live store's shard ring as the controller lists it.
type StoreRing struct {
	ID   int32
	Addr string
	// Version moves when the store's shard count or address changes; the
	// router then dials it anew.
	Version uint64
}

// DialFunc opens a ring client to the store at addr.
type DialFunc func(ctx context.Context, addr string) (ring.Backend, error)

// Router is a ring.Backend over every store of the cluster: each call goes
// to the ring client of the store that leads its partition, as the latest
// metadata snapshot says (Topic.Parts[p].Leader, a store node id). It
// never guesses a leader it has not seen in a snapshot: a call whose
// partition has no leader, or is led by a store that is not live or
// cannot be reached, waits (RouterOptions.LeaderWait) for a snapshot that
// names a reachable one, then fails with ring.ErrNotLeader, which Kafka
// clients take as "refresh your metadata and retry".
//
// One ring client per store, dialled on first use and shared by every
// call; it is replaced when the store's ring address or version changes
// and closed when the store leaves. The routing table (snapshot and
// clients) is one immutable value behind an atomic pointer, so calls take
// no lock; Update builds the next one.
//
// A fetch whose partitions are led by several stores fans out one request
// per store, concurrently, and merges the results in request order. Each
// store request long-polls with the caller's MinBytes and MaxWait; as soon
// as the first one returns (it has data, an error, or its wait ran out),
// the others are cut short and asked again without waiting, so the answer
// carries every partition's latest state and comes as soon as one store
// has something. The request's MaxBytes bounds the merged answer as the
// store bounds its own: partitions past the limit come back empty (the
// first partition with records is always kept whole).
type Router struct {
	dial       DialFunc
	log        *slog.Logger
	leaderWait time.Duration
	table      atomic.Pointer[routeTable]
	first      chan struct{} // closed by the first Update
	done       chan struct{} // closed by Close
	closed     atomic.Bool
	closes     sync.WaitGroup // clients being closed off the caller's path

	// mu serializes Update and Close; calls never take it.
	mu sync.Mutex
}

// RouterOptions configure a Router; zero values take the defaults.
type RouterOptions struct {
	// Dial opens a store's ring client; default ring.Dial.
	Dial DialFunc
	// LeaderWait bounds how long a call whose partition has no reachable
	// leader waits for the metadata to name one (a store died and the
	// controller is electing its successor) before it fails with
	// ErrNotLeader; a fetch waits no longer than its MaxWait. Waiting here
	// rather than in the client spares it a metadata refresh, which
	// clients rate-limit: the gateway it talks to stays the partition's
	// "leader" whichever store leads. Default 5s; negative: no wait.
	LeaderWait time.Duration
	Logger     *slog.Logger
}

var _ ring.Backend = (*Router)(nil)

// routeTable is one immutable routing state.
type routeTable struct {
	md     *kafka.Metadata
	stores map[int32]*storeConn
	next   chan struct{} // closed when the next table replaces this one
}

// dialRetry bounds how often a store that failed to answer is dialled
// again: calls in between fail at once instead of each waiting on a dead
// address.
const dialRetry = 500 * time.Millisecond

// storeConn is the ring client of one store, dialled lazily.
type storeConn struct {
	StoreRing
	b  atomic.Pointer[backendBox]
	mu struct {
		sync.Mutex
		closed   bool
		failedAt time.Time
		failed   error
	}
}

type backendBox struct{ ring.Backend }

// NewRouter returns a Router with no metadata: calls wait (LeaderWait)
// for the first Update, then fail with ErrNotLeader.
func NewRouter(opts RouterOptions) *Router {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	r := &Router{dial: opts.Dial, log: logger.With("component", "ring-router"), leaderWait: opts.LeaderWait,
		first: make(chan struct{}), done: make(chan struct{})}
	if r.leaderWait == 0 {
		r.leaderWait = 5 * time.Second
	}
	if r.dial == nil {
		r.dial = func(ctx context.Context, addr string) (ring.Backend, error) {
			return ring.Dial(ctx, addr, ring.DialOptions{Logger: logger})
		}
	}
	return r
}

// Update makes md and the live stores the routing state. Clients of stores
// that left or moved are closed once the new state is in place.
func (r *Router) Update(md *kafka.Metadata, stores []StoreRing) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return
	}
	var old map[int32]*storeConn
	if t := r.table.Load(); t != nil {
		old = t.stores
	}
	same := len(stores) == len(old)
	for _, s := range stores {
		if o := old[s.ID]; o == nil || o.StoreRing != s {
			same = false
			break
		}
	}
	if same {
		r.publish(&routeTable{md: md, stores: old, next: make(chan struct{})})
		return
	}
	next := make(map[int32]*storeConn, len(stores))
	for _, s := range stores {
		if o := old[s.ID]; o != nil && o.StoreRing == s {
			next[s.ID] = o
			continue
		}
		next[s.ID] = &storeConn{StoreRing: s}
	}
	r.publish(&routeTable{md: md, stores: next, next: make(chan struct{})})
	for id, o := range old {
		if next[id] != o {
			r.log.Info("store ring changed or left", "store", id, "addr", o.Addr)
			r.closeLater(o)
		}
	}
}

// publish swaps t in and wakes the calls waiting for a new table.
func (r *Router) publish(t *routeTable) {
	prev := r.table.Swap(t)
	if prev == nil {
		close(r.first)
	} else {
		close(prev.next)
	}
}

// retriable reports an error that a newer routing table may cure: no
// leader, a leader that is not live or refuses (it was fenced), a store
// that cannot be reached or whose ring moved.
func (r *Router) retriable(err error) bool {
	if r.closed.Load() {
		return false
	}
	return errors.Is(err, ring.ErrNotLeader) || errors.Is(err, ring.ErrConnClosed) || errors.Is(err, ring.ErrClosed) ||
		errors.Is(err, ring.ErrStaleRing) || errors.Is(err, ring.ErrWrongShard)
}

// retryTick is how often a call retries on an unchanged routing table: the
// table can already name the new leader while that store has not yet
// taken the role from its own copy of the metadata, and no newer table
// comes to wake the call.
const retryTick = 50 * time.Millisecond

// awaitTable waits for a routing table newer than t (nil: the first), or
// retryTick, for at most max from the first wait (*deadline keeps it across
// retries). It reports whether to try again.
func (r *Router) awaitTable(ctx context.Context, t *routeTable, max time.Duration, deadline *time.Time) bool {
	if max <= 0 || ctx.Err() != nil {
		return false
	}
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(max)
	}
	left := deadline.Sub(now)
	if left <= 0 {
		return false
	}
	next := r.first
	if t != nil {
		next = t.next
	}
	tick := left > retryTick && t != nil
	wait := left
	if tick {
		wait = retryTick
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-next:
		return true
	case <-timer.C:
		return tick
	case <-ctx.Done():
	case <-r.done:
	}
	return false
}

// call runs fn on the client of the store leading topic/partition,
// waiting (LeaderWait) for a new routing table while the partition has no
// reachable leader.
func (r *Router) call(ctx context.Context, topic string, partition int32, fn func(b ring.Backend) error) error {
	var deadline time.Time
	for {
		t := r.table.Load()
		err := r.callOn(ctx, t, topic, partition, fn)
		if err == nil || !r.retriable(err) || !r.awaitTable(ctx, t, r.leaderWait, &deadline) {
			return err
		}
	}
}

func (r *Router) callOn(ctx context.Context, t *routeTable, topic string, partition int32, fn func(b ring.Backend) error) error {
	if r.closed.Load() {
		return errRouterClosed
	}
	if t == nil {
		return fmt.Errorf("%w: no cluster metadata yet", ring.ErrNotLeader)
	}
	s, err := t.routeOf(topic, partition)
	if err != nil {
		return err
	}
	b, err := s.backend(ctx, r)
	if err != nil {
		return err
	}
	return fn(b)
}

// closeLater closes a replaced client without holding up Update (and the
// metadata lock its caller holds); Close waits for it.
func (r *Router) closeLater(s *storeConn) {
	r.closes.Add(1)
	go func() {
		defer r.closes.Done()
		s.close()
	}()
}

// Close closes every store's client. Calls after Close fail with
// ErrClosed.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed.Swap(true) {
		r.mu.Unlock()
		return nil
	}
	close(r.done)
	if t := r.table.Load(); t != nil {
		for _, s := range t.stores {
			r.closeLater(s)
		}
	}
	r.mu.Unlock()
	r.closes.Wait()
	return nil
}

var errRouterClosed = fmt.Errorf("%w: ring router closed", ring.ErrClosed)

// routeOf finds the store leading topic/partition in t.
func (t *routeTable) routeOf(topic string, partition int32) (*storeConn, error) {
	tp, ok := t.md.Topic(topic)
	if !ok || partition < 0 || partition >= tp.Partitions {
		return nil, fmt.Errorf("%w: %s/%d is not in the metadata", ring.ErrUnknownPartition, topic, partition)
	}
	leader := tp.Partition(partition).Leader
	if leader == kafka.NoLeader {
		return nil, fmt.Errorf("%w: %s/%d has no leader", ring.ErrNotLeader, topic, partition)
	}
	s := t.stores[leader]
	if s == nil {
		return nil, fmt.Errorf("%w: %s/%d is led by store %d, which is not live", ring.ErrNotLeader, topic, partition, leader)
	}
	return s, nil
}

func (r *Router) currentTable() (*routeTable, error) {
	if r.closed.Load() {
		return nil, errRouterClosed
	}
	t := r.table.Load()
	if t == nil {
		return nil, fmt.Errorf("%w: no cluster metadata yet", ring.ErrNotLeader)
	}
	return t, nil
}

// backend returns the store's client, dialling it on first use.
func (s *storeConn) backend(ctx context.Context, r *Router) (ring.Backend, error) {
	if b := s.b.Load(); b != nil {
		return b.Backend, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.b.Load(); b != nil {
		return b.Backend, nil
	}
	if s.mu.closed {
		return nil, fmt.Errorf("%w: store %d left the ring", ring.ErrNotLeader, s.ID)
	}
	if s.mu.failed != nil && time.Since(s.mu.failedAt) < dialRetry {
		return nil, s.mu.failed
	}
	b, err := r.dial(ctx, s.Addr)
	if err != nil {
		err = fmt.Errorf("%w: store %d at %s: %w", ring.ErrConnClosed, s.ID, s.Addr, err)
		if ctx.Err() == nil { // the caller giving up says nothing of the store
			s.mu.failed, s.mu.failedAt = err, time.Now()
			r.log.Warn("store ring unreachable", "store", s.ID, "addr", s.Addr, "err", err)
		}
		return nil, err
	}
	s.mu.failed = nil
	s.b.Store(&backendBox{b})
	r.log.Debug("store ring dialled", "store", s.ID, "addr", s.Addr)
	return b, nil
}

func (s *storeConn) close() {
	s.mu.Lock()
	s.mu.closed = true
	b := s.b.Swap(nil)
	s.mu.Unlock()
	if b != nil {
		_ = b.Close()
	}
}

// on returns the client of store id, if it is live.
func (r *Router) on(ctx context.Context, id int32) (ring.Backend, error) {
	t, err := r.currentTable()
	if err != nil {
		return nil, err
	}
	s := t.stores[id]
	if s == nil {
		return nil, fmt.Errorf("%w: store %d is not live", ring.ErrNotLeader, id)
	}
	return s.backend(ctx, r)
}

func (r *Router) Produce(ctx context.Context, req *ring.ProduceRequest) (res ring.ProduceResult, err error) {
	err = r.call(ctx, req.Topic, req.Partition, func(b ring.Backend) (err error) {
		res, err = b.Produce(ctx, req)
		return err
	})
	return res, err
}

func (r *Router) ListOffsets(ctx context.Context, topic string, partition int32, timestamp int64) (res ring.OffsetResult, err error) {
	err = r.call(ctx, topic, partition, func(b ring.Backend) (err error) {
		res, err = b.ListOffsets(ctx, topic, partition, timestamp)
		return err
	})
	return res, err
}

func (r *Router) CreatePartition(ctx context.Context, topic string, partition int32, cfg ring.PartitionConfig) error {
	return r.call(ctx, topic, partition, func(b ring.Backend) error {
		return b.CreatePartition(ctx, topic, partition, cfg)
	})
}

func (r *Router) DeletePartition(ctx context.Context, topic string, partition int32) error {
	return r.call(ctx, topic, partition, func(b ring.Backend) error {
		return b.DeletePartition(ctx, topic, partition)
	})
}

func (r *Router) DescribePartition(ctx context.Context, topic string, partition int32) (res ring.PartitionInfo, err error) {
	err = r.call(ctx, topic, partition, func(b ring.Backend) (err error) {
		res, err = b.DescribePartition(ctx, topic, partition)
		return err
	})
	return res, err
}

func (r *Router) DeleteRecords(ctx context.Context, topic string, partition int32, before int64) (res int64, err error) {
	err = r.call(ctx, topic, partition, func(b ring.Backend) (err error) {
		res, err = b.DeleteRecords(ctx, topic, partition, before)
		return err
	})
	return res, err
}

func (r *Router) WriteTxnMarker(ctx context.Context, m ring.TxnMarker) (res int64, err error) {
	err = r.call(ctx, m.Topic, m.Partition, func(b ring.Backend) (err error) {
		res, err = b.WriteTxnMarker(ctx, m)
		return err
	})
	return res, err
}

func (r *Router) OffsetForLeaderEpoch(ctx context.Context, topic string, partition int32, epoch int32) (res ring.EpochEnd, err error) {
	err = r.call(ctx, topic, partition, func(b ring.Backend) (err error) {
		res, err = b.OffsetForLeaderEpoch(ctx, topic, partition, epoch)
		return err
	})
	return res, err
}

// ListPartitions asks every live store and keeps each partition as its
// leader reports it (followers hold copies too); a partition the metadata
// does not know is kept from every store that has it.
func (r *Router) ListPartitions(ctx context.Context) ([]ring.PartitionInfo, error) {
	t, err := r.currentTable()
	if err != nil {
		return nil, err
	}
	type answer struct {
		id    int32
		infos []ring.PartitionInfo
		err   error
	}
	answers := make(chan answer, len(t.stores))
	for id, s := range t.stores {
		go func() {
			b, err := s.backend(ctx, r)
			if err != nil {
				answers <- answer{id: id, err: err}
				return
			}
			infos, err := b.ListPartitions(ctx)
			answers <- answer{id: id, infos: infos, err: err}
		}()
	}
	var (
		out   []ring.PartitionInfo
		first error
	)
	for range t.stores {
		a := <-answers
		if a.err != nil {
			first = cmpErr(first, fmt.Errorf("store %d: %w", a.id, a.err))
			continue
		}
		for _, in := range a.infos {
			if tp, ok := t.md.Topic(in.Topic); ok && tp.Partition(in.Partition).Leader != a.id {
				continue
			}
			out = append(out, in)
		}
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// fetchGroup is the part of a fetch that one store serves.
type fetchGroup struct {
	store *storeConn
	idx   []int // positions in the caller's request
	req   ring.FetchRequest
	res   ring.FetchResult
	err   error
}

func (r *Router) Fetch(ctx context.Context, req *ring.FetchRequest) (ring.FetchResult, error) {
	var deadline time.Time
	for {
		t := r.table.Load()
		res, retry, err := r.fetchOn(ctx, t, req)
		if err == nil && !retry {
			return res, nil
		}
		if (retry || r.retriable(err)) && r.awaitTable(ctx, t, min(r.leaderWait, req.MaxWait), &deadline) {
			res.Release()
			continue
		}
		if retry {
			// Out of time to wait: answer with what the table says.
			return r.fanOut(ctx, t, req)
		}
		return res, err
	}
}

// fetchOn fetches by table t. retry is set, with nothing fetched, when a
// partition has no reachable leader and a newer table may name one.
func (r *Router) fetchOn(ctx context.Context, t *routeTable, req *ring.FetchRequest) (ring.FetchResult, bool, error) {
	if r.closed.Load() {
		return ring.FetchResult{}, false, errRouterClosed
	}
	if t == nil {
		return ring.FetchResult{}, false, fmt.Errorf("%w: no cluster metadata yet", ring.ErrNotLeader)
	}
	// The common case, every partition on one store, passes the request
	// through as it is.
	var one *storeConn
	single := len(req.Partitions) > 0
	for i := range req.Partitions {
		p := &req.Partitions[i]
		s, err := t.routeOf(p.Topic, p.Partition)
		if err != nil {
			if r.retriable(err) {
				return ring.FetchResult{}, true, nil
			}
			single = false
			continue
		}
		if one != nil && s != one {
			single = false
		}
		one = s
	}
	if !single {
		res, err := r.fanOut(ctx, t, req)
		return res, false, err
	}
	b, err := one.backend(ctx, r)
	if err != nil {
		return ring.FetchResult{}, false, err
	}
	res, err := b.Fetch(ctx, req)
	return res, false, err
}

func (r *Router) fanOut(ctx context.Context, t *routeTable, req *ring.FetchRequest) (ring.FetchResult, error) {
	out := ring.FetchResult{Partitions: make([]ring.FetchPartitionResult, len(req.Partitions))}
	var groups []*fetchGroup
	for i := range req.Partitions {
		p := &req.Partitions[i]
		s, err := t.routeOf(p.Topic, p.Partition)
		if err != nil {
			out.Partitions[i] = failed(p, err)
			continue
		}
		var g *fetchGroup
		for _, x := range groups {
			if x.store == s {
				g = x
				break
			}
		}
		if g == nil {
			// Each store's share keeps every setting of the request but
			// its partitions: without IsolationLevel a read_committed
			// consumer would get open and aborted transactions' records.
			g = &fetchGroup{store: s, req: *req}
			g.req.Partitions = nil
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.req.Partitions = append(g.req.Partitions, *p)
	}
	if len(groups) > 0 {
		if countFailed(out.Partitions) > 0 {
			// A partition that could not be routed answers at once, as a
			// store answers a partition error.
			for _, g := range groups {
				g.req.MaxWait = 0
			}
		}
		r.fetchGroups(ctx, groups)
	}
	if err := ctx.Err(); err != nil {
		for _, g := range groups {
			g.res.Release()
		}
		return ring.FetchResult{}, err
	}
	for _, g := range groups {
		if g.err == nil && len(g.res.Partitions) != len(g.idx) {
			g.res.Release()
			g.err = fmt.Errorf("%w: store %d answered %d partitions for %d", ring.ErrProtocol, g.store.ID, len(g.res.Partitions), len(g.idx))
		}
		for j, i := range g.idx {
			if g.err != nil {
				out.Partitions[i] = failed(&req.Partitions[i], g.err)
				continue
			}
			out.Partitions[i] = g.res.Partitions[j]
		}
	}
	if req.MaxBytes > 0 {
		total := 0
		for i := range out.Partitions {
			p := &out.Partitions[i]
			n := p.Records.Size()
			if n > 0 && total >= int(req.MaxBytes) {
				p.Records.Release()
				p.Records = ring.Records{}
				continue
			}
			total += n
		}
	}
	return out, nil
}

func countFailed(ps []ring.FetchPartitionResult) int {
	n := 0
	for i := range ps {
		if ps[i].Err != nil {
			n++
		}
	}
	return n
}

// fetchGroups runs every group's fetch at once. When the first returns,
// the others' long polls are cut short and asked again without waiting.
func (r *Router) fetchGroups(ctx context.Context, groups []*fetchGroup) {
	pollCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *fetchGroup, len(groups))
	run := func(ctx context.Context, g *fetchGroup) {
		b, err := g.store.backend(ctx, r)
		if err == nil {
			g.res, err = b.Fetch(ctx, &g.req)
		}
		g.err = err
		done <- g
	}
	for _, g := range groups {
		go run(pollCtx, g)
	}
	<-done
	if groups[0].req.MaxWait > 0 {
		// Without a wait there is no long poll to cut short, and a
		// cancelled call would only be asked again.
		cancel()
	}
	for range groups[1:] {
		<-done
	}
	if ctx.Err() != nil {
		return
	}
	var again []*fetchGroup
	for _, g := range groups {
		if g.err != nil && errors.Is(g.err, context.Canceled) && pollCtx.Err() != nil {
			g.req.MaxWait, g.err = 0, nil
			again = append(again, g)
		}
	}
	for _, g := range again {
		go run(ctx, g)
	}
	for range again {
		<-done
	}
}

// failed is the result of a partition the router could not fetch.
func failed(p *ring.FetchPartition, err error) ring.FetchPartitionResult {
	return ring.FetchPartitionResult{Topic: p.Topic, Partition: p.Partition, Err: err, HighWatermark: -1, LogStartOffset: -1}
}
