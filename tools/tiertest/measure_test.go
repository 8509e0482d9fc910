//go:build measure

package tiertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMeasureTiered prints the figures of the tiered storage issue, all in
// one run against MinIO on loopback:
//   - cold fetch throughput through the Kafka gateway (a franz-go consumer
//     from offset 0, every segment only in the bucket, cache cold) against a
//     plain sequential GET of the same objects from the same MinIO;
//   - the same consumer again with the cache warm, and the hit ratio;
//   - produce p99 at a fixed rate with tiering on (uploads running all the
//     time) against the same load with tiering off.
//
// make measure-tiered runs it. With AEROSTREAM_MEASURE_PPROF set to a
// folder, it also saves CPU profiles of the node under test there: the cold
// pass (cold.pprof) and the produce run with tiering on (produce.pprof).
//
// A profile costs the node a few percent of CPU, so figures from a
// profiled run are slightly pessimistic.
func TestMeasureTiered(t *testing.T) {
	mc := minioAdmin(t)
	p := s3Provider(t, "")
	var prefix string
	for i, a := range p.args {
		if a == "--tiered_storage.s3.prefix" {
			prefix = p.args[i+1]
		}
	}
	const total = 1 << 30
	const segment = 16 << 20
	n := newNode(t, t.TempDir(), append(p.args, "--tiered_storage.cache_bytes", strconv.Itoa(2<<30)), p.env)
	n.start()
	const topic = "measure"
	createTopic(t, n.kafka, topic, 4, map[string]*string{"segment.bytes": ptr(strconv.Itoa(segment)),
		"local.retention.bytes": ptr("1")})
	want := produce(t, n.kafka, topic, 4, total, 16<<10)
	// Seal the active segments too, so every byte is read from the bucket.
	if out, err := n.tier("offload", "--now"); err != nil {
		t.Fatalf("offload: %v %s", err, out)
	}
	segs := n.waitTiered(topic, 1, 5*time.Minute)
	var remoteBytes int64
	var keys []string
	for _, s := range segs {
		if s.State == "remote" {
			remoteBytes += s.Bytes
			keys = append(keys, prefix+"/"+s.ObjectKey)
		}
	}

	// Plain read of the same objects from the same MinIO, one object after
	// the other, as a single reader.
	start := time.Now()
	var plainBytes int64
	for _, k := range keys {
		obj, err := mc.GetObject(context.Background(), testBucket, k, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nr, err := io.Copy(io.Discard, obj)
		obj.Close()
		if err != nil {
			t.Fatal(err)
		}
		plainBytes += nr
	}
	plain := float64(plainBytes) / (1 << 20) / time.Since(start).Seconds()

	stopProfile := profileNode(t, n, "cold.pprof", 2*time.Second)
	start = time.Now()
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, 10*time.Minute))
	cold := float64(remoteBytes) / (1 << 20) / time.Since(start).Seconds()
	hitCold := n.metric("aerostream_fetchcache_hit_ratio")
	stopProfile()

	start = time.Now()
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, 10*time.Minute))
	warm := float64(remoteBytes) / (1 << 20) / time.Since(start).Seconds()
	hitWarm := n.metric("aerostream_fetchcache_hit_ratio")
	n.stop()

	t.Logf("cold fetch through the Kafka gateway: %.0f MiB/s; plain GET of the same %d objects (%d MiB): %.0f MiB/s; ratio %.2f",
		cold, len(keys), plainBytes>>20, plain, cold/plain)
	t.Logf("warm cache: %.0f MiB/s (%.2fx the plain GET); cache hit ratio after the cold pass %.3f, after the warm pass %.3f",
		warm, warm/plain, hitCold, hitWarm)

	// Produce p99 with tiering on and off, same load: 2,000 msg/s of 1 KiB,
	// small segments so uploads never stop.
	measure := func(args []string, env []string) []time.Duration {
		n := newNode(t, t.TempDir(), args, env)
		n.start()
		defer n.stop()
		createTopic(t, n.kafka, "p99", 4, map[string]*string{"segment.bytes": ptr(strconv.Itoa(1 << 20)),
			"local.retention.bytes": ptr(strconv.Itoa(1 << 20))})
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // background load that keeps segments rolling
			defer close(done)
			cl, _ := kgo.NewClient(kgo.SeedBrokers(n.kafka), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
			defer cl.Close()
			v := make([]byte, 64<<10)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = cl.ProduceSync(context.Background(), &kgo.Record{Topic: "p99", Value: v}).FirstErr()
				time.Sleep(2 * time.Millisecond)
			}
		}()
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		latencies(t, cl, "p99", 2*time.Second, 500)
		if len(env) > 0 { // the tiering-on run
			defer profileNode(t, n, "produce.pprof", 15*time.Second)()
		}
		l := latencies(t, cl, "p99", 20*time.Second, 2000)
		close(stop)
		<-done
		return l
	}
	on := measure(p.args, p.env)
	off := measure([]string{"--tiered_storage.enabled=false"}, nil)
	t.Logf("produce at 2000 msg/s: tiering on p50 %v p99 %v; tiering off p50 %v p99 %v; p99 ratio %.2f",
		pct(on, 0.5), pct(on, 0.99), pct(off, 0.5), pct(off, 0.99), float64(pct(on, 0.99))/float64(pct(off, 0.99)))
}

// profileNode starts a CPU profile of n lasting d, saved under
// $AEROSTREAM_MEASURE_PPROF/name; the function returned waits for it. It
// does nothing without that variable.
func profileNode(t *testing.T, n *node, name string, d time.Duration) (wait func()) {
	dir := os.Getenv("AEROSTREAM_MEASURE_PPROF")
	if dir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := func() error {
			resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", n.http, int(d.Seconds())))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			f, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(f, resp.Body)
			return err
		}()
		if err != nil {
			t.Logf("profile %s: %v", name, err)
		}
	}()
	return func() { <-done }
}
