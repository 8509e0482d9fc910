package fetchcache

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// TestReadaheadFitsScan: more sequential readers than the scan segment
// holds at the configured readahead (a consumer replaying many partitions)
// share it: each reader's window shrinks so the prefetched chunks of all of
// them fit, and no chunk readahead fetched is pushed out before its reader
// gets to it and fetched a second time.
func TestReadaheadFitsScan(t *testing.T) {
	// Chunks several index intervals long, as they are in use: a read
	// starting from an index entry then seldom starts in the chunk before.
	const chunk = 16 << 10
	const readers = 6
	const scanChunks = 24 // room for 4 readers at Readahead 4: (4+2) chunks each
	mem, gets := countGets(objstore.NewMemBucket())
	segs := make([]*testSeg, readers)
	recs := make([]catalog.Segment, readers)
	var total int64
	for i := range readers {
		segs[i] = buildSegment(t, 0, 32*chunk, uint64(70+i))
		recs[i] = put(t, mem, segKey(fmt.Sprintf("r%d", i), 0), segs[i], true)
		total += int64(len(segs[i].log))
	}
	// A main segment of one chunk: what the scan segment loses is fetched
	// again, not found in main.
	c := newCache(t, mem, Options{ChunkSize: chunk, Readahead: 4, ScanBytes: scanChunks * chunk,
		IndexBytes: 64 << 10, MaxBytes: (scanChunks+1)*chunk + 64<<10})

	// One consumer fetching from every partition in turn.
	offs := make([]int64, readers)
	got := make([][]byte, readers)
	for more := true; more; {
		more = false
		for i, rec := range recs {
			if offs[i] >= rec.EndOffset {
				continue
			}
			more = true
			b, err := readJoined(c, context.Background(), rec, offs[i], 6000)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = append(got[i], b...)
			offs[i] = lastNext(t, b)
		}
	}
	var fetched int64
	for i, rec := range recs {
		if !bytes.Equal(got[i], segs[i].log) {
			t.Fatalf("reader %d read wrong bytes", i)
		}
		fetched += gets.bytesOf(rec.ObjectKey)
	}
	st := c.Stats()
	if st.ReadaheadWasted != 0 {
		t.Errorf("%d prefetched chunks left the scan segment unread", st.ReadaheadWasted)
	}
	if fetched != total {
		t.Errorf("%d readers of %d bytes fetched %d bytes (%.2fx): chunks fetched again", readers, total, fetched, float64(fetched)/float64(total))
	}
	t.Logf("fetched/read %.3f; readahead %d gets, %d hits, %d wasted, %d skipped; scan evictions %d",
		float64(fetched)/float64(total), st.ReadaheadGets, st.ReadaheadHits, st.ReadaheadWasted, st.ReadaheadSkipped, st.ScanEvictions)
}
