package native

import "testing"

func TestFrameClass(t *testing.T) {
	for _, c := range []struct{ n, class, size int }{
		{1, 0, 64 << 10},
		{64 << 10, 0, 64 << 10},
		{64<<10 + 1, 1, 96 << 10},
		{96 << 10, 1, 96 << 10},
		{96<<10 + 1, 2, 128 << 10},
		{16<<20 + 1, 2*(25-frameClassMinShift) - 1, 24 << 20}, // a request just past the SDK's bound
		{64 << 20, frameClasses - 1, 64 << 20},
		{64<<20 + 1, -1, 64<<20 + 1},
	} {
		if class, size := frameClass(c.n); class != c.class || size != c.size {
			t.Errorf("frameClass(%d) = %d, %d; want %d, %d", c.n, class, size, c.class, c.size)
		}
	}
	// Every class's size is its own class, so putFrameBuf finds it.
	prev := 0
	for n := 1; n <= 64<<20; n = n*5/4 + 1 {
		class, size := frameClass(n)
		if again, _ := frameClass(size); again != class || class < prev || size < n {
			t.Fatalf("frameClass(%d) = %d, %d; its size is class %d", n, class, size, again)
		}
		prev = class
	}
}

// TestLargeFrameBuffersComeBack: a producer's large requests (past
// 4 MiB) reuse the buffers of the ones before, where each used to
// allocate (and zero) a buffer of the next power of two.
func TestLargeFrameBuffersComeBack(t *testing.T) {
	var ps produces
	first := ps.frameBuf(17 << 20)
	if len(first) != 17<<20 || cap(first) != 24<<20 {
		t.Fatalf("frame buffer of len %d cap %d", len(first), cap(first))
	}
	// The race detector makes sync.Pool drop a quarter of what it is
	// given, so give it a few chances.
	for range 20 {
		ps.putFrame(first)
		b := ps.frameBuf(16<<20 + 100)
		if &b[0] == &first[0] {
			return
		}
		first = b
	}
	t.Fatal("a 24 MiB frame buffer was never reused")
}

// BenchmarkProduceFrameBuf is the buffer cycle of one produce request of
// 16 MiB and a bit, read in the steps readGrowing takes.
func BenchmarkProduceFrameBuf(b *testing.B) {
	var ps produces
	b.ReportAllocs()
	for b.Loop() {
		var prev []byte
		for _, n := range []int{1 << 20, 4 << 20, 16<<20 + 100} {
			buf := ps.frameBuf(n)
			if prev != nil {
				ps.putFrame(prev)
			}
			prev = buf
		}
		ps.putFrame(prev)
	}
}
