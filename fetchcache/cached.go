package fetchcache

import (
	"context"
	"errors"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
)

// ReadCached is ReadRemote for a read that memory can serve: ok is false,
// and nothing is read, when the read would have to wait for a GET (of the
// object's size, its index or a chunk). It never waits on the network, so
// a fetch over several cold partitions can read those already in memory
// one after the other on its own goroutine and hand only the others to
// goroutines of their own: a goroutine per partition made every read of a
// replay, whose chunks readahead has almost always brought in already,
// wait for the scheduler to run it. The GETs a miss needs are started
// here, as ReadRemote would (readahead, the chunks past the first), so
// the ReadRemote that follows finds them in flight.
func (c *Cache) ReadCached(seg catalog.Segment, offset int64, maxBytes int) (parts [][]byte, ok bool, err error) {
	parts, err = c.read(context.Background(), seg, offset, maxBytes, true)
	if errors.Is(err, errNotInMemory) {
		c.st.cachedMisses.Add(1)
		return nil, false, nil
	}
	c.st.cachedReads.Add(1)
	return parts, true, err
}

// knownInMemory reports whether seg's object size and index are in memory,
// so that resolving them does not GET.
func (c *Cache) knownInMemory(seg catalog.Segment) bool {
	if seg.ObjectSize <= 0 && !c.sizes.has(seg.ObjectKey) {
		return false
	}
	idx := IndexKey(seg.ObjectKey)
	return idx == "" || c.idx.has(idx)
}

var _ logstore.ColdCache = (*Cache)(nil)
