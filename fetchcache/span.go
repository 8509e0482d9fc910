package fetchcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aerostream/aerostream/tierd/objstore"
)

// Readahead in spans.
//
// A sequential reader's window moves one chunk at a time, and topping it
// up chunk by chunk made one GET per chunk: 256 GETs for a GiB of 4 MiB
// chunks. Each request costs the bucket more than its bytes (measured on
// MinIO: 0.73 CPU seconds per GiB read in 4 MiB range GETs, 0.52 in whole
// 16 MiB objects) and, on S3, is billed. So readahead waits until half its
// window is missing and then fetches that half with one ranged GET, split
// into chunks as the body arrives: half the GETs at the default window of
// four chunks, a quarter at eight, and never more memory than the window.
// Each chunk of a span is its own flight, so a reader that needs the first
// chunk has it as soon as its bytes are in, not when the span ends.

// spanChunks is how many chunks a readahead GET fetches at most, and the
// run of missing chunks at the end of a window of that many chunks that it
// waits for.
func spanChunks(window int64) int64 { return max(1, window/2) }

// missing is how many chunks from n on, at most up to and including last,
// are neither cached nor in flight.
func (c *Cache) missing(o *object, n, last int64) int64 {
	run := int64(0)
	for k := n; k <= last; k++ {
		key := c.chunkKey(o.key, k)
		if _, ok := c.main.GetTTL(key); ok || c.scan.has(key) {
			break
		}
		c.flights.mu.Lock()
		inFlight := c.flights.m[key] != nil
		c.flights.mu.Unlock()
		if inFlight {
			break
		}
		run++
	}
	return run
}

// prefetchSpan starts one readahead GET of up to run chunks of o from chunk
// n, on a free readahead slot (false when there is none). Chunks that came
// in meanwhile end the span early. When it is done, origin's window is
// topped up again (pump). anchor is readahead's.
func (c *Cache) prefetchSpan(o *object, n, run int64, origin *object, anchor int64) bool {
	if run <= 1 {
		return c.prefetch(o, n, origin, anchor)
	}
	if !c.tryAcquireReadahead() {
		c.st.readaheadSkipped.Add(1)
		return false
	}
	ctx, cancel := context.WithCancel(c.life)
	c.flights.mu.Lock()
	var keys []string
	var fs []*flight
	if c.moved(origin, anchor) {
		run = 0 // a stale top-up: see moved
	}
	for k := n; k < n+run; k++ {
		key := c.chunkKey(o.key, k)
		if c.flights.m[key] != nil || c.scan.has(key) {
			break
		}
		if _, ok := c.main.GetTTL(key); ok {
			break
		}
		f := &flight{done: make(chan struct{}), detached: true, readahead: true, cancel: cancel}
		c.flights.m[key] = f
		keys, fs = append(keys, key), append(fs, f)
	}
	if len(fs) == 0 {
		c.flights.mu.Unlock()
		cancel()
		c.releaseReadahead()
		return true
	}
	c.st.readaheadGets.Add(int64(len(fs)))
	// Added under the group lock, as startLocked does, which orders it
	// before Close's Wait.
	c.bg.Add(1)
	c.flights.mu.Unlock()
	go func() {
		defer c.bg.Done()
		defer cancel()
		err := c.getSpan(ctx, o, n, keys, fs)
		c.releaseReadahead()
		if err == nil {
			c.pump(origin)
		}
	}()
	return true
}

// getSpan GETs the chunks of keys (chunk n onwards, consecutive) in one
// range and lands each flight as its bytes arrive; after a failure the
// remaining flights fail with the same error (readers then GET the chunk
// themselves, with retries).
func (c *Cache) getSpan(ctx context.Context, o *object, n int64, keys []string, fs []*flight) error {
	off := n * c.chunkSize
	end := min((n+int64(len(fs)))*c.chunkSize, o.size)
	fill := func(key string, vFrom, vTo int64, across acrossCheck) func([]byte) {
		return func(data []byte) {
			c.scan.add(key, &scanEntry{data: data, lastStart: -1, prefetched: true, at: time.Now(), vFrom: vFrom, vTo: vTo,
				across: across}, int64(len(data)))
		}
	}
	// The chunk before the span's first, if the scan segment holds it, so
	// the batch over that boundary is checked too.
	var prev []byte
	var prevTo int64
	if n > 0 {
		if e, ok := c.scan.peek(c.chunkKey(o.key, n-1)); ok {
			prev, prevTo = e.data, e.vTo
		}
	}
	fail := func(from int, err error) error {
		c.st.getErrors.Add(1)
		for i := from; i < len(fs); i++ {
			c.land(keys[i], fs[i], nil, err, nil)
		}
		return err
	}
	if err := c.throttle(ctx, int(end-off)); err != nil {
		return fail(0, fmt.Errorf("fetchcache: %s %q bytes [%d,%d): rate limit: %w", objstore.OpGetRange, o.key, off, end, err))
	}
	c.st.gets.Add(1)
	rc, err := c.bucket.GetRange(ctx, o.key, off, end-off)
	if err != nil {
		return fail(0, fmt.Errorf("fetchcache: %s %q bytes [%d,%d): %w", objstore.OpGetRange, o.key, off, end, err))
	}
	defer rc.Close()
	for i := range fs {
		from := off + int64(i)*c.chunkSize
		buf := c.spare.take(min(c.chunkSize, o.size-from))
		got, err := io.ReadFull(rc, buf)
		c.st.bytesFetched.Add(int64(got))
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // an empty body is as short as a cut one
			}
			return fail(i, fmt.Errorf("fetchcache: %s %q bytes [%d,%d): got %d of %d bytes at %d: %w",
				objstore.OpGetRange, o.key, off, end, got, len(buf), from, err))
		}
		// Checked here, outside the flight group's lock that land takes.
		vFrom, vTo := c.verifyAhead(o, n+int64(i), buf)
		across := c.verifyAcross(o, n+int64(i), prev, prevTo, buf)
		c.land(keys[i], fs[i], buf, nil, fill(keys[i], vFrom, vTo, across))
		prev, prevTo = buf, vTo
	}
	return nil
}
