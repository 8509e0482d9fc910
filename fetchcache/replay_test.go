package fetchcache

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// TestReplayAgain replays four partitions of several bundles each, read
// together in rounds of a quarter chunk per partition as a Kafka consumer
// fetches them, through a cache far smaller than the data, and then replays
// them again. A reader that has finished an object leaves no stream behind:
// one left would anchor readahead top-ups at that object's end, which go on
// into the next objects and fetch their first chunks over and over while
// the second replay runs, many times the bytes it reads.
func TestReplayAgain(t *testing.T) {
	const chunk = 4096
	const partitions, segments = 4, 6
	mem := objstore.NewMemBucket()
	recs := make([][]catalog.Segment, partitions)
	var total int64
	for p := range partitions {
		base := int64(0)
		for i := range segments {
			s := buildSegment(t, base, 16*chunk, uint64(100*p+i))
			rec := putBundle(t, mem, fmt.Sprintf("prefix/replay/%d/%020d-seg1.seg", p, s.base), s)
			rec.Partition = int32(p)
			recs[p] = append(recs[p], rec)
			total += rec.ObjectSize
			base = s.end
		}
	}
	c := newCache(t, mem, Options{ChunkSize: chunk, MaxBytes: 64 * chunk, Readahead: 4})
	replay(t, c, recs, chunk/4)
	before := c.Stats()
	replay(t, c, recs, chunk/4)
	after := c.Stats()
	// Every object once, and the windows of the readers that the scan
	// segment could not hold (read while windows of four fill it).
	if got := after.BytesFetched - before.BytesFetched; got > 2*total {
		t.Errorf("second replay of %d bytes of objects fetched %d (stats %+v)", total, got, after)
	}
}

// replay reads recs[p] (each partition's segments in order) from their
// first offsets to their ends, maxBytes per partition in each round, all
// partitions of a round at once.
func replay(t *testing.T, c *Cache, recs [][]catalog.Segment, maxBytes int) {
	t.Helper()
	r := newReplayer(recs)
	for !t.Failed() {
		if r.round(t, c, maxBytes) == 0 {
			break
		}
	}
	waitFor(t, func() bool { return c.Stats().InflightGets == 0 }, "readahead to finish")
}

// replayer holds where each partition of a replay has got to.
type replayer struct {
	recs [][]catalog.Segment
	cur  []struct {
		seg int
		off int64
	}
}

func newReplayer(recs [][]catalog.Segment) *replayer {
	r := &replayer{recs: recs}
	r.cur = make([]struct {
		seg int
		off int64
	}, len(recs))
	return r
}

// round reads maxBytes from every unfinished partition at once, as a
// consumer's fetch of several partitions does, and returns the bytes read.
func (r *replayer) round(tb testing.TB, c *Cache, maxBytes int) int {
	var wg sync.WaitGroup
	got := make([]int, len(r.recs))
	for p := range r.recs {
		cur := &r.cur[p]
		if cur.seg == len(r.recs[p]) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := r.recs[p][cur.seg]
			out, err := readJoined(c, context.Background(), rec, max(cur.off, rec.BaseOffset), maxBytes)
			if err != nil {
				tb.Error(err)
				return
			}
			got[p] = len(out)
			if cur.off = lastNext(tb, out); cur.off >= rec.EndOffset {
				cur.seg++
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, g := range got {
		n += g
	}
	return n
}
