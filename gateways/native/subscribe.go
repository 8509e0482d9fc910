package native

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Subscribe (0x11), Credit (0x12), Unsubscribe (0x13): a server-push
// stream, so a follower pays no round trip per poll. A subscription's
// goroutine long-polls the store for its partitions and pushes what
// arrives (whole batches, the segment files' bytes as Fetch sends them)
// under the Subscribe's correlation id, as long as the subscription has
// credit: each push spends its record bytes and the client's Credit
// frames give them back once it has taken them in. So a slow reader holds
// at most its window in the gateway, and a reader that never gives credit
// back costs nothing but its goroutine, until StallTimeout closes its
// connection (with an Error frame saying why); the other clients carry on.

// subscriptions is a session's push streams.
type subscriptions struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		m map[uint32]*subscription
	}
}

type subscription struct {
	id       uint32
	maxBytes int32
	parts    []ring.FetchPartition
	ids      [][16]byte
	credit   atomic.Int64
	more     chan struct{} // a credit arrived (buffered 1)
	cancel   context.CancelFunc
	authz    subAuthz // authz.go; the subscription's goroutine owns it
}

func (s *session) subs() *subscriptions {
	ss := &s.subscriptions
	ss.once.Do(func() {
		ss.ctx, ss.cancel = context.WithCancel(s.connCtx)
		ss.mu.m = map[uint32]*subscription{}
	})
	return ss
}

// closeSubscriptions stops every push goroutine and waits for them: the
// plumbing requires pushers gone when Session.Close returns.
func (s *session) closeSubscriptions() {
	ss := &s.subscriptions
	if ss.cancel != nil {
		ss.cancel()
	}
	ss.wg.Wait()
}

func (s *session) subscribe(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.Subscribe
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if len(m.Partitions) == 0 || m.CreditBytes <= 0 {
		return s.fail(wire.OpSubscribe, corr, fmt.Errorf("%w: a subscription needs partitions and credit", ErrBadRequest), -1), nil
	}
	sub := &subscription{id: corr, maxBytes: m.MaxBytes, more: make(chan struct{}, 1)}
	if sub.maxBytes <= 0 || sub.maxBytes > 16<<20 {
		sub.maxBytes = 16 << 20
	}
	sub.credit.Store(m.CreditBytes)
	sub.authz = subAuthz{principal: s.authz.principal, host: s.authz.host, groups: s.authz.groups, gen: s.authz.gen, expires: s.sasl.expires}
	for _, p := range m.Partitions {
		t, err := s.topicByID(ctx, p.TopicID)
		if err == nil {
			err = s.topicErr(t, opRead) // authz.go
		}
		if err == nil && (p.Partition < 0 || p.Partition >= t.Partitions) {
			err = fmt.Errorf("%w: partition %d of %s", ring.ErrUnknownPartition, p.Partition, t.Name)
		}
		if err != nil {
			return s.fail(wire.OpSubscribe, corr, err, -1), nil
		}
		sub.parts = append(sub.parts, ring.FetchPartition{Topic: t.Name, Partition: p.Partition, Offset: p.Offset, MaxBytes: sub.maxBytes})
		sub.ids = append(sub.ids, p.TopicID)
	}
	ss := s.subs()
	ss.mu.Lock()
	if _, dup := ss.mu.m[corr]; dup {
		ss.mu.Unlock()
		return s.fail(wire.OpSubscribe, corr, fmt.Errorf("%w: subscription %d exists", ErrBadRequest, corr), -1), nil
	}
	sctx, cancel := context.WithCancel(ss.ctx)
	sub.cancel = cancel
	ss.mu.m[corr] = sub
	ss.mu.Unlock()
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		defer cancel()
		s.push(sctx, sub)
		ss.mu.Lock()
		delete(ss.mu.m, sub.id)
		ss.mu.Unlock()
	}()
	// The answer goes out through the push queue, from the goroutine, so
	// that it precedes the first push.
	return nil, nil
}

// credit handles Credit and Unsubscribe; neither is answered (Unsubscribe's
// end is the subscription's last push, with code 0 and no partitions).
func (s *session) credit(r *wire.Reader, unsubscribe bool) (*gateways.Response, error) {
	var m wire.Credit
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	ss := s.subs()
	ss.mu.Lock()
	sub := ss.mu.m[m.Subscription]
	ss.mu.Unlock()
	if sub == nil {
		return nil, nil // ended meanwhile: nothing to give credit to
	}
	if unsubscribe {
		sub.cancel()
		return nil, nil
	}
	if m.Bytes > 0 {
		sub.credit.Add(m.Bytes)
		select {
		case sub.more <- struct{}{}:
		default:
		}
	}
	return nil, nil
}

// push runs one subscription until ctx ends or the connection closes.
func (s *session) push(ctx context.Context, sub *subscription) {
	if err := s.conn.Push(ctx, s.respond(wire.OpSubscribe, ok(sub.id), nil)); err != nil {
		return
	}
	stall := s.g.opts.StallTimeout
	sc := &pushScan{}
	// After a small push the next fetch waits a moment, so that under
	// load records go out in pushes of some size rather than one fetch
	// per batch as each lands, which would keep the shards busy serving
	// fetches instead of appends. An idle subscription is not delayed:
	// its fetch long-polls for the first record.
	coalesce := time.NewTimer(0)
	defer coalesce.Stop()
	small := false
	for ctx.Err() == nil {
		if small {
			coalesce.Reset(pushCoalesce)
			select {
			case <-coalesce.C:
			case <-ctx.Done():
				return
			}
			small = false
		}
		if sub.credit.Load() <= 0 {
			select {
			case <-sub.more:
				continue
			case <-ctx.Done():
				return
			case <-time.After(stall):
				err := fmt.Errorf("%w: subscription %d had no credit for %v", kerr.ThrottlingQuotaExceeded, sub.id, stall)
				s.conn.Log.Warn("closing connection: a subscription's credit was never given back", "subscription", sub.id, "stall", stall)
				resp := s.respond(wire.OpError, wire.Head{Corr: sub.id, Code: codeFor(err), LeaderHint: -1, Message: err.Error()}, nil)
				resp.CloseAfter()
				_ = s.conn.Push(ctx, resp)
				return
			}
		}
		if err := s.recheck(sub); err != nil { // authz.go
			_ = s.conn.Push(ctx, s.fail(wire.OpSubscribe, sub.id, err, -1))
			return
		}
		budget := int32(min(sub.credit.Load(), int64(sub.maxBytes)))
		for i := range sub.parts {
			sub.parts[i].MaxBytes = budget
		}
		sc.req = ring.FetchRequest{Partitions: sub.parts, MinBytes: 1, MaxBytes: budget, MaxWait: time.Second}
		res, err := s.g.opts.Backend.Fetch(ctx, &sc.req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			resp := s.fail(wire.OpSubscribe, sub.id, err, -1)
			_ = s.conn.Push(ctx, resp)
			return
		}
		po, spent, failed := s.pushFrame(sub, res, sc) // pushframe.go
		if po == nil {
			continue
		}
		sub.credit.Add(-int64(spent))
		if err := s.conn.Push(ctx, &po.resp); err != nil {
			return
		}
		small = spent < pushSmallBytes
		if failed {
			return // the partition's error went out; the client subscribes again
		}
	}
}

// A push under pushSmallBytes makes the next fetch wait pushCoalesce.
const (
	pushSmallBytes = 64 << 10
	pushCoalesce   = time.Millisecond
)
