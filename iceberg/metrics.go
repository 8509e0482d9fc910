package iceberg

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus series of the node's Iceberg topics.
type metrics struct {
	records, bytes, commits, failures, dlq, dropped, skipped *prometheus.CounterVec
}

func newMetrics() *metrics {
	cv := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "aerostream", Subsystem: "iceberg", Name: name, Help: help}, []string{"topic"})
	}
	return &metrics{
		records:  cv("translated_records_total", "records turned into table rows (committed or pending)"),
		bytes:    cv("translated_bytes_total", "key, value and header bytes of the records turned into rows"),
		commits:  cv("commits_total", "snapshots committed to topics' tables by this node"),
		failures: cv("commit_failures_total", "translation sessions that failed (catalog, bucket or conflict) and were retried from the table's offsets"),
		dlq:      cv("dlq_records_total", "undecodable records committed to <topic>~dlq tables"),
		dropped:  cv("dropped_records_total", "undecodable records dropped (iceberg.invalid_record_action=drop)"),
		skipped:  cv("skipped_records_total", "records deleted from the log (DeleteRecords) before they were translated"),
	}
}

// lagCollector reports each topic's lag from its status.
type lagCollector struct {
	m                *Manager
	records, seconds *prometheus.Desc
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.records; ch <- c.seconds }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.m.Status("") {
		ch <- prometheus.MustNewConstMetric(c.records, prometheus.GaugeValue, float64(s.LagRecords), s.Topic)
		ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.GaugeValue, s.LagSeconds, s.Topic)
	}
}

func (mt *metrics) collectors(m *Manager) []prometheus.Collector {
	return []prometheus.Collector{mt.records, mt.bytes, mt.commits, mt.failures, mt.dlq, mt.dropped, mt.skipped,
		&lagCollector{m: m,
			records: prometheus.NewDesc("aerostream_iceberg_lag_records", "records in the log (below the last stable offset) not yet in the topic's table", []string{"topic"}, nil),
			seconds: prometheus.NewDesc("aerostream_iceberg_lag_seconds", "age of the oldest record not yet in the topic's table", []string{"topic"}, nil),
		}}
}

func sortStatus(s []TopicStatus) {
	sort.Slice(s, func(i, j int) bool { return s[i].Topic < s[j].Topic })
}
