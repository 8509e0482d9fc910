//go:build measure

package tiertest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMeasureTiered prints the figures of the tiered storage issue, all in
// one run against MinIO on loopback:
//   - cold fetch throughput through the Kafka gateway (from offset 0, every
//     segment only in the bucket, cache cold) against a single reader's
//     plain GETs of the same objects from the same MinIO (4 MiB range GETs,
//     the requests the cache makes, and whole objects). Read on a
//     restarted node each time: by plain Fetch requests that decode no
//     record, as the plain reader decodes nothing, in 3 rounds that
//     alternate with the range GETs (the ratio is their median), and once
//     by a franz-go consumer that decodes and checks every record;
//   - the franz-go consumer again with the cache warm, and the hit ratio;
//   - produce p99 at a fixed rate with tiering on (uploads running all the
//     time) against the same load with tiering off
//     (TestMeasureTieredProduce).
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
	var sizes []int64
	for _, s := range segs {
		if s.State == "remote" {
			remoteBytes += s.Bytes
			keys = append(keys, prefix+"/"+s.ObjectKey)
			sizes = append(sizes, s.Bytes)
		}
	}

	// Plain reads of the same objects from the same MinIO by a single
	// reader, one object after the other: range GETs of the cache's chunk
	// size (the "plain range-GET read": the requests the cache
	// makes, without the broker), and one GET of each object's whole log
	// (fewer requests, cheaper for MinIO).
	cpu := newCPUMeter(t, n)
	plainRead := func(rangeSize int64) (float64, int64) {
		start := time.Now()
		var read int64
		for i, k := range keys {
			size := sizes[i]
			step := rangeSize
			if step <= 0 {
				step = size
			}
			// Ranges of the log part only: a segment's object also
			// holds its indexes after the log (tierd/segobj), which the
			// cold pass does not read either.
			for off := int64(0); off < size; off += step {
				var opts minio.GetObjectOptions
				if err := opts.SetRange(off, min(off+step, size)-1); err != nil {
					t.Fatal(err)
				}
				obj, err := mc.GetObject(context.Background(), testBucket, k, opts)
				if err != nil {
					t.Fatal(err)
				}
				nr, err := io.Copy(io.Discard, obj)
				obj.Close()
				if err != nil {
					t.Fatal(err)
				}
				read += nr
			}
		}
		return float64(read) / (1 << 20) / time.Since(start).Seconds(), read
	}
	plainWhole, plainBytes := plainRead(0)
	cpuWhole := cpu.lap()
	if plainBytes != remoteBytes {
		t.Fatalf("whole-object reads: %d bytes, %d in the catalog", plainBytes, remoteBytes)
	}

	// The bytes-only cold pass against the range GETs, in alternating
	// rounds: each read of the GiB takes about a second, and one pair of
	// such short reads swung the ratio by 0.15 between runs with nothing
	// changed. Each cold pass runs on a restarted node, so its cache is
	// cold. It reads bytes only, as the plain reader does: Fetch requests
	// whose batches are walked by their headers, no record decoded.
	const coldRounds = 3
	var plain, coldRaw float64
	var cpuPlain, cpuColdRaw cpuUse
	var ratios []float64
	for r := 0; r < coldRounds; r++ {
		cpu = newCPUMeter(t, n)
		pr, rangeBytes := plainRead(4 << 20) // fetchcache.DefaultChunkSize
		cpuPlain = cpu.lap()
		if rangeBytes != remoteBytes {
			t.Fatalf("plain range reads: %d bytes, %d in the catalog", rangeBytes, remoteBytes)
		}
		n.stop()
		n.start()
		cpu = newCPUMeter(t, n)
		start := time.Now()
		rawConsume(t, n.kafka, topic, want, 10*time.Minute)
		cr := float64(remoteBytes) / (1 << 20) / time.Since(start).Seconds()
		cpuColdRaw = cpu.lap()
		t.Logf("round %d: plain 4 MiB range GETs %.0f MiB/s, cold fetch through the Kafka gateway (bytes only) %.0f MiB/s, ratio %.2f", r, pr, cr, cr/pr)
		ratios = append(ratios, cr/pr)
		plain += pr / coldRounds
		coldRaw += cr / coldRounds
	}
	slices.Sort(ratios)
	coldRatio := median(ratios)

	// Then the franz-go consumer, which decodes every record and checks
	// its digest, once more on a restarted node.
	n.stop()
	n.start()
	cpu = newCPUMeter(t, n)

	stopProfile := profileNode(t, n, "cold.pprof", 2*time.Second)
	start := time.Now()
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, 10*time.Minute))
	cold := float64(remoteBytes) / (1 << 20) / time.Since(start).Seconds()
	cpuCold := cpu.lap()
	hitCold := n.metric("aerostream_fetchcache_hit_ratio")
	stopProfile()

	start = time.Now()
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, 10*time.Minute))
	warm := float64(remoteBytes) / (1 << 20) / time.Since(start).Seconds()
	cpuWarm := cpu.lap()
	hitWarm := n.metric("aerostream_fetchcache_hit_ratio")
	n.stop()

	t.Logf("plain 4 MiB range GETs of the same %d objects (%d MiB): %.0f MiB/s (mean of %d rounds); whole-object GETs: %.0f MiB/s",
		len(keys), plainBytes>>20, plain, coldRounds, plainWhole)
	t.Logf("cold fetch through the Kafka gateway, bytes only (raw Fetch requests, batches not decoded): %.0f MiB/s (mean of %d rounds); ratio to the range GETs of the same round: median %.2f (%.2f-%.2f); %.2f to the whole-object GETs",
		coldRaw, coldRounds, coldRatio, ratios[0], ratios[len(ratios)-1], coldRaw/plainWhole)
	t.Logf("cold fetch through the Kafka gateway, franz-go consumer (every record decoded and digested): %.0f MiB/s, ratio %.2f to the range GETs, %.2f to the whole-object GETs",
		cold, cold/plain, cold/plainWhole)
	t.Logf("warm cache: %.0f MiB/s (%.2fx the range GETs, %.2fx the whole-object GETs); cache hit ratio after the cold pass %.3f, after the warm pass %.3f",
		warm, warm/plain, warm/plainWhole, hitCold, hitWarm)
	gib := float64(remoteBytes) / (1 << 30)
	t.Logf("CPU seconds per GiB read (2 cores shared): whole-object GETs %s; range GETs (last round) %s; cold pass, bytes only (last round) %s; cold pass, franz-go %s; warm pass %s",
		cpuWhole.per(gib, "reader"), cpuPlain.per(gib, "reader"), cpuColdRaw.per(gib, "client"), cpuCold.per(gib, "client"), cpuWarm.per(gib, "client"))
}

// TestMeasureTieredProduce prints produce p99 at a fixed rate with tiering
// to MinIO on (uploads, eviction and manifests running all the time)
// against the same load with tiering off. make measure-tiered runs it after
// TestMeasureTiered, in the same go test run. MinIO shares this machine's
// cores with the node and the client, which a bucket elsewhere would not.
//
// A control runs beside each MinIO mode: tiering off, while another
// process replays into the same MinIO the PUTs the node made in that
// round's MinIO mode (same sizes, same times; listed from the bucket). It
// shows what MinIO's work costs a broker that does no tiering at all, so
// the MinIO mode's figure can be read against both.
//
// The "cores apart" modes run MinIO and the control's replay on a CPU of
// their own, and the node, the probes and the load on the others
// (placement_test.go): the closest this machine comes to a bucket on
// other machines. Their tiering-off mode has the same placement, so their
// ratio is the node's own cost of tiering to MinIO, with one CPU fewer
// than the other modes give it (on this machine, one instead of two).
//
// The modes alternate for several rounds, each on a fresh node. Two
// figures are given for each comparison:
//   - pooled: the p99 over all rounds of one mode, against the p99 over all
//     rounds of the other;
//   - paired: the median over rounds of the ratio of the two modes' p99s in
//     the same round, which run back to back.
//
// The pooled figure is decided by the slowest 1% of all samples, and so by
// the noisiest rounds: this VM has stretches in which every mode's p99
// rises by half (in one run, 0.9 to 1.2 ms in every mode of one round,
// against 0.6 to 0.7 ms in the others), and the modes they fall on lose.
// The paired figure takes each round's ratio, both modes measured within
// a minute of each other, and its median is not moved by one noisy round;
// but the rounds' own ratios range from about 0.6 to 1.6, and in four
// runs the paired figure was no steadier than the pooled one. The pooled
// figure is the one read against the target. Each round also runs a
// second tiering-off node ("tiering off again"), whose figures against
// the first give this measure's own spread (0.88 to 1.11 in those runs):
// a tiering figure within it says nothing.
//
// Two probes take turns producing (probeNames): franz-go, and a bare
// connection that shows the broker's latency with the least client in
// it. For the MinIO rounds the test also reports how many of the slowest
// 1% of produces came around the end of a PUT: about half did, in
// windows that hold a fifth of the produces. That holds in the cores-apart
// rounds too, where the p99 is no worse than with tiering off, so it does
// not measure what a PUT costs. A likely reason: each PUT starts at a
// segment roll (tierd queues a segment as it seals), a few tens of
// milliseconds before the PUT's end, so the roll falls in the window too.
func TestMeasureTieredProduce(t *testing.T) {
	p := s3Provider(t, "")
	prefix := p.args[slices.Index(p.args, "--tiered_storage.s3.prefix")+1]
	// Nine rounds: pooled over three, the MinIO ratio of one
	// configuration ranged from 0.90 to 1.76 between runs, more than its
	// distance to the target, and each probe takes half of a round's
	// produces; nine, so that each of the three units below takes each
	// place three times. Each round adds about 120 s.
	const rounds = 9
	// The units of one placement, in round 0's order: the MinIO mode and
	// the replay of its PUTs right after it, and the two tiering-off nodes.
	// Round r rotates them by r, so that no unit always runs first after
	// the change of placement: in one run, the tiering-off node that did
	// had a p99 1.1 times that of the one that ran last.
	units := func(apart bool) [][]produceMode {
		return [][]produceMode{{{tier: "off", apart: apart}},
			{{tier: "MinIO", apart: apart}, {tier: "off", replay: true, apart: apart}},
			{{tier: "off", again: true, apart: apart}}}
	}
	placements := []bool{false}
	pid, why := storePID()
	if pid == 0 {
		t.Logf("no cores-apart rounds: %s", why)
	} else {
		placements = append(placements, true)
	}
	roundModes := func(r int) []produceMode {
		var out []produceMode
		for _, apart := range placements {
			u := units(apart)
			for k := range u {
				out = append(out, u[(k+r)%len(u)]...)
			}
		}
		return out
	}
	modes := roundModes(0)
	plans := map[bool][]replayPut{} // the PUTs of the latest MinIO round, by apart
	// measure runs one mode on a fresh node: a background load that keeps
	// 1 MiB segments rolling (64 KiB values of zeros, which the client's
	// snappy shrinks to about 3 KiB each, so uploads are about 2.5 small
	// PUTs a second), and for 10 s the two probes below, producing 1 KiB
	// records one at a time, in turns.
	measure := func(round int, m produceMode) [][]sample {
		if m.apart {
			defer coresApart(t, pid)()
		}
		args, env := []string{"--tiered_storage.enabled=false"}, []string(nil)
		if m.tier == "MinIO" {
			args, env = p.args, p.env
		}
		dir := t.TempDir()
		// Removed as soon as the node stops, not at the test's end: what
		// the kernel had not yet written back of the dead node's files
		// would otherwise be written during the next rounds.
		defer os.RemoveAll(dir)
		n := newNode(t, dir, args, env)
		n.start()
		defer n.stop()
		createTopic(t, n.kafka, "p99", 4, map[string]*string{"segment.bytes": ptr(strconv.Itoa(1 << 20)),
			"local.retention.bytes": ptr(strconv.Itoa(1 << 20))})
		began := time.Now()
		if m.replay {
			cpu := ""
			if m.apart {
				cpu = strconv.Itoa(storeCPU())
			}
			defer startReplay(t, plans[m.apart], cpu)()
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
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
				time.Sleep(2 * time.Millisecond) // paces the background load; it waits for nothing
			}
		}()
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		bare := dialBareProducer(t, n.kafka, "p99")
		defer bare.Close()
		probes := []func(value []byte) error{
			func(value []byte) error {
				return cl.ProduceSync(context.Background(), &kgo.Record{Topic: "p99", Value: value}).FirstErr()
			},
			bare.produce,
		}
		timeline(t, probes, 2*time.Second, 500)
		if m == (produceMode{tier: "MinIO"}) && round == 0 {
			defer profileNode(t, n, "produce.pprof", 8*time.Second)()
		}
		// At most 2,000 produces a second; about 1,250 were made here.
		gcs := n.metric("go_gc_duration_seconds_count")
		tl := timeline(t, probes, 10*time.Second, 2000)
		gcs = n.metric("go_gc_duration_seconds_count") - gcs
		close(stop)
		<-done
		// The GC line: with tiering on, the daemon's GC tuner
		// (tools/cli/gctune.go) lets the heap grow by at least 256 MiB
		// between collections, so a fresh tiering node does not collect in
		// a round; with tiering off it collects every few MiB.
		t.Logf("round %d, %s: p99 %v (franz-go), %v (bare connection) over %d+%d produces; the gateway's own Produce time p99 <= %v (its histogram's bucket); %v GCs, heap in use %.0f MiB",
			round, m, pct(latenciesOf(tl[0]), 0.99), pct(latenciesOf(tl[1]), 0.99), len(tl[0]), len(tl[1]), n.produceP99(),
			gcs, n.metric("go_memstats_heap_inuse_bytes")/(1<<20))
		if m.tier == "MinIO" {
			plan := listPuts(t, prefix, began)
			plans[m.apart] = plan
			t.Logf("round %d: %d objects written (%s); the node's requests to MinIO: %s", round, len(plan),
				plan[len(plan)-1].at.Round(time.Millisecond), n.objstoreRequests())
			for i, name := range probeNames {
				near, cover := nearPuts(tl[i], plan)
				t.Logf("round %d, %s, %s: %.2f of the slowest 1%% of produces started from 80 ms before a PUT's end to 20 ms after it, windows that hold %.2f of all produces",
					round, m, name, near, cover)
			}
		}
		return tl
	}
	pooled := make([]map[produceMode][]time.Duration, len(probeNames))
	perRound := make([]map[produceMode][]time.Duration, len(probeNames)) // each round's p99
	for i := range pooled {
		pooled[i] = map[produceMode][]time.Duration{}
		perRound[i] = map[produceMode][]time.Duration{}
	}
	for r := 0; r < rounds; r++ {
		for _, m := range roundModes(r) {
			tl := measure(r, m)
			for i := range tl {
				lat := latenciesOf(tl[i])
				pooled[i][m] = append(pooled[i][m], lat...)
				perRound[i][m] = append(perRound[i][m], pct(lat, 0.99))
			}
		}
	}
	for i, name := range probeNames {
		for _, d := range pooled[i] {
			slices.Sort(d)
		}
		ratio := func(on, base produceMode) {
			a, b := pooled[i][on], pooled[i][base]
			paired := pairedRatios(perRound[i][on], perRound[i][base])
			t.Logf("produce, %s, %d rounds: %s p50 %v p99 %v; %s p50 %v p99 %v; p99 ratio pooled %.2f, paired %.2f (rounds %.2f-%.2f)",
				name, rounds, on, pct(a, 0.5), pct(a, 0.99), base, pct(b, 0.5), pct(b, 0.99),
				float64(pct(a, 0.99))/float64(pct(b, 0.99)), median(paired), paired[0], paired[len(paired)-1])
		}
		for _, apart := range placements {
			off := produceMode{tier: "off", apart: apart}
			for _, m := range modes {
				if m.apart == apart && m != off {
					ratio(m, off)
				}
			}
			ratio(produceMode{tier: "MinIO", apart: apart}, produceMode{tier: "off", replay: true, apart: apart})
		}
	}
}

// pairedRatios returns on[r]/base[r] for every round r, ascending.
func pairedRatios(on, base []time.Duration) []float64 {
	out := make([]float64, len(on))
	for r := range on {
		out[r] = float64(on[r]) / float64(base[r])
	}
	slices.Sort(out)
	return out
}

// median of sorted values.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// produceMode is one configuration of TestMeasureTieredProduce's rounds.
type produceMode struct {
	tier   string // "MinIO" or "off"
	replay bool   // another process replays the latest MinIO round's PUTs
	again  bool   // a second tiering-off node: the measure's own spread
	apart  bool   // MinIO on a CPU of its own (coresApart)
}

func (m produceMode) String() string {
	s := "tiering to MinIO"
	switch {
	case m.tier == "off" && m.replay:
		s = "tiering off, the MinIO round's PUTs replayed by another process"
	case m.tier == "off" && m.again:
		s = "tiering off again"
	case m.tier == "off":
		s = "tiering off"
	}
	if m.apart {
		s += " (cores apart)"
	}
	return s
}

// replayPut is one PUT the node made: when (from the first) and how large.
type replayPut struct {
	at   time.Duration
	size int64
	end  time.Time // the object's LastModified
}

// listPuts lists the objects under prefix written since since, in the
// order they were written (manifests, overwritten in place, count once).
func listPuts(t *testing.T, prefix string, since time.Time) []replayPut {
	t.Helper()
	mc := minioAdmin(t)
	var objs []minio.ObjectInfo
	for o := range mc.ListObjects(context.Background(), testBucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		if o.LastModified.After(since) {
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("no object under %s written since %v", prefix, since)
	}
	slices.SortFunc(objs, func(a, b minio.ObjectInfo) int { return a.LastModified.Compare(b.LastModified) })
	plan := make([]replayPut, len(objs))
	for i, o := range objs {
		plan[i] = replayPut{at: o.LastModified.Sub(objs[0].LastModified), size: o.Size, end: o.LastModified}
	}
	return plan
}

// replayEnv names the plan file that makes this test binary, started again
// by startReplay, run replayPuts instead of its tests (childMains).
const replayEnv = "AEROSTREAM_MEASURE_REPLAY"

func init() { childMains[replayEnv] = replayPuts }

// replayCPUEnv names the CPU the replay runs on, if any (the cores-apart
// rounds' control runs beside MinIO).
const replayCPUEnv = "AEROSTREAM_MEASURE_REPLAY_CPU"

// startReplay starts this test binary again as a process of its own, which
// PUTs plan's objects into MinIO on plan's schedule (replayPuts), on CPU
// cpu when that is not empty; the function returned waits for it to end.
func startReplay(t *testing.T, plan []replayPut, cpu string) (wait func()) {
	t.Helper()
	var b strings.Builder
	for _, p := range plan {
		fmt.Fprintf(&b, "%d %d\n", p.at, p.size)
	}
	file := filepath.Join(t.TempDir(), "plan")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), replayEnv+"="+file, replayCPUEnv+"="+cpu)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := cmd.Wait(); err != nil {
			t.Errorf("replay: %v\n%s", err, out)
		}
	}
}

// replayPuts is startReplay's child process: it PUTs the objects of the
// plan in file (random bytes of each size) under a prefix of its own, each
// at its time from the start, and returns the exit code. The PUTs go as the
// node sends them (unsigned, with a CRC32C trailer), so MinIO does the same
// work for them.
func replayPuts(file string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "replay:", err)
		return 1
	}
	if v := os.Getenv(replayCPUEnv); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil {
			return fail(fmt.Errorf("%s=%q: %w", replayCPUEnv, v, err))
		}
		if err := setAffinity(0, cpuSet(c, c)); err != nil {
			return fail(err)
		}
	}
	text, err := os.ReadFile(file)
	if err != nil {
		return fail(err)
	}
	mc, err := dialMinio()
	if err != nil {
		return fail(err)
	}
	var plan []replayPut
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		var p replayPut
		if _, err := fmt.Sscan(line, &p.at, &p.size); err != nil {
			return fail(fmt.Errorf("plan line %q: %w", line, err))
		}
		plan = append(plan, p)
	}
	body := make([]byte, slices.MaxFunc(plan, func(a, b replayPut) int { return int(a.size - b.size) }).size)
	fill(body, time.Now().UnixNano())
	start := time.Now()
	for i, p := range plan {
		time.Sleep(time.Until(start.Add(p.at)))
		_, err := mc.PutObject(context.Background(), testBucket, fmt.Sprintf("replay-%d/%d", start.UnixNano(), i), bytes.NewReader(body[:p.size]), p.size,
			minio.PutObjectOptions{ContentType: "application/octet-stream", DisableContentSha256: true})
		if err != nil {
			return fail(err)
		}
	}
	return 0
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

// cpuMeter reads the CPU time (user + system, from /proc) of MinIO, the
// node and this test process (the reader or consumer), so each phase shows
// what it cost every process sharing the machine's cores.
type cpuMeter struct {
	t                 *testing.T
	minio, node, self int
	last              cpuUse
}

type cpuUse struct{ minio, node, self float64 }

func newCPUMeter(t *testing.T, n *node) *cpuMeter {
	m := &cpuMeter{t: t, node: n.cmd.Process.Pid, self: os.Getpid(), minio: -1}
	// testservers.sh keeps its servers' pids beside the binaries.
	if b, err := os.ReadFile(filepath.Join("..", "..", "bin", "testservers", "minio.pid")); err == nil {
		m.minio, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	m.last = m.read()
	return m
}

// cpuSeconds is a process's user + system time; -1 if it cannot be read.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if pid <= 0 || err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func (m *cpuMeter) read() cpuUse {
	return cpuUse{minio: cpuSeconds(m.minio), node: cpuSeconds(m.node), self: cpuSeconds(m.self)}
}

// lap returns the CPU used since the last lap.
func (m *cpuMeter) lap() cpuUse {
	now := m.read()
	d := cpuUse{minio: now.minio - m.last.minio, node: now.node - m.last.node, self: now.self - m.last.self}
	m.last = now
	return d
}

func (u cpuUse) per(gib float64, self string) string {
	return fmt.Sprintf("MinIO %.2f, node %.2f, %s %.2f", u.minio/gib, u.node/gib, self, u.self/gib)
}

// objstoreRequests sums the node's object store requests by operation
// (aerostream_objstore_requests_total, over topics; manifests count under
// their partition's topic too).
func (n *node) objstoreRequests() string {
	resp, err := http.Get("http://" + n.http + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	byOp := map[string]float64{}
	re := regexp.MustCompile(`(?m)^aerostream_objstore_requests_total\{op="([^"]+)",topic="[^"]*"\} (\S+)$`)
	for _, m := range re.FindAllSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		byOp[string(m[1])] += v
	}
	ops := slices.Sorted(maps.Keys(byOp))
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %.0f", op, byOp[op])
	}
	return strings.Join(parts, ", ")
}

// produceP99 reads the node's Produce request-duration histogram and
// returns the upper bound of the bucket that holds its 99th percentile:
// the broker's own share of a produce's latency, without the client's and
// the network's.
func (n *node) produceP99() time.Duration {
	resp, err := http.Get("http://" + n.http + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	re := regexp.MustCompile(`(?m)^aerostream_kafka_request_duration_seconds_bucket\{api="Produce",le="([^"]+)"\} (\S+)$`)
	type bucket struct{ le, n float64 }
	var bs []bucket
	for _, m := range re.FindAllSubmatch(body, -1) {
		le, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			le = math.Inf(1)
		}
		c, _ := strconv.ParseFloat(string(m[2]), 64)
		bs = append(bs, bucket{le, c})
	}
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return -1
	}
	total := bs[len(bs)-1].n
	for _, b := range bs {
		if b.n >= 0.99*total {
			return time.Duration(b.le * float64(time.Second))
		}
	}
	return -1
}

// rawConsume reads every partition of topic from offset 0 to the end with
// Fetch requests through the Kafka gateway, bytes only, as the plain GET
// reader reads: it walks the batches by their headers to move its offsets
// and count records, and decodes no record. It checks that the batches
// follow each other without a gap and that every record arrives; the
// franz-go pass checks their content.
func rawConsume(t *testing.T, addr, topic string, want map[int32]*digest, timeout time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, cl)
	if err != nil || len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata for %s: %v %+v", topic, err, mresp)
	}
	id := mresp.Topics[0].TopicID
	next := map[int32]int64{}
	count := map[int32]int64{}
	for p := range want {
		next[p] = 0
	}
	for len(next) > 0 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 64 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for p, off := range next {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 8<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("fetch: %v (consumed %v of %d partitions)", err, count, len(want))
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("fetch partition %d at %d: %v", rp.Partition, next[rp.Partition], kerr.ErrorForCode(rp.ErrorCode))
				}
				b := rp.RecordBatches
				for len(b) >= 61 {
					n := int(binary.BigEndian.Uint32(b[8:])) + 12
					if n > len(b) {
						break // a partial batch at the end
					}
					base := int64(binary.BigEndian.Uint64(b))
					last := base + int64(int32(binary.BigEndian.Uint32(b[23:])))
					off := next[rp.Partition]
					if base > off {
						t.Fatalf("partition %d: batch at %d, expected offset %d (gap)", rp.Partition, base, off)
					}
					if last >= off {
						count[rp.Partition] += last - off + 1
						next[rp.Partition] = last + 1
					}
					b = b[n:]
				}
				if count[rp.Partition] >= want[rp.Partition].count {
					delete(next, rp.Partition)
				}
			}
		}
	}
	for p, w := range want {
		if count[p] != w.count {
			t.Fatalf("partition %d: %d records read, %d produced", p, count[p], w.count)
		}
	}
}

// The two produce probes of TestMeasureTieredProduce, in turns on one
// ticker, so that both see the same moments of the same round:
//   - franz-go, as an application produces: ProduceSync hands the record to
//     the client's goroutines, which batch, write and read it;
//   - a bare connection (bareProducer): the request is written and its
//     response read on the probing goroutine itself.
//
// The second is the broker's latency with the least of the client in it.
// Here the client shares two cores with MinIO, which a client elsewhere
// would not: every goroutine hand-off in the client is one more chance to
// wait behind MinIO's work, and that wait is not the broker's.
var probeNames = []string{"franz-go", "bare connection"}

// nearPuts reports what share of the slowest 1% of samples, and of all
// samples, started from 80 ms before an object's LastModified to 20 ms
// after it: around the end of a PUT, which took about 20 to 50 ms here.
func nearPuts(samples []sample, plan []replayPut) (slowShare, allShare float64) {
	near := func(at time.Time) bool {
		for _, p := range plan {
			if d := at.Sub(p.end); d > -80*time.Millisecond && d < 20*time.Millisecond {
				return true
			}
		}
		return false
	}
	threshold := pct(latenciesOf(samples), 0.99)
	var slow, slowNear, all int
	for _, x := range samples {
		n := near(x.at)
		if n {
			all++
		}
		if x.lat > threshold {
			slow++
			if n {
				slowNear++
			}
		}
	}
	return float64(slowNear) / float64(max(slow, 1)), float64(all) / float64(max(len(samples), 1))
}

// bareProducer produces one record per Produce request (v7, acks=1) over a
// connection of its own, with no client library between the caller and the
// socket; the partitions are taken in turn.
type bareProducer struct {
	c      net.Conn
	topic  string
	corr   int32
	frame  []byte
	resp   []byte
	rec    []byte
	raw    []byte
	record kmsg.Record
}

func dialBareProducer(t *testing.T, addr, topic string) *bareProducer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return &bareProducer{c: c, topic: topic}
}

func (b *bareProducer) Close() { b.c.Close() }

func (b *bareProducer) produce(value []byte) error {
	b.corr++
	now := time.Now().UnixMilli()
	// Length is the record's size after its own varint: encoded with a
	// Length of 0, that varint is one byte.
	b.record = kmsg.Record{Value: value}
	b.record.Length = int32(len(b.record.AppendTo(b.rec[:0])) - 1)
	b.rec = b.record.AppendTo(b.rec[:0])
	batch := kmsg.RecordBatch{FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: b.rec, Magic: 2}
	b.raw = batch.AppendTo(b.raw[:0])
	raw := b.raw
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 7, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = b.topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = b.corr%4, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Request header v1: size, api key 0, version 7, correlation id,
	// client id.
	b.frame = append(b.frame[:0], 0, 0, 0, 0, 0, 0, 0, 7)
	b.frame = binary.BigEndian.AppendUint32(b.frame, uint32(b.corr))
	b.frame = append(b.frame, 0, 4, 'b', 'a', 'r', 'e')
	b.frame = req.AppendTo(b.frame)
	binary.BigEndian.PutUint32(b.frame, uint32(len(b.frame)-4))
	if _, err := b.c.Write(b.frame); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(b.c, size[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	b.resp = slices.Grow(b.resp[:0], n)[:n]
	if _, err := io.ReadFull(b.c, b.resp); err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(b.resp)); got != b.corr {
		return fmt.Errorf("response to correlation id %d, want %d", got, b.corr)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	if err := resp.ReadFrom(b.resp[4:]); err != nil {
		return err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("produce response for %d topics", len(resp.Topics))
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}
