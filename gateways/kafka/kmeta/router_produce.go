package kmeta

import (
	"context"
	"sync"

	"github.com/aerostream/aerostream/logstore/ring"
)

// ProduceBatch sends each store the parts it leads in one ProduceBatch.
// The common case, every part on one store, passes the slice through as
// it is, on the caller's goroutine. Parts whose partition has no
// reachable leader, or whose store answered with an error a newer table
// may cure (ErrNotLeader, a broken connection), go through Produce, which
// waits for such a table; that path is rare and runs one goroutine per
// such part so their waits overlap.
func (r *Router) ProduceBatch(ctx context.Context, parts []ring.ProducePart) {
	for i := range parts {
		parts[i].Result, parts[i].Err = ring.ProduceResult{}, nil
	}
	t, err := r.currentTable()
	if err != nil && !r.retriable(err) {
		for i := range parts {
			parts[i].Err = err
		}
		return
	}
	var one *storeConn
	single := t != nil && len(parts) > 0
	if single {
		for i := range parts {
			s, err := t.routeOf(parts[i].Topic, parts[i].Partition)
			if err != nil || (one != nil && s != one) {
				single = false
				break
			}
			one = s
		}
	}
	if single {
		b, err := one.backend(ctx, r)
		if err != nil {
			for i := range parts {
				parts[i].Err = err
			}
		} else {
			b.ProduceBatch(ctx, parts)
		}
	} else if t != nil {
		r.produceSplit(ctx, t, parts)
	} else {
		for i := range parts {
			parts[i].Err = err
		}
	}
	r.retryParts(ctx, parts)
}

// produceSplit groups parts by leading store, one ProduceBatch each,
// concurrently; a part without a route keeps its routing error.
func (r *Router) produceSplit(ctx context.Context, t *routeTable, parts []ring.ProducePart) {
	type group struct {
		store *storeConn
		idx   []int
		parts []ring.ProducePart
	}
	var groups []*group
	for i := range parts {
		s, err := t.routeOf(parts[i].Topic, parts[i].Partition)
		if err != nil {
			parts[i].Err = err
			continue
		}
		var g *group
		for _, x := range groups {
			if x.store == s {
				g = x
				break
			}
		}
		if g == nil {
			g = &group{store: s}
			groups = append(groups, g)
		}
		g.idx = append(g.idx, i)
		g.parts = append(g.parts, ring.ProducePart{ProduceRequest: parts[i].ProduceRequest})
	}
	run := func(g *group) {
		b, err := g.store.backend(ctx, r)
		if err != nil {
			for k := range g.parts {
				g.parts[k].Err = err
			}
			return
		}
		b.ProduceBatch(ctx, g.parts)
	}
	var wg sync.WaitGroup
	for _, g := range groups[min(1, len(groups)):] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(g)
		}()
	}
	if len(groups) > 0 {
		run(groups[0])
	}
	wg.Wait()
	for _, g := range groups {
		for k, i := range g.idx {
			parts[i].Result, parts[i].Err = g.parts[k].Result, g.parts[k].Err
		}
	}
}

// retryParts gives the parts that failed with a retriable error to
// Produce, which waits for a table that routes them.
func (r *Router) retryParts(ctx context.Context, parts []ring.ProducePart) {
	var wg sync.WaitGroup
	for i := range parts {
		p := &parts[i]
		if p.Err == nil || !r.retriable(p.Err) || ctx.Err() != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Result, p.Err = r.Produce(ctx, &p.ProduceRequest)
		}()
	}
	wg.Wait()
}
