package replica

import (
	"github.com/aerostream/aerostream/logstore"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's replication gauges, set by Run.
type metrics struct {
	leaders, followers, underReplicated prometheus.Gauge
	lag, maxLag                         prometheus.Gauge
	expands, shrinks                    prometheus.Counter
}

func newMetrics() *metrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "aerostream", Subsystem: "replica", Name: name, Help: help})
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "aerostream", Subsystem: "replica", Name: name, Help: help})
	}
	return &metrics{
		leaders:         g("leader_partitions", "Partitions this store leads."),
		followers:       g("follower_partitions", "Partitions this store follows."),
		underReplicated: g("under_replicated_partitions", "Partitions this store leads whose ISR is smaller than their replica set."),
		lag:             g("follower_lag_offsets", "Offsets the partitions this store follows are behind their leaders' high watermarks, summed."),
		maxLag:          g("follower_max_lag_offsets", "Offsets the furthest-behind partition this store follows is behind its leader's high watermark."),
		expands:         c("isr_expands_total", "ISR expansions this store proposed as a leader."),
		shrinks:         c("isr_shrinks_total", "ISR shrinks this store proposed as a leader."),
	}
}

// Collectors are the manager's metrics, for the store's registry.
func (m *Manager) Collectors() []prometheus.Collector {
	x := m.met
	return []prometheus.Collector{x.leaders, x.followers, x.underReplicated, x.lag, x.maxLag, x.expands, x.shrinks}
}

// updateMetrics sets the gauges from the partitions' state.
func (m *Manager) updateMetrics() {
	var leaders, followers, under int
	for _, p := range m.parts {
		if p.have == nil {
			continue
		}
		switch p.have.Role {
		case logstore.RoleLeader:
			leaders++
			if len(p.have.ISR) < len(p.have.Replicas) {
				under++
			}
		case logstore.RoleFollower:
			followers++
		}
	}
	var sum, maxLag int64
	for _, f := range m.fetchers {
		s, mx := f.lags()
		sum += s
		maxLag = max(maxLag, mx)
	}
	m.met.leaders.Set(float64(leaders))
	m.met.followers.Set(float64(followers))
	m.met.underReplicated.Set(float64(under))
	m.met.lag.Set(float64(sum))
	m.met.maxLag.Set(float64(maxLag))
}
