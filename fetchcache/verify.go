package fetchcache

import (
	"encoding/binary"

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

// verifyAhead checks the whole batches of chunk k of o that lie inside
// it, from the first index entry at or after the chunk's start, and
// returns the object positions [from, to) of the run it found good, empty
// when it checked nothing: no index in memory, no entry inside the chunk,
// or a log end not known yet. It stops at the first batch that fails or
// runs past the chunk; reads check those themselves.
func (c *Cache) verifyAhead(o *object, k int64, data []byte) (from, to int64) {
	if c.opts.SkipVerify || o.idxKey == "" || o.end <= 0 {
		return 0, 0
	}
	x, ok := c.idx.get(o.idxKey, nil)
	if !ok {
		return 0, 0
	}
	start := k * c.chunkSize
	end := min(start+int64(len(data)), o.end)
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
	if (to-1)/r.c.chunkSize != k {
		return false
	}
	for i := range r.memo {
		if m := &r.memo[i]; m.k == k {
			return m.vTo > m.vFrom && m.vFrom <= from && to <= m.vTo
		}
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
			m.vFrom, m.vTo = e.vFrom, e.vTo
		}
	})
}
