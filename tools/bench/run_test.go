package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// The Run tests use kfake, franz-go's in-memory Kafka, as the broker: it
// checks the bench end to end (topics, groups, produce, consume, result)
// without a real one. Figures against real brokers come from
// deploy/bench/compare.sh.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func fakeCluster(t *testing.T, opts ...kfake.Opt) []string {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func listTopics(t *testing.T, brokers []string) kadm.TopicDetails {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := kadm.NewClient(cl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func shortConfig(brokers []string) Config {
	cfg := DefaultConfig()
	cfg.Brokers = brokers
	cfg.Partitions = 4
	cfg.Producers = 2
	cfg.Consumers = 2
	cfg.MessageSize = 256
	cfg.Acks = "1"
	cfg.Warmup = 500 * time.Millisecond
	cfg.Duration = time.Second
	cfg.Progress = 250 * time.Millisecond
	cfg.Drain = 5 * time.Second
	return cfg
}

func TestRunGroupsAtFixedRate(t *testing.T) {
	brokers := fakeCluster(t)
	cfg := shortConfig(brokers)
	cfg.Rate = 2000
	var progress bytes.Buffer
	res, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	out := progress.String()
	t.Log(out)
	// The pacer's precision is the pacer tests' job; this checks that the
	// run applies the rate. A pacer that fell behind during the warmup
	// catches up in the measured second, up to the warmup's share again
	// (1.5 s of schedule in 1 s), and a loaded machine slows it: an unpaced
	// run sends tens of thousands a second here.
	if r := res.Publish.RateMsgs; r < 1000 || r > 3500 {
		t.Errorf("publish rate %.0f msg/s, want the 2000 asked for (1000 to 3500 on a loaded machine)", r)
	}
	if res.Publish.Errors != 0 || res.Consume.Errors != 0 {
		t.Errorf("errors: publish %d consume %d", res.Publish.Errors, res.Consume.Errors)
	}
	if res.BacklogAfterRun != 0 {
		t.Errorf("backlog after drain %d", res.BacklogAfterRun)
	}
	if res.PublishLatency.Count == 0 || res.EndToEndLatency.Count == 0 || res.PublishDelay.Count == 0 {
		t.Errorf("latencies missing: %+v %+v %+v", res.PublishLatency, res.EndToEndLatency, res.PublishDelay)
	}
	if l := res.EndToEndLatency; !(l.P50 > 0 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("end-to-end percentiles out of order: %+v", l)
	}
	// Every produce request carries at least one message, and its
	// messages' bytes; consumers read what was published through fetches.
	if q := res.Requests; q.ProduceRate <= 0 || q.MsgsPerProduce < 1 || q.ProduceKiB*1024 < q.MsgsPerProduce*float64(cfg.MessageSize) || q.FetchRate <= 0 || q.MsgsPerFetch <= 0 || q.FetchKiB <= 0 {
		t.Errorf("request counts implausible: %+v", q)
	}
	// Each measured produce request was timed, and a round trip is part
	// of its messages' publish latency, so it cannot be the longer.
	if rt := res.ProduceRoundTrip; rt.Count == 0 || float64(rt.Count) > 1.5*res.Requests.ProduceRate*res.MeasuredSeconds+10 || rt.P50 <= 0 || rt.P50 > res.PublishLatency.Max {
		t.Errorf("produce round trip %+v against %.0f requests/s and publish latency %+v", rt, res.Requests.ProduceRate, res.PublishLatency)
	}
	// The measured phase is made of whole progress intervals, from the
	// first one that starts after the warmup; a late tick on a loaded
	// machine moves either edge by up to an interval.
	if lo, hi := (cfg.Duration - 2*cfg.Progress).Seconds(), (cfg.Duration + 2*cfg.Progress).Seconds(); res.MeasuredSeconds < lo || res.MeasuredSeconds > hi {
		t.Errorf("measured %.2f s, want %v give or take two progress intervals", res.MeasuredSeconds, cfg.Duration)
	}
	var warm, kept int
	for _, iv := range res.Intervals {
		if iv.Warmup {
			warm++
		} else {
			kept++
		}
	}
	if warm != 2 || kept != 4 {
		t.Errorf("%d warmup and %d measured intervals, want 2 and 4", warm, kept)
	}
	if res.Client == nil || res.Broker != nil {
		t.Errorf("process stats: client %+v broker %+v", res.Client, res.Broker)
	}
	if !strings.Contains(out, "consumer(s) in 1 group(s) ready") || !strings.Contains(out, "warm") {
		t.Errorf("progress output lacks readiness or warmup lines")
	}
	for _, name := range res.Topics {
		if _, ok := listTopics(t, brokers)[name]; ok {
			t.Errorf("topic %s created by the run was not deleted", name)
		}
	}
}

func TestRunAssignAtMaxRate(t *testing.T) {
	brokers := fakeCluster(t)
	cfg := shortConfig(brokers)
	cfg.ConsumeMode = ConsumeAssign
	cfg.Partitions = 2
	cfg.Consumers = 3 // one more than partitions: it idles
	cfg.Acks = "all"
	// Under the race detector on a busy machine, kfake's first fetches to
	// the assigned consumers took longer than a measured phase that
	// started at once (CI, once: 31,769 published, none consumed in it).
	cfg.Warmup = time.Second
	cfg.Duration = 1500 * time.Millisecond
	cfg.MessageSize = 64
	// kfake takes writes far faster than it serves reads: what is left
	// after a short drain is not the bench's to wait for.
	cfg.Drain = time.Second
	var progress bytes.Buffer
	res, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !res.Workload.Idempotent || res.Workload.Acks != "all" {
		t.Errorf("workload %+v", res.Workload)
	}
	if res.Publish.Messages == 0 || res.Consume.Messages == 0 || res.EndToEndLatency.Count == 0 {
		t.Errorf("published %d, consumed %d, e2e %+v", res.Publish.Messages, res.Consume.Messages, res.EndToEndLatency)
	}
	if res.PublishDelay.Count != 0 {
		t.Errorf("publish delay recorded without a rate: %+v", res.PublishDelay)
	}
}

// A backlog run writes the backlog first, then measures its consumers
// draining it alone (rate 0: no publishing while they read).
func TestRunBacklogDrain(t *testing.T) {
	brokers := fakeCluster(t)
	cfg := shortConfig(brokers)
	cfg.BacklogBytes = 2 << 20
	cfg.Duration = time.Minute // the drain ends the run long before
	var progress bytes.Buffer
	res, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	out := progress.String()
	b := res.BacklogDrain
	if b == nil || !b.Drained || b.Bytes < cfg.BacklogBytes || b.FillSeconds <= 0 || b.DrainSeconds <= 0 {
		t.Fatalf("backlog drain %+v\n%s", b, out)
	}
	wantMsgs := b.Bytes / int64(cfg.MessageSize)
	if res.Publish.Messages != 0 || res.Consume.Messages != wantMsgs {
		t.Errorf("measured %d published, %d consumed; want none published and the %d-message backlog consumed, once",
			res.Publish.Messages, res.Consume.Messages, wantMsgs)
	}
	// The drain is found between ticks: the measured phase is the drain,
	// not rounded up to a progress interval.
	if d := res.MeasuredSeconds - b.DrainSeconds; d < -0.01 || d > 0.01 {
		t.Errorf("measured %.3f s, drain %.3f s: want the same", res.MeasuredSeconds, b.DrainSeconds)
	}
	if res.BacklogAfterRun != 0 || res.Consume.Errors != 0 {
		t.Errorf("backlog after the run %d, consume errors %d", res.BacklogAfterRun, res.Consume.Errors)
	}
	if !strings.Contains(out, "fill ") || !strings.Contains(out, "backlog drained in") {
		t.Errorf("progress lacks fill or drain lines:\n%s", out)
	}

	cfg = shortConfig(fakeCluster(t, kfake.SeedTopics(2, "kept")))
	cfg.BacklogBytes = 1 << 20
	cfg.TopicNames, cfg.Topics = []string{"kept"}, 0
	if _, err := Run(context.Background(), cfg, &progress); !errors.Is(err, ErrConfig) {
		t.Errorf("backlog over an existing topic: %v, want ErrConfig", err)
	}
}

// A topic that existed before the run is used as it is and never deleted.
func TestRunKeepsExistingTopics(t *testing.T) {
	brokers := fakeCluster(t, kfake.SeedTopics(3, "kept"))
	cfg := shortConfig(brokers)
	cfg.TopicNames = []string{"kept"}
	cfg.Topics = 0
	cfg.CreateTopics = false
	cfg.Rate = 500
	cfg.Warmup = 0
	cfg.Duration = 500 * time.Millisecond
	var progress bytes.Buffer
	res, err := Run(context.Background(), cfg, &progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if res.Publish.Messages == 0 {
		t.Error("nothing published")
	}
	d := listTopics(t, brokers)
	if _, ok := d["kept"]; !ok {
		t.Fatal("pre-existing topic was deleted")
	}
	if n := len(d["kept"].Partitions); n != 3 {
		t.Fatalf("topic has %d partitions, want its own 3", n)
	}

	cfg.TopicNames = []string{"missing"}
	if _, err := Run(context.Background(), cfg, &progress); !errors.Is(err, ErrNotReady) {
		t.Fatalf("missing topic with creation off: %v, want ErrNotReady", err)
	}
}

// Cancelling during the measured phase reports what was measured.
func TestRunInterrupted(t *testing.T) {
	brokers := fakeCluster(t)
	cfg := shortConfig(brokers)
	cfg.Rate = 1000
	cfg.Warmup = 0
	cfg.Duration = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once two progress lines are out: the measured phase is on.
	progress := &cancelAfter{lines: 2, cancel: cancel}
	res, err := Run(ctx, cfg, progress)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if !res.Interrupted || res.MeasuredSeconds <= 0 || res.MeasuredSeconds > 5 || res.Publish.Messages == 0 {
		t.Fatalf("interrupted %v after %.1f s with %d messages", res.Interrupted, res.MeasuredSeconds, res.Publish.Messages)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"no brokers", func(c *Config) { c.Brokers = nil }},
		{"zero partitions", func(c *Config) { c.Partitions = 0 }},
		{"tiny message", func(c *Config) { c.MessageSize = 4 }},
		{"negative rate", func(c *Config) { c.Rate = -1 }},
		{"bad acks", func(c *Config) { c.Acks = "2" }},
		{"bad compression", func(c *Config) { c.Compression = "brotli" }},
		{"bad mode", func(c *Config) { c.ConsumeMode = "share" }},
		{"names disagree", func(c *Config) { c.Topics = 2; c.TopicNames = []string{"a"} }},
		{"duplicate names", func(c *Config) { c.Topics = 0; c.TopicNames = []string{"a", "a"} }},
		{"nothing to do", func(c *Config) { c.Producers = 0; c.Consumers = 0 }},
		{"zero duration", func(c *Config) { c.Duration = 0 }},
		{"negative backlog", func(c *Config) { c.BacklogBytes = -1 }},
		{"backlog, no consumers", func(c *Config) { c.BacklogBytes = 1; c.Consumers = 0 }},
		{"backlog and sustainable", func(c *Config) { c.BacklogBytes = 1; c.Sustainable = true }},
	} {
		cfg := DefaultConfig()
		tc.edit(&cfg)
		if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", tc.name, err)
		}
	}
	cfg := DefaultConfig()
	cfg.Acks = "1"
	if err := cfg.Validate(); err != nil || cfg.Idempotent {
		t.Fatalf("acks=1: %v, idempotent %v (want a plain producer)", err, cfg.Idempotent)
	}
	cfg = DefaultConfig()
	cfg.Topics = 0
	cfg.TopicNames = []string{"a", "b"}
	if err := cfg.Validate(); err != nil || cfg.Topics != 2 {
		t.Fatalf("topic names: %v, topics %d", err, cfg.Topics)
	}
}

// cancelAfter is a progress writer that cancels after some interval lines.
type cancelAfter struct {
	bytes.Buffer
	lines  int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("msg/s")) {
		if w.lines--; w.lines == 0 {
			w.cancel()
		}
	}
	return w.Buffer.Write(p)
}
