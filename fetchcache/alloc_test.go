package fetchcache

import (
	"testing"
)

// BenchmarkChunkAlloc: what a cold chunk's buffer costs before its bytes
// land, at the default chunk size. new is what fetchChunk and getSpan do
// once the reserve is spent: a fresh chunk from the heap, which the
// runtime zeroes (and the GC must later reclaim), then filled as a GET
// body would fill it. reuse fills one buffer over and over: the floor that
// recycling evicted chunks would reach, which the cache cannot do safely
// because responses keep slices of evicted chunks (reserve.go).
func BenchmarkChunkAlloc(b *testing.B) {
	src := make([]byte, DefaultChunkSize)
	for i := range src {
		src[i] = byte(i)
	}
	var sink []byte
	b.Run("new", func(b *testing.B) {
		b.SetBytes(DefaultChunkSize)
		b.ReportAllocs()
		for b.Loop() {
			buf := make([]byte, DefaultChunkSize)
			copy(buf, src)
			sink = buf
		}
	})
	b.Run("reuse", func(b *testing.B) {
		b.SetBytes(DefaultChunkSize)
		b.ReportAllocs()
		buf := make([]byte, DefaultChunkSize)
		for b.Loop() {
			copy(buf, src)
			sink = buf
		}
	})
	_ = sink
}
