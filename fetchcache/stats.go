package fetchcache

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// counters are the cache's metrics, bumped on the hot path with atomics.
type counters struct {
	hits, misses, coalesced                            atomic.Int64
	indexHits, indexMisses, badIndexes                 atomic.Int64
	gets, bytesFetched, getErrors, retries             atomic.Int64
	readaheadGets, readaheadHits, readaheadSkipped     atomic.Int64
	readaheadWasted                                    atomic.Int64
	promotions, mainEvictions, mainRejections, corrupt atomic.Int64
	inflight                                           atomic.Int64
	cachedReads, cachedMisses                          atomic.Int64
	verifiedAhead, checkedAhead                        atomic.Int64
	mainUsed                                           atomic.Int64 // bytes Set in main and not gone
}

// Stats is a snapshot of the cache's counters (monotonic since New) and
// gauges.
type Stats struct {
	// Hits counts chunk lookups served from memory, Misses those that
	// waited for a GET; CoalescedWaits is the part of Misses (and of
	// IndexMisses) that joined a GET already in flight instead of sending
	// one.
	Hits, Misses, CoalescedWaits int64
	// IndexHits and IndexMisses count lookups of remote index objects;
	// BadIndexes counts index objects found unusable (malformed, too large,
	// or not matching their log), which are then ignored.
	IndexHits, IndexMisses, BadIndexes int64

	// Gets counts GET requests sent (chunks and index objects, retries
	// included); BytesFetched the bytes they returned. GetErrors counts
	// fetches that failed after their retries, Retries the retries.
	Gets, BytesFetched, GetErrors, Retries int64

	// ReadaheadGets counts chunks prefetched for sequential readers;
	// ReadaheadHits those a reader then found in memory; ReadaheadSkipped
	// prefetches dropped because every I/O slot was busy; ReadaheadWasted
	// prefetched chunks that left the scan segment before any read used
	// them (each one a GET for nothing, and a reader's miss later).
	ReadaheadGets, ReadaheadHits, ReadaheadSkipped, ReadaheadWasted int64

	// Promotions counts chunks sent to the main segment (ristretto may
	// still refuse them: MainRejections). Evictions counts chunks pushed
	// out of the main (MainEvictions) and scan (ScanEvictions) segments.
	Promotions, MainRejections              int64
	Evictions, MainEvictions, ScanEvictions int64

	// CorruptBatches counts batches that failed verification and were
	// never served.
	CorruptBatches int64

	// CachedReads counts ReadCached calls memory served; CachedMisses
	// those that would have waited for a GET (the caller then reads
	// with ReadRemote).
	CachedReads, CachedMisses int64

	// VerifiedAhead counts readahead chunks whose whole batches were
	// checked as they landed; CheckedAhead the batches a read then served
	// without a CRC pass of its own (verify.go).
	VerifiedAhead, CheckedAhead int64

	// Gauges: bytes held per segment and GETs in flight.
	MainBytes, ScanBytes, IndexBytes int64
	InflightGets                     int64
}

// HitRatio is Hits / (Hits + Misses) over chunk lookups, 0 before any.
func (s Stats) HitRatio() float64 {
	if n := s.Hits + s.Misses; n > 0 {
		return float64(s.Hits) / float64(n)
	}
	return 0
}

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	st := &c.st
	scanBytes, scanEvictions := c.scan.stats()
	idxBytes, _ := c.idx.stats()
	s := Stats{
		Hits: st.hits.Load(), Misses: st.misses.Load(), CoalescedWaits: st.coalesced.Load(),
		IndexHits: st.indexHits.Load(), IndexMisses: st.indexMisses.Load(), BadIndexes: st.badIndexes.Load(),
		Gets: st.gets.Load(), BytesFetched: st.bytesFetched.Load(), GetErrors: st.getErrors.Load(), Retries: st.retries.Load(),
		ReadaheadGets: st.readaheadGets.Load(), ReadaheadHits: st.readaheadHits.Load(), ReadaheadSkipped: st.readaheadSkipped.Load(),
		ReadaheadWasted: st.readaheadWasted.Load(),
		Promotions:      st.promotions.Load(), MainRejections: st.mainRejections.Load(),
		MainEvictions: st.mainEvictions.Load(), ScanEvictions: scanEvictions,
		CorruptBatches: st.corrupt.Load(),
		CachedReads:    st.cachedReads.Load(), CachedMisses: st.cachedMisses.Load(),
		VerifiedAhead: st.verifiedAhead.Load(), CheckedAhead: st.checkedAhead.Load(),
		ScanBytes: scanBytes, IndexBytes: idxBytes,
		InflightGets: st.inflight.Load(),
	}
	s.Evictions = s.MainEvictions + s.ScanEvictions
	if !c.closing.Load() {
		s.MainBytes = c.st.mainUsed.Load()
	}
	return s
}

// Collectors returns the Prometheus collectors of the cache, for tools/ to
// register. Metric names start with aerostream_fetchcache_.
func (c *Cache) Collectors() []prometheus.Collector {
	return []prometheus.Collector{newCollector(c)}
}

// collector exposes Stats as Prometheus metrics, reading the snapshot at
// scrape time so the read path pays nothing for it.
type collector struct {
	c *Cache

	lookups, gets, bytes, getErrors, retries, coalesced *prometheus.Desc
	readahead, promotions, rejections, evictions        *prometheus.Desc
	corrupt, badIndexes, cached, capacity, inflight     *prometheus.Desc
	hitRatio, cachedReads, verifiedAhead                *prometheus.Desc
}

func newCollector(c *Cache) *collector {
	name := func(n string) string { return prometheus.BuildFQName("aerostream", "fetchcache", n) }
	return &collector{
		c: c,
		lookups: prometheus.NewDesc(name("lookups_total"),
			"Cache lookups by kind (chunk, index) and result (hit, miss).", []string{"kind", "result"}, nil),
		gets: prometheus.NewDesc(name("gets_total"),
			"GET requests sent to the bucket (chunks and index objects, retries included).", nil, nil),
		bytes: prometheus.NewDesc(name("fetched_bytes_total"),
			"Bytes returned by GET requests.", nil, nil),
		getErrors: prometheus.NewDesc(name("get_errors_total"),
			"Fetches that failed after their retries.", nil, nil),
		retries: prometheus.NewDesc(name("get_retries_total"),
			"GET retries after transient errors.", nil, nil),
		coalesced: prometheus.NewDesc(name("coalesced_waits_total"),
			"Misses that joined a GET already in flight instead of sending one.", nil, nil),
		readahead: prometheus.NewDesc(name("readahead_total"),
			"Readahead chunks by outcome: fetched, hit (later read from memory), skipped (no free I/O slot).", []string{"outcome"}, nil),
		promotions: prometheus.NewDesc(name("promotions_total"),
			"Chunks sent to the main segment.", nil, nil),
		rejections: prometheus.NewDesc(name("main_rejections_total"),
			"Chunks the main segment's TinyLFU admission refused.", nil, nil),
		evictions: prometheus.NewDesc(name("evictions_total"),
			"Chunks evicted, by segment (main, scan).", []string{"segment"}, nil),
		corrupt: prometheus.NewDesc(name("corrupt_batches_total"),
			"Batches that failed verification and were not served.", nil, nil),
		badIndexes: prometheus.NewDesc(name("bad_indexes_total"),
			"Remote index objects found unusable and ignored.", nil, nil),
		cached: prometheus.NewDesc(name("cached_bytes"),
			"Bytes held, by segment (main, scan, index).", []string{"segment"}, nil),
		capacity: prometheus.NewDesc(name("capacity_bytes"),
			"Byte budget, by segment (main, scan, index).", []string{"segment"}, nil),
		inflight: prometheus.NewDesc(name("inflight_gets"),
			"GET requests in flight.", nil, nil),
		cachedReads: prometheus.NewDesc(name("cached_reads_total"),
			"Reads tried from memory only, by result: served, or missed (read again waiting on the bucket).", []string{"result"}, nil),
		verifiedAhead: prometheus.NewDesc(name("verified_ahead_total"),
			"Readahead checks done as chunks landed, by what: chunk (checked on landing), batch (served without a CRC pass of its own).", []string{"what"}, nil),
		hitRatio: prometheus.NewDesc(name("hit_ratio"),
			"Chunk lookups served from memory over all chunk lookups since start.", nil, nil),
	}
}

func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{k.lookups, k.gets, k.bytes, k.getErrors, k.retries, k.coalesced,
		k.readahead, k.promotions, k.rejections, k.evictions, k.corrupt, k.badIndexes, k.cached,
		k.capacity, k.inflight, k.hitRatio, k.cachedReads, k.verifiedAhead} {
		ch <- d
	}
}

func (k *collector) Collect(ch chan<- prometheus.Metric) {
	s := k.c.Stats()
	o := &k.c.opts
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(k.lookups, s.Hits, "chunk", "hit")
	counter(k.lookups, s.Misses, "chunk", "miss")
	counter(k.lookups, s.IndexHits, "index", "hit")
	counter(k.lookups, s.IndexMisses, "index", "miss")
	counter(k.gets, s.Gets)
	counter(k.bytes, s.BytesFetched)
	counter(k.getErrors, s.GetErrors)
	counter(k.retries, s.Retries)
	counter(k.coalesced, s.CoalescedWaits)
	counter(k.readahead, s.ReadaheadGets, "fetched")
	counter(k.readahead, s.ReadaheadHits, "hit")
	counter(k.readahead, s.ReadaheadSkipped, "skipped")
	counter(k.promotions, s.Promotions)
	counter(k.rejections, s.MainRejections)
	counter(k.evictions, s.MainEvictions, "main")
	counter(k.evictions, s.ScanEvictions, "scan")
	counter(k.corrupt, s.CorruptBatches)
	counter(k.badIndexes, s.BadIndexes)
	gauge(k.cached, float64(s.MainBytes), "main")
	gauge(k.cached, float64(s.ScanBytes), "scan")
	gauge(k.cached, float64(s.IndexBytes), "index")
	gauge(k.capacity, float64(k.c.mainCap), "main")
	gauge(k.capacity, float64(o.ScanBytes), "scan")
	gauge(k.capacity, float64(o.IndexBytes), "index")
	gauge(k.inflight, float64(s.InflightGets))
	gauge(k.hitRatio, s.HitRatio())
	counter(k.cachedReads, s.CachedReads, "served")
	counter(k.cachedReads, s.CachedMisses, "missed")
	counter(k.verifiedAhead, s.VerifiedAhead, "chunk")
	counter(k.verifiedAhead, s.CheckedAhead, "batch")
}

// HeldBytes is the memory the cache holds on the Go heap: cached chunks and
// index objects, and the reserve's buffers not yet taken. tools/ keeps it
// out of the garbage collector's growth target (the daemon's GC tuner).
func (c *Cache) HeldBytes() int64 {
	s := c.Stats()
	return s.MainBytes + s.ScanBytes + s.IndexBytes + int64(c.spare.left())*c.chunkSize
}
