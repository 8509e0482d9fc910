package fetchcache

import "github.com/aerostream/aerostream/logstore"

// parts is a read's result: bytes of an object back to back, each part a
// cached chunk's own memory. A range across chunk boundaries is served as a
// slice of each chunk, not copied together: with 1 MiB batches in 4 MiB
// chunks, copying the batch that straddles each boundary was a quarter of
// a cold replay's bytes and a tenth of the node's CPU (measure-tiered,
// pprof: memmove under the copy).
type parts [][]byte

func (ps parts) size() int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}

// header returns the batch header at position at of ps, which must hold
// logstore.BatchHeaderSize bytes from there: in place when it lies in one
// part, else copied into buf.
func (ps parts) header(buf *[logstore.BatchHeaderSize]byte, at int) []byte {
	i, in := ps.find(at)
	if len(ps[i])-in >= len(buf) {
		return ps[i][in : in+len(buf)]
	}
	b := buf[:0]
	for ; len(b) < len(buf); i, in = i+1, 0 {
		b = append(b, ps[i][in:min(len(ps[i]), in+len(buf)-len(b))]...)
	}
	return b
}

// find returns the part holding position at, and at's position in it.
func (ps parts) find(at int) (i, in int) {
	for i = 0; i < len(ps)-1 && at >= len(ps[i]); i++ {
		at -= len(ps[i])
	}
	return i, at
}

// slice appends the bytes [from, to) of ps to dst as parts.
func (ps parts) slice(dst parts, from, to int) parts {
	for _, p := range ps {
		if from < len(p) && to > 0 {
			dst = append(dst, p[max(from, 0):min(to, len(p))])
		}
		from, to = from-len(p), to-len(p)
	}
	return dst
}

// cut returns ps cut to its first n bytes, each part's capacity cut to its
// length so an append by a caller cannot write into a cached chunk.
func (ps parts) cut(n int) parts {
	out := ps[:0]
	for _, p := range ps {
		if n <= 0 {
			break
		}
		k := min(n, len(p))
		out = append(out, p[:k:k])
		n -= k
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
