package fetchcache

import (
	"strings"
	"testing"

	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCollectors(t *testing.T) {
	s := buildSegment(t, 0, 40<<10, 60)
	mem := objstore.NewMemBucket()
	rec := put(t, mem, segKey("metrics", 0), s, true)
	c := newCache(t, mem, Options{ChunkSize: 4096, MaxBytes: 1 << 20})
	consume(t, c, rec, 0, 1000)
	consume(t, c, rec, 0, 1000)

	reg := prometheus.NewPedanticRegistry()
	for _, col := range c.Collectors() {
		if err := reg.Register(col); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "," + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case m.GetCounter() != nil:
				got[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[name] = m.GetGauge().GetValue()
			}
		}
	}
	st := c.Stats()
	for name, want := range map[string]float64{
		"aerostream_fetchcache_lookups_total,kind=chunk,result=hit":  float64(st.Hits),
		"aerostream_fetchcache_lookups_total,kind=chunk,result=miss": float64(st.Misses),
		"aerostream_fetchcache_gets_total":                           float64(st.Gets),
		"aerostream_fetchcache_fetched_bytes_total":                  float64(st.BytesFetched),
		"aerostream_fetchcache_hit_ratio":                            st.HitRatio(),
		"aerostream_fetchcache_capacity_bytes,segment=scan":          float64(c.opts.ScanBytes),
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	if st.HitRatio() < 0.5 || st.Gets == 0 {
		t.Errorf("stats %+v", st)
	}
	for name := range got {
		if !strings.HasPrefix(name, "aerostream_fetchcache_") {
			t.Errorf("metric %s", name)
		}
	}
}
