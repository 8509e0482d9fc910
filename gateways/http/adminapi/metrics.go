package adminapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The counters the throughput samples are computed from. tools/cli
// registers them on the node's registry (counting what clients produce
// and fetch through the node's backend); a node without them samples
// zeros.
const (
	MetricProduceBytes   = "aerostream_produce_bytes_total"
	MetricProduceRecords = "aerostream_produce_records_total"
	MetricFetchBytes     = "aerostream_fetch_bytes_total"
)

func (a *API) getIceberg(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.authorize(r, OpDescribe, Resource{Type: ResourceCluster}); err != nil {
		return nil, err
	}
	tables := []IcebergTable{}
	if a.opts.Iceberg != nil {
		ts, err := a.opts.Iceberg.Tables(r.Context())
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			ok, err := a.allowed(r, OpDescribe, Resource{ResourceTopic, t.Topic})
			if err != nil {
				return nil, err
			}
			if ok {
				tables = append(tables, t)
			}
		}
	}
	return map[string]any{"tables": tables}, nil
}

func (a *API) getThroughput(_ http.ResponseWriter, r *http.Request) (any, error) {
	if err := a.authorize(r, OpDescribe, Resource{Type: ResourceCluster}); err != nil {
		return nil, err
	}
	return map[string]any{"samples": a.samples.snapshot()}, nil
}

// Sample is one throughput sample: rates over the period before T.
type Sample struct {
	TMs                int64   `json:"t_ms"`
	ProduceBytesPerS   float64 `json:"produce_bytes_per_s"`
	ProduceRecordsPerS float64 `json:"produce_records_per_s"`
	FetchBytesPerS     float64 `json:"fetch_bytes_per_s"`
}

// sampler keeps the last samples in a ring.
type sampler struct {
	g    prometheus.Gatherer
	size int
	mu   struct {
		sync.Mutex
		ring []Sample // oldest first once full
		next int
		full bool
	}
}

func newSampler(g prometheus.Gatherer, size int) *sampler {
	s := &sampler{g: g, size: size}
	s.mu.ring = make([]Sample, size)
	return s
}

// totals are the counters at one instant.
type totals struct {
	at                                      time.Time
	produceBytes, produceRecords, fetchByte float64
}

func (s *sampler) gather() (totals, error) {
	t := totals{at: time.Now()}
	if s.g == nil {
		return t, nil
	}
	mfs, err := s.g.Gather()
	if err != nil {
		return t, err
	}
	for _, mf := range mfs {
		var dst *float64
		switch mf.GetName() {
		case MetricProduceBytes:
			dst = &t.produceBytes
		case MetricProduceRecords:
			dst = &t.produceRecords
		case MetricFetchBytes:
			dst = &t.fetchByte
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			*dst += m.GetCounter().GetValue()
		}
	}
	return t, nil
}

// run samples every period until ctx ends.
func (s *sampler) run(ctx context.Context, period time.Duration, log *slog.Logger) {
	prev, err := s.gather()
	if err != nil {
		log.Warn("sampling metrics", "err", err)
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur, err := s.gather()
		if err != nil {
			log.Warn("sampling metrics", "err", err)
			continue
		}
		s.add(prev, cur)
		prev = cur
	}
}

// add records the rates between two gathers.
func (s *sampler) add(prev, cur totals) {
	dt := cur.at.Sub(prev.at).Seconds()
	if dt <= 0 {
		return
	}
	// A counter that went down was reset (a re-registered collector): no
	// negative rates.
	rate := func(a, b float64) float64 { return max(b-a, 0) / dt }
	smp := Sample{TMs: cur.at.UnixMilli(),
		ProduceBytesPerS:   rate(prev.produceBytes, cur.produceBytes),
		ProduceRecordsPerS: rate(prev.produceRecords, cur.produceRecords),
		FetchBytesPerS:     rate(prev.fetchByte, cur.fetchByte)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.ring[s.mu.next] = smp
	s.mu.next = (s.mu.next + 1) % s.size
	if s.mu.next == 0 {
		s.mu.full = true
	}
}

func (s *sampler) snapshot() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Sample{}
	if s.mu.full {
		out = append(out, s.mu.ring[s.mu.next:]...)
	}
	return append(out, s.mu.ring[:s.mu.next]...)
}
