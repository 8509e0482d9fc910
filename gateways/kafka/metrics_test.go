package kafka

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRequestMetrics checks that requests are timed under their API's name.
func TestRequestMetrics(t *testing.T) {
	e := newTestEnv(t)
	reg := prometheus.NewRegistry()
	reg.MustRegister(e.gw.Collectors()...)
	cl := newClient(t, e.addr, kgo.DefaultProduceTopic("m"))
	createTopic(t, cl, "m", 1)
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "api" {
					counts[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	if counts["Produce"] != 3 {
		t.Errorf("Produce requests timed: %d, want 3 (all: %v)", counts["Produce"], counts)
	}
	if counts["Metadata"] == 0 || counts["ApiVersions"] == 0 {
		t.Errorf("Metadata/ApiVersions not timed: %v", counts)
	}
}
