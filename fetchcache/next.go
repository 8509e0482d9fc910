package fetchcache

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// Readahead across objects.
//
// A consumer replaying a partition reads one segment after the other, and
// each segment is its own object. Readahead that stopped at the object's
// end left every segment's first read waiting for its index GET and then
// its first chunks, while the consumer sat idle: with 16 MiB segments that
// was a stall every few fetches. So a sequential reader's readahead window
// runs on into the object of the next segment (its index first, then its
// first chunks), one object ahead at most.
//
// The cache is handed one segment record per read and does not know the
// next one's object key, which carries a segment id fixed when it was
// sealed. It finds it with one List of the key prefix that names the next
// segment's base offset (<dir>/<base offset, 20 digits>-<segment id>.seg,
// or .log for a legacy segment, the next base offset being this record's
// end offset), sent as a readahead (a free I/O slot or nothing), once per
// object: the answer is remembered (a missing next object for a short
// while only, as it may be uploaded any moment). A key of another shape
// turns the feature off for that object; reads are served exactly as
// before. A bundle found this way has no record yet, so its log's end is
// read from its trailer before its index (index.go).

// nextNoneTTL is how long "no next object yet" is believed: the next
// segment of a partition being read near its end may be uploading.
const nextNoneTTL = 2 * time.Second

// nextEntry is what the cache knows of the object after one: key "" means
// none was found at time at.
type nextEntry struct {
	key  string
	size int64
	at   time.Time
}

// nextListKey names the List of o's successor in the flight group. The
// "#next" suffix cannot be a chunk key (those end in digits after '#') nor
// an index key.
func nextListKey(obj string) string { return obj + "#next" }

// nextPrefix returns the key prefix of the object holding the segment that
// starts at offset end, beside the object key: it shares key's folder and
// names end in 20 digits followed by '-'. ok is false when key does not
// have that shape.
func nextPrefix(key string, end int64) (string, bool) {
	dir, base := path.Split(key)
	if end < 0 || len(base) < 22 || base[20] != '-' || !segobj.IsSegment(base) {
		return "", false
	}
	for i := range 20 {
		if base[i] < '0' || base[i] > '9' {
			return "", false
		}
	}
	return fmt.Sprintf("%s%020d-", dir, end), true
}

// nextObject returns the object after o when it is known. When it is not,
// it starts a List for it in the background (if a readahead slot is free)
// which, once answered, resumes origin's readahead, and returns nil.
func (c *Cache) nextObject(o, origin *object) *object {
	end := o.seg.EndOffset
	if end <= o.seg.BaseOffset {
		return nil // the record does not say where the segment ends
	}
	prefix, ok := nextPrefix(o.key, end)
	if !ok {
		return nil
	}
	if e, ok := c.nexts.get(o.key, nil); ok {
		switch {
		case e.key != "":
			nx := &object{key: e.key, idxKey: IndexKey(e.key)}
			nx.setSize(e.size, c.chunkSize, 0) // a bundle's log end: from its trailer
			// The next object's own successor is found from its record
			// when a reader gets there; here it has none, so the window
			// stops at its end.
			nx.seg.BaseOffset, nx.seg.EndOffset = end, end
			return nx
		case time.Since(e.at) < nextNoneTTL:
			return nil
		}
	}
	key := nextListKey(o.key)
	c.flights.mu.Lock()
	defer c.flights.mu.Unlock()
	if c.flights.m[key] != nil {
		return nil
	}
	if !c.tryAcquireReadahead() {
		c.st.readaheadSkipped.Add(1)
		return nil
	}
	f := c.startLocked(key, 0, true, func(ctx context.Context) ([]byte, error) {
		defer c.releaseReadahead()
		e, err := c.listNext(ctx, prefix)
		if err != nil {
			return nil, err
		}
		c.nexts.add(o.key, e, 1)
		return nil, nil
	}, nil, func(err error) {
		if err == nil {
			c.pump(origin)
		}
	})
	f.readahead = true
	return nil
}

// listNext lists prefix and returns the one segment object (a bundle or a
// legacy .log) under it, or an entry with no key when there is none (or,
// which tierd never makes, more than one: readahead does not guess).
func (c *Cache) listNext(ctx context.Context, prefix string) (nextEntry, error) {
	e := nextEntry{at: time.Now()}
	found := 0
	for info, err := range c.bucket.List(ctx, prefix) {
		if err != nil {
			return e, fmt.Errorf("fetchcache: %s %q: %w", objstore.OpList, prefix, err)
		}
		if segobj.IsSegment(info.Key) {
			found++
			e.key, e.size = info.Key, info.Size
		}
	}
	if found != 1 || e.size <= 0 {
		e.key, e.size = "", 0
	}
	return e, nil
}

// prefetchIndex starts a background GET of o's index object unless it is
// cached or in flight, on a free readahead slot only. It returns false when
// no slot was free. origin's readahead resumes once the index is in.
func (c *Cache) prefetchIndex(o, origin *object) bool {
	if o.idxKey == "" || c.idx.has(o.idxKey) {
		return true
	}
	if !c.tryAcquireReadahead() {
		c.st.readaheadSkipped.Add(1)
		return false
	}
	c.flights.mu.Lock()
	defer c.flights.mu.Unlock()
	if c.flights.m[o.idxKey] != nil || c.idx.has(o.idxKey) {
		c.releaseReadahead()
		return true
	}
	f := c.startLocked(o.idxKey, 0, true,
		func(ctx context.Context) ([]byte, error) { return c.fetchIndex(ctx, o, true) },
		func(x []byte) { c.idx.add(o.idxKey, x, int64(len(x))+64) },
		func(err error) {
			if err == nil {
				c.pump(origin)
			}
		})
	f.readahead = true
	return true
}

// pump tops up the readahead window of the sequential reader of o after a
// readahead GET finished: a read only starts the prefetches that find a
// free slot, and without this the slots that free up while the consumer is
// busy elsewhere (sending the last response, decoding it) would stay idle
// until its next fetch. The window is anchored at the reader's latest
// chunk, so it never reaches back to chunks the reader is done with; a
// reader that has moved on into the next object is followed there.
func (c *Cache) pump(o *object) {
	if c.closing.Load() || c.life.Err() != nil {
		return
	}
	latest, o2, done := c.streams.state(o.key)
	if o2 == nil {
		return // the stream was forgotten; its next read starts afresh
	}
	if done {
		// The reader finished o. Once it has read in the next object, top
		// up its window there, from the object (and record) its reads
		// carry, unless it has finished that one too: a window anchored
		// at the end of an object the reader has left would go on
		// fetching the first chunks of the objects after it, again each
		// time the scan segment dropped them, long after the reader
		// passed them (a second replay of a topic).
		if e, ok := c.nexts.get(o.key, nil); ok && e.key != "" {
			if l, nx, nxDone := c.streams.state(e.key); nx != nil {
				if !nxDone {
					c.readahead(nx, l, l)
				}
				return
			}
		}
	}
	c.readahead(o, latest, latest)
}
