package bench

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// wireCounter counts, through kgo's hooks on every client of a run, the
// produce requests written and the fetch responses read. On a machine the
// client shares with the broker, these show what the broker's pace does to
// the client's own work: a broker that answers sooner gets more, smaller
// produce requests and fetch responses for the same messages, and the
// client pays per request.
//
// produceRTT is each produce request's round trip, from the start of its
// write to the end of its response's read: the broker's share of the
// publish latency, as near as the client can see it. The rest of a
// publish is the client's: the linger, its timers, and its scheduling.
type wireCounter struct {
	produceReqs, produceBytes atomic.Int64
	fetchResps, fetchBytes    atomic.Int64
	produceRTT                *Recorder
}

func newWireCounter() *wireCounter {
	return &wireCounter{produceRTT: NewRecorder()}
}

var (
	_ kgo.HookBrokerWrite = (*wireCounter)(nil)
	_ kgo.HookBrokerRead  = (*wireCounter)(nil)
	_ kgo.HookBrokerE2E   = (*wireCounter)(nil)
)

func (w *wireCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err == nil && key == int16(kmsg.Produce) {
		w.produceReqs.Add(1)
		w.produceBytes.Add(int64(n))
	}
}

func (w *wireCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if err == nil && key == int16(kmsg.Fetch) {
		w.fetchResps.Add(1)
		w.fetchBytes.Add(int64(n))
	}
}

func (w *wireCounter) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key == int16(kmsg.Produce) && e.Err() == nil {
		w.produceRTT.Record(e.DurationE2E())
	}
}

// Requests sums up the wire counts of a run's measured phase.
type Requests struct {
	ProduceRate float64 `json:"produce_requests_s"`
	// MsgsPerProduce is messages acknowledged per produce request.
	MsgsPerProduce float64 `json:"msgs_per_produce_request"`
	ProduceKiB     float64 `json:"produce_request_kib"`
	FetchRate      float64 `json:"fetch_responses_s"`
	MsgsPerFetch   float64 `json:"msgs_per_fetch_response"`
	FetchKiB       float64 `json:"fetch_response_kib"`
}

func requestsOf(c counts, seconds float64) Requests {
	var q Requests
	if seconds <= 0 {
		return q
	}
	q.ProduceRate = float64(c.produceReqs) / seconds
	q.FetchRate = float64(c.fetchResps) / seconds
	if c.produceReqs > 0 {
		q.MsgsPerProduce = float64(c.acked) / float64(c.produceReqs)
		q.ProduceKiB = float64(c.produceBytes) / 1024 / float64(c.produceReqs)
	}
	if c.fetchResps > 0 {
		q.MsgsPerFetch = float64(c.consumed) / float64(c.fetchResps)
		q.FetchKiB = float64(c.fetchBytes) / 1024 / float64(c.fetchResps)
	}
	return q
}
