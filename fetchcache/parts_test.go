package fetchcache

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/aerostream/aerostream/logstore"
)

// TestParts: header, slice and cut of a run of bytes in parts read the
// same bytes as the run in one slice, wherever the parts are cut.
func TestParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := make([]byte, 300)
	for i := range all {
		all[i] = byte(rng.Uint32())
	}
	join := func(ps parts) []byte { return bytes.Join(ps, nil) }
	for range 500 {
		var ps parts
		for rest := all; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(80))
			ps = append(ps, rest[:n:n])
			rest = rest[n:]
		}
		if ps.size() != len(all) {
			t.Fatalf("size %d, want %d", ps.size(), len(all))
		}
		var buf [logstore.BatchHeaderSize]byte
		at := rng.IntN(len(all) - logstore.BatchHeaderSize + 1)
		if h := ps.header(&buf, at); !bytes.Equal(h, all[at:at+len(buf)]) {
			t.Fatalf("header at %d of parts %d: wrong bytes", at, len(ps))
		}
		from := rng.IntN(len(all))
		to := from + 1 + rng.IntN(len(all)-from)
		s := ps.slice(nil, from, to)
		if !bytes.Equal(join(s), all[from:to]) {
			t.Fatalf("slice [%d, %d): wrong bytes", from, to)
		}
		for _, p := range s {
			if len(p) == 0 {
				t.Fatalf("slice [%d, %d) has an empty part", from, to)
			}
		}
		n := rng.IntN(len(all) + 1)
		c := ps.cut(n)
		if !bytes.Equal(join(c), all[:n]) || (n == 0) != (c == nil) {
			t.Fatalf("cut %d: wrong bytes", n)
		}
		for _, p := range c {
			if len(p) == 0 || cap(p) != len(p) {
				t.Fatalf("cut %d: part of %d bytes, capacity %d", n, len(p), cap(p))
			}
		}
	}
}
