package kafka

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestMetrics times each request in the gateway, from the parsed frame to
// the built response (Kafka's RequestMetrics, without the network queues):
// it is what separates the broker's share of a client's latency from the
// client's own. The observers are looked up once per key so that a request
// costs two clock reads and one histogram update, no label hashing.
type requestMetrics struct {
	vec   *prometheus.HistogramVec
	byKey map[int16]prometheus.Observer
}

func newRequestMetrics() *requestMetrics {
	m := &requestMetrics{
		vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "aerostream_kafka_request_duration_seconds",
			Help: "Time the Kafka gateway spent on a request, from the parsed frame to the built response, by API.",
			// 25 µs to ~3.3 s: an in-process produce is tens of µs, a
			// long-polling fetch up to its max wait.
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 18),
		}, []string{"api"}),
		byKey: make(map[int16]prometheus.Observer, len(apiKeys)),
	}
	for key := range apiKeys {
		name := kmsg.NameForKey(key)
		if name == "" {
			name = strconv.Itoa(int(key))
		}
		m.byKey[key] = m.vec.WithLabelValues(name)
	}
	return m
}

func (m *requestMetrics) observe(key int16, start time.Time) {
	if o := m.byKey[key]; o != nil {
		o.Observe(time.Since(start).Seconds())
	}
}

// Collectors returns the gateway's Prometheus collectors, for the admin
// listener's registry.
func (g *Gateway) Collectors() []prometheus.Collector {
	return []prometheus.Collector{g.metrics.vec}
}
