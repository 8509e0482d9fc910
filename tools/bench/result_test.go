package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleResult() *Result {
	cfg := DefaultConfig()
	cfg.Partitions, cfg.Producers, cfg.Consumers, cfg.Acks, cfg.Rate = 32, 4, 4, "1", 50_000
	return &Result{
		Tool: "aerostream bench", Driver: "franz-go",
		Workload:        workloadOf(cfg),
		Topics:          []string{"t-0"},
		Start:           time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC),
		MeasuredSeconds: 30,
		Publish:         throughput(1_500_000, 1_500_000*1024, 0, 30),
		Consume:         throughput(1_499_000, 1_499_000*1024, 1, 30),
		PublishLatency:  Latency{Count: 1_500_000, Mean: 2, P50: 1.5, P95: 3, P99: 5.25, P999: 9, Max: 20},
		EndToEndLatency: Latency{Count: 1_499_000, Mean: 3, P50: 2, P95: 4, P99: 6, P999: 11, Max: 25},
		Broker:          &ProcStats{PID: 42, CPUAvgPercent: 80.5, CPUMaxPercent: 99, RSSPeakBytes: 512 << 20, RSSAvgBytes: 500 << 20, Samples: 30},
		Intervals:       []Interval{{T: 1, Warmup: true, PublishRate: 50_000}, {T: 2, PublishRate: 49_999, PublishP99Ms: 5}},
	}
}

func TestResultJSON(t *testing.T) {
	r := sampleResult()
	path := filepath.Join(t.TempDir(), "result.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	// Durations are not in the Config's JSON; the Workload carries them
	// in milliseconds, which is what a reader gets back.
	want := *r
	want.Workload.Duration, want.Workload.Warmup, want.Workload.Drain, want.Workload.Linger, want.Workload.Progress = 0, 0, 0, 0, 0
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", *got, want)
	}
	if r.Publish.RateMsgs != 50_000 || r.Publish.RateMB != 50_000.0*1024/(1<<20) {
		t.Fatalf("publish throughput %+v", r.Publish)
	}

	// The names scripts read (deploy/bench/compare.sh) are part of the
	// format.
	raw, _ := os.ReadFile(path)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"publish.rate_msg_s", "publish.rate_mb_s", "consume.rate_msg_s",
		"publish_latency_ms.p50", "publish_latency_ms.p95", "publish_latency_ms.p99", "publish_latency_ms.p99_9", "publish_latency_ms.max",
		"end_to_end_latency_ms.p50", "end_to_end_latency_ms.p99", "end_to_end_latency_ms.p99_9",
		"broker.cpu_avg_percent", "broker.rss_peak_bytes",
		"workload.partitions_per_topic", "workload.target_rate", "workload.acks", "workload.duration_ms",
	} {
		var v any = m
		for _, k := range strings.Split(path, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("%s: not an object at %s", path, k)
			}
			v = obj[k]
		}
		if _, ok := v.(float64); !ok && v == nil {
			t.Errorf("result JSON lacks %s", path)
		}
	}
	if w := m["workload"].(map[string]any); w["duration_ms"].(float64) != 60_000 || w["acks"] != "1" {
		t.Errorf("workload %v", w)
	}
}

func TestResultSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"50000 msg/s", "48.83 MB/s", "p99.9", "5.250", "end-to-end", "broker pid 42", "cpu avg 80.5%", "rss peak 512.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestIntervalLine(t *testing.T) {
	iv := Interval{T: 3, Warmup: true, PublishRate: 50_000, PublishMB: 48.8, PublishP99Ms: 2.5, ConsumeRate: 49_000, EndToEndP99Ms: 4, Backlog: 7, BrokerCPU: 88, BrokerRSS: 300 << 20}
	line := iv.line(true)
	for _, want := range []string{"3.0s", "warm", "50000 msg/s", "p99    2.50 ms", "e2e p99    4.00 ms", "backlog       7", "cpu  88.0%", "300 MiB"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
	if strings.Contains(iv.line(false), "cpu") {
		t.Error("broker figures shown without a broker")
	}
}
