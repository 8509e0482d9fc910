package cli

import (
	"github.com/aerostream/aerostream/logstore"
	"github.com/prometheus/client_golang/prometheus"
)

// cleanerCollectors exports the log cleaner's counters (logstore.CleanerStats).
// A partition whose cleaning stopped on a segment it could not read shows
// in aerostream_cleaner_failed_partitions until a restart.
func cleanerCollectors(st *logstore.Store) []prometheus.Collector {
	counter := func(name, help string, f func(s logstore.CleanerStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "aerostream_cleaner_" + name, Help: help},
			func() float64 { return f(st.CleanerStats()) })
	}
	return []prometheus.Collector{
		counter("cleanings_total", "partition cleanings that swapped cleaned segments in",
			func(s logstore.CleanerStats) float64 { return float64(s.Cleanings) }),
		counter("read_bytes_total", "bytes the log cleaner read",
			func(s logstore.CleanerStats) float64 { return float64(s.BytesRead) }),
		counter("written_bytes_total", "bytes the log cleaner wrote",
			func(s logstore.CleanerStats) float64 { return float64(s.BytesWritten) }),
		counter("removed_records_total", "records the log cleaner removed",
			func(s logstore.CleanerStats) float64 { return float64(s.RecordsRemoved) }),
		counter("throttled_seconds_total", "time the log cleaner waited for its I/O bound",
			func(s logstore.CleanerStats) float64 { return float64(s.ThrottledNanos) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "aerostream_cleaner_failed_partitions",
			Help: "partitions whose cleaning stopped on a segment that could not be read"},
			func() float64 { return float64(len(st.CleanerStats().Failed)) }),
	}
}
