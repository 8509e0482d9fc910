package registry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// BenchmarkGetSchemaByID: GET /schemas/ids/{id} from 8 concurrent HTTP
// clients against a registry over serve's in-process controller; reports
// lookups/s and the p99 latency.
func BenchmarkGetSchemaByID(b *testing.B) {
	c := openVoter(b)
	url := serveRegistry(b, c, 0)
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	const schemas = 100
	for i := range schemas {
		s := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"a","type":"int"}]}`, i)
		if _, err := cl.RegisterSchema(ctx, fmt.Sprintf("s%d-value", i), sr.Schema{Schema: s}, -1, -1); err != nil {
			b.Fatal(err)
		}
	}
	const clients = 8
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				t0 := time.Now()
				resp, err := hc.Get(fmt.Sprintf("%s/schemas/ids/%d", url, 1+n%schemas))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "lookups/s")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchmarkProduceValidation: produce latency (acks=1, one record per
// request, one producer) to a topic with confluent.value.schema.validation
// against one without, interleaved so both see the same machine; reports
// each p99 and their ratio. It runs a real serve, so it is gated like the
// client tests: REGISTRY_CLIENT_TESTS=1 (AEROSTREAM_BIN to skip the build).
func BenchmarkProduceValidation(b *testing.B) {
	if os.Getenv("REGISTRY_CLIENT_TESTS") == "" {
		b.Skip("runs a real serve: set REGISTRY_CLIENT_TESTS=1")
	}
	s := startServe(b)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs("http://" + s.registry))
	if err != nil {
		b.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.kafka), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer kc.Close()
	adm := kadm.NewClient(kc)
	on := "true"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"confluent.value.schema.validation": &on}, "valid"); err != nil {
		b.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "plain"); err != nil {
		b.Fatal(err)
	}
	id, err := cl.RegisterSchema(ctx, "valid-value", sr.Schema{Schema: `"string"`}, -1, -1)
	if err != nil {
		b.Fatal(err)
	}
	value := append([]byte{0, 0, 0, 0, byte(id)}, make([]byte, 100)...)
	var lat [2][]time.Duration
	produce := func(i int, topic string) {
		t0 := time.Now()
		if err := kc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		lat[i] = append(lat[i], time.Since(t0))
	}
	for range 200 { // warm both paths
		produce(0, "plain")
		produce(1, "valid")
	}
	lat = [2][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		produce(0, "plain")
		produce(1, "valid")
	}
	b.StopTimer()
	p99 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)*99/100].Microseconds())
	}
	off, onP := p99(lat[0]), p99(lat[1])
	b.ReportMetric(off, "p99-off-µs")
	b.ReportMetric(onP, "p99-on-µs")
	b.ReportMetric(onP/off, "on/off")
}
