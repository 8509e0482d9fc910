package tierd

import (
	"context"
	"strings"
	"time"

	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are tierd's Prometheus series. Object store traffic is counted by
// Observer (wrap the bucket with objstore.Instrumented(b, m)), per
// operation and per topic, which is what the provider bills. A nil *Metrics
// records nothing.
type Metrics struct {
	requests *prometheus.CounterVec   // op, topic
	errors   *prometheus.CounterVec   // op
	bytes    *prometheus.CounterVec   // direction (up, down), topic
	latency  *prometheus.HistogramVec // op
	retries  prometheus.Counter
	backlogG prometheus.Gauge
	uploads  *prometheus.CounterVec // topic
	upBytes  *prometheus.CounterVec // topic
	upTime   prometheus.Histogram
	deletes  *prometheus.CounterVec // topic
}

// NewMetrics registers tierd's series with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_objstore_requests_total",
			Help: "Object store requests by operation and topic."}, []string{"op", "topic"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_objstore_errors_total",
			Help: "Object store requests that failed, by operation."}, []string{"op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_objstore_bytes_total",
			Help: "Bytes moved to (up) and from (down) the object store, by topic."}, []string{"direction", "topic"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "aerostream_objstore_request_seconds",
			Help: "Object store request latency by operation.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}, []string{"op"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "aerostream_tier_retries_total",
			Help: "Object store operations retried after a transient error."}),
		backlogG: prometheus.NewGauge(prometheus.GaugeOpts{Name: "aerostream_tier_upload_backlog",
			Help: "Tier jobs (uploads, remote deletions) waiting in the queue."}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_tier_segments_uploaded_total",
			Help: "Segments uploaded and verified, by topic."}, []string{"topic"}),
		upBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_tier_uploaded_bytes_total",
			Help: "Bytes of segment files uploaded, by topic."}, []string{"topic"}),
		upTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "aerostream_tier_segment_upload_seconds",
			Help: "Time to stage, upload and verify one segment.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		deletes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "aerostream_tier_segments_deleted_total",
			Help: "Remote segments deleted by retention or topic deletion, by topic."}, []string{"topic"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.errors, m.bytes, m.latency, m.retries, m.backlogG, m.uploads, m.upBytes, m.upTime, m.deletes)
	}
	return m
}

var _ objstore.Observer = (*Metrics)(nil)

// Observe counts one object store operation.
func (m *Metrics) Observe(_ context.Context, ev objstore.Event) {
	if m == nil {
		return
	}
	topic := topicOf(ev.Key)
	m.requests.WithLabelValues(string(ev.Op), topic).Inc()
	m.latency.WithLabelValues(string(ev.Op)).Observe(ev.Duration.Seconds())
	if ev.Err != nil {
		m.errors.WithLabelValues(string(ev.Op)).Inc()
	}
	switch ev.Op {
	case objstore.OpPut, objstore.OpPutIfAbsent, objstore.OpMultipartComplete:
		m.bytes.WithLabelValues("up", topic).Add(float64(ev.Bytes))
	case objstore.OpGetRange:
		m.bytes.WithLabelValues("down", topic).Add(float64(ev.Bytes))
	}
}

// topicOf reads the topic from an object key (<topic>/<partition>/...).
func topicOf(key string) string {
	if i := strings.IndexByte(key, '/'); i > 0 {
		return key[:i]
	}
	return ""
}

func (m *Metrics) retry() {
	if m != nil {
		m.retries.Inc()
	}
}

func (m *Metrics) backlog(n int) {
	if m != nil {
		m.backlogG.Set(float64(n))
	}
}

func (m *Metrics) uploaded(topic string, bytes int64, took time.Duration) {
	if m != nil {
		m.uploads.WithLabelValues(topic).Inc()
		m.upBytes.WithLabelValues(topic).Add(float64(bytes))
		m.upTime.Observe(took.Seconds())
	}
}

func (m *Metrics) deleted(topic string) {
	if m != nil {
		m.deletes.WithLabelValues(topic).Inc()
	}
}
