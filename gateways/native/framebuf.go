package native

import (
	"math/bits"
	"sync"
)

// Produce frames are read into buffers of a produce's own (they outlive
// the read of the next frame) and come back when the produce is done. A
// producer's requests range from a few KiB to past its 16 MiB request
// bound, so the buffers are pooled by size class, shared by every
// connection: a class per power of two and one halfway between, so a
// frame just past a power of two takes a buffer at most a half larger,
// not twice. A frame larger than the largest class is allocated for
// itself and dropped after.

const (
	frameClassMinShift = 16 // the smallest class: 64 KiB
	frameClassMaxShift = 26 // the largest: 64 MiB, the default frame bound
	frameClasses       = 2*(frameClassMaxShift-frameClassMinShift) + 1
)

var framePools [frameClasses]sync.Pool // of *[]byte, cap frameClassSize(i)

// frameClass returns the class of a buffer for n bytes and its size, or
// -1 when n is larger than every class.
func frameClass(n int) (int, int) {
	if n <= 1<<frameClassMinShift {
		return 0, 1 << frameClassMinShift
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	if k > frameClassMaxShift {
		return -1, n
	}
	if half := 3 << (k - 2); n <= half {
		return 2*(k-frameClassMinShift) - 1, half
	}
	return 2 * (k - frameClassMinShift), 1 << k
}

// getFrameBuf returns a buffer of n bytes, pooled when one is free.
func getFrameBuf(n int) []byte {
	i, size := frameClass(n)
	if i < 0 {
		return make([]byte, n)
	}
	if bp, _ := framePools[i].Get().(*[]byte); bp != nil {
		return (*bp)[:n]
	}
	return make([]byte, n, size)
}

// putFrameBuf gives back a buffer from getFrameBuf; nothing may refer to
// it afterwards.
func putFrameBuf(b []byte) {
	i, size := frameClass(cap(b))
	if i < 0 || size != cap(b) {
		return
	}
	b = b[:0]
	framePools[i].Put(&b)
}
