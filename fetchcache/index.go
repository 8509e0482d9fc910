package fetchcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// A remote segment's offset index is the .index object beside a legacy
// .log object, or the part of a bundle after its log (tierd/segobj). Either
// way it is the segment's sparse offset index exactly as logstore writes
// it (DESIGN §4): big-endian (relative offset uint32, position uint32)
// pairs, one per ~4 KiB of log, both columns strictly increasing. It only
// tells where to start reading headers, so an index that is missing,
// malformed or not this log's costs a longer header scan from byte 0,
// never a wrong answer: locate checks the batch at the entry it uses.
const indexEntryWidth = 8

// noIndex marks an object whose index is missing or unusable, cached so the
// GET is not repeated on every read.
var noIndex = []byte{}

// index returns o's validated index bytes, possibly empty.
func (c *Cache) index(ctx context.Context, o *object) ([]byte, error) {
	if o.idxKey == "" {
		return noIndex, nil
	}
	if x, ok := c.idx.get(o.idxKey, nil); ok {
		c.st.indexHits.Add(1)
		return x, nil
	}
	x, hit, joined, err := c.join(ctx, o.idxKey, func() ([]byte, bool) { return c.idx.get(o.idxKey, nil) }, func() *flight {
		return c.startLocked(o.idxKey, 1, false,
			func(ctx context.Context) ([]byte, error) { return c.fetchIndex(ctx, o, false) },
			func(x []byte) { c.idx.add(o.idxKey, x, int64(len(x))+64) }, nil)
	})
	switch {
	case hit:
		c.st.indexHits.Add(1)
	case joined:
		c.st.indexMisses.Add(1)
		c.st.coalesced.Add(1)
	default:
		c.st.indexMisses.Add(1)
	}
	return x, err
}

// fetchIndex GETs and validates o's index. readahead says the caller
// holds a readahead slot, which this call releases; readahead is not
// retried.
func (c *Cache) fetchIndex(ctx context.Context, o *object, readahead bool) ([]byte, error) {
	if segobj.IsBundle(o.key) {
		return c.fetchBundleIndex(ctx, o, readahead)
	}
	var data []byte
	missing := false
	get := func(ctx context.Context) error {
		c.st.gets.Add(1)
		rc, err := c.bucket.GetRange(ctx, o.idxKey, 0, -1)
		if objstore.IsNotFound(err) {
			missing = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetchcache: %s %q (index): %w", objstore.OpGetRange, o.idxKey, err)
		}
		defer rc.Close()
		// An index larger than its segment of the budget could not be
		// cached anyway; reading one more byte tells that case apart.
		data, err = io.ReadAll(io.LimitReader(rc, c.opts.IndexBytes+1))
		c.st.bytesFetched.Add(int64(len(data)))
		if err != nil {
			return fmt.Errorf("fetchcache: %s %q (index): after %d bytes: %w", objstore.OpGetRange, o.idxKey, len(data), err)
		}
		if err := c.throttle(ctx, len(data)); err != nil {
			return fmt.Errorf("fetchcache: %s %q (index): rate limit: %w", objstore.OpGetRange, o.idxKey, err)
		}
		return nil
	}
	if err := c.withSlot(ctx, o.idxKey, readahead, get); err != nil {
		c.st.getErrors.Add(1)
		return nil, err
	}
	if missing {
		// Not an error: a segment uploaded without its index is still
		// readable, from its first batch on.
		c.log.Debug("remote segment has no index object", "object", o.key, "index", o.idxKey)
		return noIndex, nil
	}
	if int64(len(data)) > c.opts.IndexBytes {
		c.st.badIndexes.Add(1)
		c.log.Warn("remote index larger than the index cache; reading headers from the segment start instead",
			"index", o.idxKey, "index_bytes", c.opts.IndexBytes)
		return noIndex, nil
	}
	if err := validateIndex(data, o.size); err != nil {
		c.st.badIndexes.Add(1)
		c.log.Warn("unusable remote index; reading headers from the segment start instead", "index", o.idxKey, "err", err)
		return noIndex, nil
	}
	return data, nil
}

// fetchBundleIndex GETs the part of the bundle o after its log, in one
// GET, and takes the offset index from it once the trailer checks out.
//
// A bundle whose log end is not known yet (found by a List, next.go) has
// its last tailGuess bytes fetched instead: they hold the trailer and, for
// any segment indexed at logstore's default interval, the whole tail, so
// the next segment's index is one GET away as with a known end; a larger
// tail costs one more GET for the rest.
func (c *Cache) fetchBundleIndex(ctx context.Context, o *object, readahead bool) ([]byte, error) {
	var tail []byte
	end := o.end
	get := func(ctx context.Context) error {
		if end <= 0 {
			if o.size < segobj.TrailerSize {
				return fmt.Errorf("fetchcache: %s: %w: %d bytes, too short for a trailer", o.key, segobj.ErrBadObject, o.size)
			}
			buf := make([]byte, tailGuess(o.size))
			if err := c.getRange(ctx, o.key, o.size-int64(len(buf)), buf); err != nil {
				return err
			}
			t, err := segobj.ParseTrailer(buf)
			if err == nil && t.ObjectSize() != o.size {
				err = fmt.Errorf("%w: the trailer gives %d bytes, the object has %d", segobj.ErrBadObject, t.ObjectSize(), o.size)
			}
			if err != nil {
				return fmt.Errorf("fetchcache: %s: %w", o.key, err)
			}
			end = t.LogBytes
			if n := t.TailBytes(); n <= int64(len(buf)) {
				tail = buf[int64(len(buf))-n:]
				return nil
			}
		}
		// Both indexes come in the one GET; the time index is about as
		// large as the offset index and not worth a second request.
		if n := o.size - end; n > 4*c.opts.IndexBytes+segobj.TrailerSize {
			return errIndexTooLarge
		}
		tail = make([]byte, o.size-end)
		return c.getRange(ctx, o.key, end, tail)
	}
	err := c.withSlot(ctx, o.idxKey, readahead, get)
	if errors.Is(err, errIndexTooLarge) {
		c.st.badIndexes.Add(1)
		c.log.Warn("remote index larger than the index cache; reading headers from the segment start instead",
			"index", o.idxKey, "index_bytes", c.opts.IndexBytes)
		return noIndex, nil
	}
	if err != nil {
		c.st.getErrors.Add(1)
		return nil, err
	}
	idx, _, err := segobj.SplitTail(tail, end)
	if err == nil && int64(len(idx)) > c.opts.IndexBytes {
		err = errIndexTooLarge
	}
	if err == nil {
		err = validateIndex(idx, end)
	}
	if err != nil {
		c.st.badIndexes.Add(1)
		c.log.Warn("unusable remote index; reading headers from the segment start instead", "index", o.idxKey, "err", err)
		return noIndex, nil
	}
	// A copy, so the cache does not keep the time index and trailer too.
	return bytes.Clone(idx), nil
}

// tailGuess is how many bytes from the end of a bundle of size bytes to
// fetch when its log's end is not known: 1/128 of it (logstore indexes
// every 4 KiB with 8-byte offset and 12-byte time entries, 1/200 of the
// log), at least 16 KiB, at most the object.
func tailGuess(size int64) int64 { return min(size, max(16<<10, size/128)) }

// errIndexTooLarge: an index larger than the index cache's budget.
var errIndexTooLarge = errors.New("index larger than the index cache")

// dropIndex replaces o's cached index with noIndex after locate found it
// pointing at the wrong batch.
func (c *Cache) dropIndex(o *object, why string) {
	c.st.badIndexes.Add(1)
	c.log.Warn("remote index does not match its log; reading headers from the segment start instead", "index", o.idxKey, "why", why)
	c.idx.add(o.idxKey, noIndex, 64)
}

// validateIndex checks the shape logstore guarantees for a sealed
// segment's index: whole entries, both columns strictly increasing,
// positions inside the log.
func validateIndex(x []byte, logSize int64) error {
	if len(x)%indexEntryWidth != 0 {
		return fmt.Errorf("size %d is not a multiple of %d", len(x), indexEntryWidth)
	}
	var prevRel, prevPos uint32
	for i := 0; i < len(x); i += indexEntryWidth {
		rel := binary.BigEndian.Uint32(x[i:])
		pos := binary.BigEndian.Uint32(x[i+4:])
		if i > 0 && (rel <= prevRel || pos <= prevPos) {
			return fmt.Errorf("entry %d (%d, %d) does not follow (%d, %d)", i/indexEntryWidth, rel, pos, prevRel, prevPos)
		}
		if int64(pos) >= logSize {
			return fmt.Errorf("entry %d position %d beyond the log size %d", i/indexEntryWidth, pos, logSize)
		}
		prevRel, prevPos = rel, pos
	}
	return nil
}

// indexLookup returns the last entry whose relative offset is at or below
// rel; ok is false (and the scan starts at byte 0) when there is none.
func indexLookup(x []byte, rel uint32) (entryRel, pos uint32, ok bool) {
	lo, hi := 0, len(x)/indexEntryWidth-1
	found := -1
	for lo <= hi {
		mid := int(uint(lo+hi) >> 1)
		if binary.BigEndian.Uint32(x[mid*indexEntryWidth:]) <= rel {
			found, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return 0, 0, false
	}
	e := x[found*indexEntryWidth:]
	return binary.BigEndian.Uint32(e), binary.BigEndian.Uint32(e[4:]), true
}
