package fetchcache

import (
	"context"
	"fmt"
	"sync"
)

// flight is one GET in progress (a chunk or an index object) that any number
// of readers wait for. It is our own small singleflight rather than
// x/sync/singleflight because of two rules that one lacks: a waiter whose
// ctx ends leaves without cancelling the GET for the others, and the GET is
// cancelled once no waiter is left, except for a readahead GET, which has no
// waiter to begin with and runs to completion.
type flight struct {
	done chan struct{}
	// data and err are written once, before done is closed.
	data []byte
	err  error

	// Guarded by flightGroup.mu.
	waiters  int
	detached bool // runs to completion whoever waits (readahead, span prefetch)
	// readahead: a single-attempt prefetch; a reader whose wait for it
	// fails tries again with a GET of its own, with retries.
	readahead bool
	cancel    context.CancelFunc
}

type flightGroup struct {
	mu sync.Mutex
	m  map[string]*flight
}

// startLocked launches fetch for key in its own goroutine, under the
// cache's lifetime context (not the caller's: the GET serves every waiter).
// fill stores a successful result in the cache as the flight leaves the
// group, under the group lock, so a reader that finds no flight finds the
// data; fill must not take the group lock. then, when non-nil, runs last,
// after the waiters are released and outside every lock, with the fetch's
// error (readahead uses it to keep its window full). The caller holds
// c.flights.mu and is either inside enter/leave or in another flight's
// goroutine, which orders c.bg.Add before Close's Wait.
func (c *Cache) startLocked(key string, waiters int, detached bool,
	fetch func(ctx context.Context) ([]byte, error), fill func([]byte), then func(error)) *flight {
	ctx, cancel := context.WithCancel(c.life)
	f := &flight{done: make(chan struct{}), waiters: waiters, detached: detached, cancel: cancel}
	c.flights.m[key] = f
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		defer cancel()
		data, err := fetch(ctx)
		c.land(key, f, data, err, fill)
		if then != nil {
			then(err)
		}
	}()
	return f
}

// land ends flight f for key with its result: fill stores a success as the
// flight leaves the group, then the waiters are released.
func (c *Cache) land(key string, f *flight, data []byte, err error, fill func([]byte)) {
	f.data, f.err = data, err
	c.flights.mu.Lock()
	// Storing and leaving the group are one step under the lock, so a
	// reader finds either the flight or the data. A flight that has
	// already left (its last waiter gave up, or purge dropped what it was
	// fetching) stores nothing.
	if c.flights.m[key] == f {
		delete(c.flights.m, key)
		if err == nil && fill != nil {
			fill(data)
		}
	}
	c.flights.mu.Unlock()
	close(f.done)
}

// join waits for the flight loading key, starting it with start when none
// runs. recheck, called under the group lock when no flight runs, finds
// data that a flight stored and left with between the caller's own lookup
// and this call; it returns ok=false when the data is not there.
func (c *Cache) join(ctx context.Context, key string, recheck func() ([]byte, bool), start func() *flight) (data []byte, hit, joined bool, err error) {
	for attempt := 0; ; attempt++ {
		c.flights.mu.Lock()
		f := c.flights.m[key]
		// After a failed readahead, the reader GETs the chunk itself
		// (with retries) rather than join the next readahead of it,
		// which may fail the same way: its own flight takes the key, and
		// the readahead, when it ends, stores nothing.
		if f != nil && !(attempt > 0 && f.readahead) {
			f.waiters++
			joined = true
		} else {
			if data, ok := recheck(); ok {
				c.flights.mu.Unlock()
				return data, true, joined, nil
			}
			f = start()
		}
		c.flights.mu.Unlock()
		data, err = c.wait(ctx, key, f)
		if err != nil && f.readahead && attempt == 0 && ctx.Err() == nil {
			// The failed flight has left the group, so this starts anew.
			continue
		}
		return data, false, joined, err
	}
}

// wait returns the flight's result, or leaves it when ctx ends first.
func (c *Cache) wait(ctx context.Context, key string, f *flight) ([]byte, error) {
	select {
	case <-f.done:
		return f.data, f.err
	case <-ctx.Done():
	}
	// The flight may have finished meanwhile; its result is still good.
	select {
	case <-f.done:
		return f.data, f.err
	default:
	}
	c.flights.mu.Lock()
	f.waiters--
	if f.waiters <= 0 && !f.detached {
		f.cancel()
		// Readers arriving from now on start afresh instead of joining a
		// GET that is about to fail with "context canceled".
		if c.flights.m[key] == f {
			delete(c.flights.m, key)
		}
	}
	c.flights.mu.Unlock()
	return nil, fmt.Errorf("fetchcache: waiting for %s: %w", key, ctx.Err())
}
