package fetchcache

import (
	"encoding/binary"
	"weak"

	"github.com/aerostream/aerostream/logstore"
)

// Verifying ahead.
//
// Every batch served is checked (finish), and the CRC32C pass over its
// bytes is most of what a cold read costs the broker's CPU. For a chunk
// readahead brought in, nobody is waiting yet, so the GET's goroutine
// checks the whole batches that lie inside the chunk as it lands, and the
// chunk's scan entry records the range it checked. A read then skips the
// CRC pass for a batch inside that range of the same buffer: the check
// moves off the fetch's path, into the time the consumer spends on the
// records before it. The rest of finish's checks (offsets, epochs, the
// segment's end) still run at read time; they are cheap.
//
// A batch that runs over the end of a chunk is checked when the chunk
// after it lands, if the one it starts in is at hand (the span's chunk
// before, or the scan segment's): with batches near 1 MiB in 4 MiB chunks,
// those were the only batches a cold replay still checked on the fetch
// path. The check holds the earlier chunk's buffer only weakly, so it
// keeps no evicted chunk alive, and counts only for a read that holds that
// very buffer.

// verifyAhead checks the whole batches of chunk k of o that lie inside
// it, from the first index entry at or after the chunk's start, and
// returns the object positions [from, to) of the run it found good, empty
// when it checked nothing: no index in memory, or no entry inside the
// chunk. It stops at the first batch that fails or runs past the chunk;
// reads check those themselves.
func (c *Cache) verifyAhead(o *object, k int64, data []byte) (from, to int64) {
	if c.opts.SkipVerify || o.idxKey == "" {
		return 0, 0
	}
	x, ok := c.idx.get(o.idxKey, nil)
	if !ok {
		return 0, 0
	}
	// A bundle found by a List (next.go), whose readahead brings a
	// replay's first chunks of every segment, has no log end known yet:
	// past the log lie its index and trailer, which fail the checks, and
	// no read goes past the log's end.
	logEnd := o.end
	if logEnd <= 0 {
		logEnd = o.size
	}
	start := k * c.chunkSize
	end := min(start+int64(len(data)), logEnd)
	pos, ok := entryAtOrAfter(x, start)
	if !ok || pos >= end {
		return 0, 0
	}
	from = pos
	for end-pos >= logstore.BatchHeaderSize {
		h, err := logstore.ParseBatchHeader(data[pos-start:])
		if err != nil || int64(h.Length) > end-pos {
			break
		}
		if _, err := logstore.ValidateStoredBatch(data[pos-start : pos-start+int64(h.Length)]); err != nil {
			break
		}
		pos += int64(h.Length)
	}
	if pos == from {
		return 0, 0
	}
	c.st.verifiedAhead.Add(1)
	return from, pos
}

// acrossCheck is a batch over a chunk boundary checked as the later chunk
// landed: object positions [from, to), and the earlier chunk's buffer it
// was checked with.
type acrossCheck struct {
	from, to int64
	prev     weak.Pointer[byte]
}

// verifyAcross checks the batch that starts in prev, chunk k-1 of o, at
// prevTo (where verifyAhead's run in prev ended) and ends in data, chunk
// k. It returns the zero acrossCheck when there is none or it fails: the
// read that reaches it checks it then.
func (c *Cache) verifyAcross(o *object, k int64, prev []byte, prevTo int64, data []byte) acrossCheck {
	start := k * c.chunkSize
	if c.opts.SkipVerify || k == 0 || int64(len(prev)) != c.chunkSize || prevTo <= start-c.chunkSize || prevTo >= start || o.end <= start {
		return acrossCheck{}
	}
	ps := parts{prev[prevTo-(start-c.chunkSize):], data[:min(int64(len(data)), o.end-start)]}
	if ps.size() < logstore.BatchHeaderSize {
		return acrossCheck{}
	}
	var hdr [logstore.BatchHeaderSize]byte
	h, err := logstore.ParseBatchHeader(ps.header(&hdr, 0))
	if err != nil || int(h.Length) > ps.size() || prevTo+int64(h.Length) <= start {
		return acrossCheck{}
	}
	if _, err := logstore.ValidateStoredBatchParts(ps.slice(nil, 0, int(h.Length))); err != nil {
		return acrossCheck{}
	}
	return acrossCheck{from: prevTo, to: prevTo + int64(h.Length), prev: weak.Make(&prev[0])}
}

// entryAtOrAfter is the position of the first entry of the index x at or
// after position p.
func entryAtOrAfter(x []byte, p int64) (int64, bool) {
	lo, hi := 0, len(x)/indexEntryWidth
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int64(binary.BigEndian.Uint32(x[mid*indexEntryWidth+4:])) < p {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(x)/indexEntryWidth {
		return 0, false
	}
	return int64(binary.BigEndian.Uint32(x[lo*indexEntryWidth+4:])), true
}

// checkedAhead reports whether the batch at object positions [from, to)
// lies inside one chunk this read holds, in the range verifyAhead checked
// for that chunk's buffer.
func (r *reader) checkedAhead(from, to int64) bool {
	k := from / r.c.chunkSize
	switch (to - 1) / r.c.chunkSize {
	case k:
		for i := range r.memo {
			if m := &r.memo[i]; m.k == k {
				return m.vTo > m.vFrom && m.vFrom <= from && to <= m.vTo
			}
		}
	case k + 1:
		// A batch over two chunks: checked when the later one landed,
		// with the buffer of the earlier one that this read holds.
		var prev, next *memoChunk
		for i := range r.memo {
			switch m := &r.memo[i]; m.k {
			case k:
				prev = m
			case k + 1:
				next = m
			}
		}
		return prev != nil && next != nil && len(prev.data) > 0 && next.across.from == from && next.across.to == to &&
			next.across.prev.Value() == &prev.data[0]
	}
	return false
}

// noteChecked copies into the read's memory of chunk k the range
// verifyAhead checked, when the scan segment holds that very buffer.
func (r *reader) noteChecked(m *memoChunk) {
	if len(m.data) == 0 {
		return
	}
	r.c.scan.get(r.c.chunkKey(r.o.key, m.k), func(e *scanEntry) {
		if len(e.data) > 0 && &e.data[0] == &m.data[0] {
			m.vFrom, m.vTo, m.across = e.vFrom, e.vTo, e.across
		}
	})
}
