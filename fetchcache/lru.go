package fetchcache

import (
	"container/list"
	"sync"
)

// lru is a byte-bounded least-recently-used map. It backs the scan and index
// segments, where recency is the right policy and ristretto's frequency-based
// admission would be the wrong one: a scan chunk prefetched a moment ago has
// never been read, so TinyLFU would rank it below any stale chunk read a few
// times and refuse it, which would make readahead useless.
type lru[V any] struct {
	capacity int64
	// onEvict is told of every entry pushed out to make room (not of
	// remove); it runs under mu, so it must not call back into the lru.
	onEvict func(key string, v V)
	// keep, when set, marks entries to evict only after every other one
	// but the newest; it runs under mu.
	keep func(v V) bool

	mu struct {
		sync.Mutex
		used  int64
		ll    list.List // front: most recently used
		m     map[string]*list.Element
		evict int64
	}
}

type lruItem[V any] struct {
	key  string
	v    V
	cost int64
}

func newLRU[V any](capacity int64, onEvict func(string, V)) *lru[V] {
	l := &lru[V]{capacity: capacity, onEvict: onEvict}
	l.mu.m = map[string]*list.Element{}
	return l
}

// get returns the value under key and marks it used. fn, when non-nil, runs
// under the lock with the value, so pointer values can be updated safely.
func (l *lru[V]) get(key string, fn func(V)) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.mu.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.mu.ll.MoveToFront(e)
	it := e.Value.(*lruItem[V])
	if fn != nil {
		fn(it.v)
	}
	return it.v, true
}

// has reports whether key is present, without marking it used.
func (l *lru[V]) has(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.mu.m[key]
	return ok
}

// peek returns the value under key without marking it used.
func (l *lru[V]) peek(key string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.mu.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	return e.Value.(*lruItem[V]).v, true
}

// add stores v under key (replacing an older value), then evicts least
// recently used entries until the segment fits. A value larger than the
// whole segment is not stored.
func (l *lru[V]) add(key string, v V, cost int64) {
	if cost > l.capacity {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.mu.m[key]; ok {
		it := e.Value.(*lruItem[V])
		l.mu.used += cost - it.cost
		it.v, it.cost = v, cost
		l.mu.ll.MoveToFront(e)
	} else {
		l.mu.m[key] = l.mu.ll.PushFront(&lruItem[V]{key: key, v: v, cost: cost})
		l.mu.used += cost
	}
	for l.mu.used > l.capacity {
		e := l.victimLocked()
		it := e.Value.(*lruItem[V])
		l.removeLocked(e)
		l.mu.evict++
		if l.onEvict != nil {
			l.onEvict(it.key, it.v)
		}
	}
}

// victimLocked picks the entry to evict: the least recently used one that
// keep does not hold on to, else (every older entry held) the least
// recently used. The entry just added, at the front, is never passed over
// for a held one.
func (l *lru[V]) victimLocked() *list.Element {
	back := l.mu.ll.Back()
	if l.keep == nil {
		return back
	}
	for e := back; e != nil && e != l.mu.ll.Front(); e = e.Prev() {
		if !l.keep(e.Value.(*lruItem[V]).v) {
			return e
		}
	}
	return back
}

// count is how many entries match fn, which runs under mu.
func (l *lru[V]) count(fn func(V) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for e := l.mu.ll.Front(); e != nil; e = e.Next() {
		if fn(e.Value.(*lruItem[V]).v) {
			n++
		}
	}
	return n
}

// remove drops key if present.
func (l *lru[V]) remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.mu.m[key]; ok {
		l.removeLocked(e)
	}
}

func (l *lru[V]) removeLocked(e *list.Element) {
	it := e.Value.(*lruItem[V])
	l.mu.ll.Remove(e)
	delete(l.mu.m, it.key)
	l.mu.used -= it.cost
}

// stats returns the bytes held and the evictions so far.
func (l *lru[V]) stats() (used, evictions int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.used, l.mu.evict
}

// ghostList remembers the keys of chunks that were read and then dropped
// from the scan segment (2Q's A1out): a miss on one of them is a
// re-reference the scan segment was too small to see, so the chunk goes to
// the main segment. It holds keys only, in FIFO order.
type ghostList struct {
	mu struct {
		sync.Mutex
		seq  uint64
		m    map[string]uint64 // key -> seq of its slot in ring
		ring []ghostSlot
		next int
	}
}

type ghostSlot struct {
	key string
	seq uint64
}

func newGhostList(n int) *ghostList {
	g := &ghostList{}
	g.mu.m = make(map[string]uint64, n)
	g.mu.ring = make([]ghostSlot, n)
	return g
}

func (g *ghostList) add(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.mu.ring[g.mu.next]
	if seq, ok := g.mu.m[old.key]; ok && seq == old.seq {
		delete(g.mu.m, old.key)
	}
	g.mu.seq++
	g.mu.ring[g.mu.next] = ghostSlot{key: key, seq: g.mu.seq}
	g.mu.m[key] = g.mu.seq
	g.mu.next = (g.mu.next + 1) % len(g.mu.ring)
}

// take reports whether key was a ghost, and forgets it.
func (g *ghostList) take(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.mu.m[key]; ok {
		delete(g.mu.m, key)
		return true
	}
	return false
}
