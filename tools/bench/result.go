package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"
)

// mib is OMB's "MB" in MB/s: 2^20 bytes of message payload.
const mib = 1 << 20

// Result is a run's outcome, as written to the JSON result file. Rates
// cover the measured phase only; latencies cover the messages published in
// it (including acknowledgements and deliveries that arrived while the
// consumers drained after it).
type Result struct {
	Tool     string    `json:"tool"`
	Driver   string    `json:"driver"`
	Workload Workload  `json:"workload"`
	Topics   []string  `json:"topics"`
	Start    time.Time `json:"start"`
	// MeasuredSeconds is the length of the measured phase.
	MeasuredSeconds float64 `json:"measured_seconds"`
	// Interrupted: the run was stopped before its duration was over.
	Interrupted bool `json:"interrupted,omitempty"`

	Publish Throughput `json:"publish"`
	Consume Throughput `json:"consume"`
	// Backlog is published-but-not-consumed messages (times subscriptions)
	// at the end of the measured phase, and after draining.
	Backlog         int64 `json:"backlog"`
	BacklogAfterRun int64 `json:"backlog_after_drain"`

	// BacklogDrain is a backlog run's outcome (Config.BacklogBytes): its
	// measured phase is the drain.
	BacklogDrain *BacklogDrain `json:"backlog_drain,omitempty"`
	// Sustainable is the search's outcome, in a --sustainable run: the
	// run was measured at its Rate.
	Sustainable *Sustainable `json:"sustainable,omitempty"`
	// Requests is the clients' traffic in the measured phase.
	Requests Requests `json:"requests"`

	PublishLatency Latency `json:"publish_latency_ms"`
	// PublishDelay is how late messages left against the rate schedule
	// (0 when the rate is unlimited): large values mean the producers
	// could not keep the target rate.
	PublishDelay    Latency `json:"publish_delay_ms"`
	EndToEndLatency Latency `json:"end_to_end_latency_ms"`
	// ProduceRoundTrip is each produce request's time on the wire and in
	// the broker, write start to response read: the broker's share of
	// PublishLatency.
	ProduceRoundTrip Latency `json:"produce_round_trip_ms"`

	Broker  *ProcStats    `json:"broker,omitempty"`
	Client  *ProcStats    `json:"client,omitempty"`
	Machine *MachineStats `json:"machine,omitempty"`

	Intervals []Interval `json:"intervals"`
}

// Workload is the Config as recorded in a result, durations in
// milliseconds.
type Workload struct {
	Config
	DurationMs int64   `json:"duration_ms"`
	WarmupMs   int64   `json:"warmup_ms"`
	LingerMs   float64 `json:"linger_ms"`
}

func workloadOf(c Config) Workload {
	return Workload{
		Config:     c,
		DurationMs: c.Duration.Milliseconds(),
		WarmupMs:   c.Warmup.Milliseconds(),
		LingerMs:   float64(c.Linger) / float64(time.Millisecond),
	}
}

// Throughput counts messages in the measured phase.
type Throughput struct {
	Messages int64   `json:"messages"`
	Bytes    int64   `json:"bytes"`
	RateMsgs float64 `json:"rate_msg_s"`
	RateMB   float64 `json:"rate_mb_s"` // MB = 2^20 bytes, as OMB reports
	Errors   int64   `json:"errors"`
}

func throughput(msgs, bytes, errs int64, seconds float64) Throughput {
	t := Throughput{Messages: msgs, Bytes: bytes, Errors: errs}
	if seconds > 0 {
		t.RateMsgs = float64(msgs) / seconds
		t.RateMB = float64(bytes) / mib / seconds
	}
	return t
}

// Sustainable is the outcome of a sustainable-rate search (sustain.go).
type Sustainable struct {
	Rate   float64 `json:"rate"`
	Trials []Trial `json:"trials"`
	// Held: through the measured phase the producers sent at least 97% of
	// the rate, the consumers received at least 99% of that, and the backlog
	// at its end was under the search's limit. A trial is a few seconds; a
	// rate that passed one may still not hold for the whole run.
	Held bool `json:"held"`
}

// BacklogDrain is how a backlog run went.
type BacklogDrain struct {
	// Bytes is the payload published before the consumers started: the
	// backlog asked for, and what the producers had in flight when it was
	// reached.
	Bytes       int64   `json:"bytes"`
	FillSeconds float64 `json:"fill_seconds"`
	// DrainSeconds is from the consumers being ready to the backlog being
	// read, when Drained.
	DrainSeconds float64 `json:"drain_seconds,omitempty"`
	Drained      bool    `json:"drained"`
}

// Interval is one progress line's figures.
type Interval struct {
	T      float64 `json:"t"` // seconds since the producers started
	Warmup bool    `json:"warmup,omitempty"`
	// Search marks a sustainable-rate search's intervals (Warmup too: not
	// measured).
	Search bool `json:"search,omitempty"`
	// Fill marks a backlog run's intervals before its consumers start
	// (Warmup too).
	Fill bool `json:"fill,omitempty"`
	// TargetRate is the rate the producers were held to in the interval:
	// the configured one, or the sustainable-rate search's; 0 for none.
	TargetRate    float64 `json:"target_rate,omitempty"`
	PublishRate   float64 `json:"publish_rate"`
	PublishMB     float64 `json:"publish_mb_s"`
	ConsumeRate   float64 `json:"consume_rate"`
	ConsumeMB     float64 `json:"consume_mb_s"`
	Backlog       int64   `json:"backlog"`
	PublishP99Ms  float64 `json:"publish_p99_ms"`
	EndToEndP99Ms float64 `json:"e2e_p99_ms"`
	Errors        int64   `json:"errors,omitempty"`
	BrokerCPU     float64 `json:"broker_cpu_percent,omitempty"`
	BrokerRSS     int64   `json:"broker_rss_bytes,omitempty"`
}

// line is the progress line for an interval.
func (iv Interval) line(showBroker bool) string {
	phase := "     "
	switch {
	case iv.Search:
		phase = "srch "
	case iv.Fill:
		phase = "fill "
	case iv.Warmup:
		phase = "warm "
	}
	s := fmt.Sprintf("%7.1fs %s pub %8.0f msg/s %7.2f MB/s p99 %7.2f ms | cons %8.0f msg/s %7.2f MB/s e2e p99 %7.2f ms | backlog %7d",
		iv.T, phase, iv.PublishRate, iv.PublishMB, iv.PublishP99Ms, iv.ConsumeRate, iv.ConsumeMB, iv.EndToEndP99Ms, iv.Backlog)
	if iv.Errors > 0 {
		s += fmt.Sprintf(" | errors %d", iv.Errors)
	}
	if iv.TargetRate > 0 {
		s += fmt.Sprintf(" | target %8.0f msg/s", iv.TargetRate)
	}
	if showBroker {
		s += fmt.Sprintf(" | broker cpu %5.1f%% rss %5.0f MiB", iv.BrokerCPU, float64(iv.BrokerRSS)/mib)
	}
	return s
}

// WriteJSON writes r to path (through a temporary file, so a reader never
// sees half a result).
func (r *Result) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".bench-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadResult reads a result file.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteSummary prints the closing table.
func (r *Result) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "measured\t%.1f s\t\n", r.MeasuredSeconds)
	fmt.Fprintf(tw, "publish\t%.0f msg/s\t%.2f MB/s\t%d msgs\t%d errors\t\n",
		r.Publish.RateMsgs, r.Publish.RateMB, r.Publish.Messages, r.Publish.Errors)
	fmt.Fprintf(tw, "consume\t%.0f msg/s\t%.2f MB/s\t%d msgs\t%d errors\t\n",
		r.Consume.RateMsgs, r.Consume.RateMB, r.Consume.Messages, r.Consume.Errors)
	if sr := r.Sustainable; sr != nil {
		held := "held through the measured phase"
		if !sr.Held {
			held = "NOT held through the measured phase: consumers fell behind or producers fell short"
		}
		fmt.Fprintf(tw, "sustainable rate\t%.0f msg/s\t%d trials\t%s\t\n", sr.Rate, len(sr.Trials), held)
	}
	if b := r.BacklogDrain; b != nil {
		drain := "NOT drained in the measured phase"
		if b.Drained {
			drain = fmt.Sprintf("drained in %.2f s", b.DrainSeconds)
		}
		fmt.Fprintf(tw, "backlog drain\t%d B written in %.1f s\t%s\t\n", b.Bytes, b.FillSeconds, drain)
	}
	fmt.Fprintf(tw, "backlog\t%d at end\t%d after drain\t\n", r.Backlog, r.BacklogAfterRun)
	q := r.Requests
	fmt.Fprintf(tw, "produce requests\t%.0f /s\t%.1f msgs\t%.1f KiB each\t\n", q.ProduceRate, q.MsgsPerProduce, q.ProduceKiB)
	fmt.Fprintf(tw, "fetch responses\t%.0f /s\t%.1f msgs\t%.1f KiB each\t\n", q.FetchRate, q.MsgsPerFetch, q.FetchKiB)
	fmt.Fprintln(tw, "latency (ms)\tp50\tp95\tp99\tp99.9\tmax\tmean\tcount\t")
	for _, l := range []struct {
		name string
		l    Latency
	}{{"publish", r.PublishLatency}, {"publish delay", r.PublishDelay}, {"end-to-end", r.EndToEndLatency}, {"produce round trip", r.ProduceRoundTrip}} {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t\n",
			l.name, l.l.P50, l.l.P95, l.l.P99, l.l.P999, l.l.Max, l.l.Mean, l.l.Count)
	}
	for _, p := range []struct {
		name string
		s    *ProcStats
	}{{"broker", r.Broker}, {"bench", r.Client}} {
		if p.s != nil {
			fmt.Fprintf(tw, "%s pid %d\tcpu avg %.1f%%\tmax %.1f%%\trss peak %.1f MiB\tavg %.1f MiB\t\n",
				p.name, p.s.PID, p.s.CPUAvgPercent, p.s.CPUMaxPercent, float64(p.s.RSSPeakBytes)/mib, float64(p.s.RSSAvgBytes)/mib)
		}
	}
	if m := r.Machine; m != nil {
		pressure := "n/a"
		if m.CPUPressurePercent >= 0 {
			pressure = fmt.Sprintf("%.1f%%", m.CPUPressurePercent)
		}
		fmt.Fprintf(tw, "machine %d cores\tcpu busy %.1f%%\tothers %.1f%%\tcpu pressure %s\t\n",
			m.Cores, m.CPUBusyPercent, m.OtherCPUPercent, pressure)
	}
	return tw.Flush()
}
