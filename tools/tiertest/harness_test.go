package tiertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var binPath string

// childMains are what this test binary runs, instead of building serve and
// running its tests, when a test starts it again as a child process: the
// environment variable that selects each, and the function given its value,
// which returns the exit code. A child builds nothing, since a build would
// take CPU from the run that started it. measure_test.go registers the
// produce measurement's replay here.
var childMains = map[string]func(arg string) int{}

func TestMain(m *testing.M) {
	for env, child := range childMains {
		if arg := os.Getenv(env); arg != "" {
			os.Exit(child(arg))
		}
	}
	dir, err := os.MkdirTemp("", "tiertest-bin")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "aerostream")
	out, err := exec.Command("go", "build", "-o", binPath, "../aerostream").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// node is one `aerostream serve` process.
type node struct {
	t                   *testing.T
	dir                 string
	args, env, tierArgs []string
	kafka, http         string
	cmd                 *exec.Cmd
	logMu               sync.Mutex
	log                 strings.Builder
	running             chan struct{}
	exited              chan struct{} // closed when the process has been reaped
}

func newNode(t *testing.T, dir string, tierArgs, env []string) *node {
	n := &node{t: t, dir: dir, env: env, tierArgs: tierArgs}
	n.pickPorts()
	// A test that fails between start and stop must not leave its serve
	// process running: one was found alive 13 minutes after a failed
	// measure run.
	t.Cleanup(func() {
		if n.exited != nil {
			select {
			case <-n.exited:
			default:
				n.kill()
			}
		}
	})
	return n
}

// pickPorts chooses fresh loopback ports. A port found free can be taken
// by another test before serve binds it; start then picks again.
func (n *node) pickPorts() {
	n.kafka, n.http = freeAddr(n.t), freeAddr(n.t)
	n.args = append([]string{"serve", "--data-dir", filepath.Join(n.dir, "data"),
		"--kafka-listen", n.kafka, "--http-listen", n.http,
		"--ring-listen", freeAddr(n.t), "--controller-listen", freeAddr(n.t), "--native-listen", "",
		"--logstore.retention_check_interval_ms", "500", "--log_level", "info",
		"--admin.pprof"}, n.tierArgs...) // profileNode reads /debug/pprof
}

func (n *node) start() {
	n.t.Helper()
	for attempt := 0; ; attempt++ {
		err := n.startOnce()
		if err == nil {
			return
		}
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			n.pickPorts()
			continue
		}
		n.t.Fatal(err)
	}
}

func (n *node) startOnce() error {
	t := n.t
	t.Helper()
	n.logMu.Lock()
	n.log.Reset()
	n.logMu.Unlock()
	n.cmd = exec.Command(binPath, n.args...)
	n.cmd.Dir = n.dir
	n.cmd.Env = append(os.Environ(), n.env...)
	stderr, err := n.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stdout = io.Discard
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.running = make(chan struct{})
	n.exited = make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		<-scanned // Wait closes the pipe: read it to the end first
		_ = n.cmd.Wait()
		close(n.exited)
	}()
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			n.logMu.Lock()
			n.log.WriteString(line + "\n")
			n.logMu.Unlock()
			if strings.Contains(line, "msg=running") {
				once.Do(func() { close(n.running) })
			}
		}
	}()
	select {
	case <-n.running:
	case <-n.exited:
		return fmt.Errorf("serve exited before running:\n%s", n.logText())
	case <-time.After(60 * time.Second):
		return fmt.Errorf("serve did not start in 60s:\n%s", n.logText())
	}
	// The store registers with its controller and learns the topics a
	// moment after it runs; wait until the Kafka side answers metadata.
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka))
		if err == nil {
			err = cl.Ping(context.Background())
			cl.Close()
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafka listener not answering: %v\n%s", err, n.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *node) logText() string {
	n.logMu.Lock()
	defer n.logMu.Unlock()
	return n.log.String()
}

func (n *node) kill() {
	_ = n.cmd.Process.Signal(syscall.SIGKILL)
	<-n.exited
}

func (n *node) stop() {
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		n.kill()
	}
}

// tier runs the tier CLI against the node and returns stdout.
func (n *node) tier(args ...string) (string, error) {
	cmd := exec.Command(binPath, append([]string{"tier", "--admin", n.http}, args...)...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), fmt.Errorf("%v: %s", err, ee.Stderr)
	}
	return string(out), err
}

type segView struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	BaseOffset int64  `json:"base_offset"`
	EndOffset  int64  `json:"end_offset"`
	Bytes      int64  `json:"bytes"`
	State      string `json:"state"`
	Location   string `json:"location"`
	ObjectKey  string `json:"object_key"`
}

func (n *node) segments(topic string) []segView {
	n.t.Helper()
	resp, err := http.Get("http://" + n.http + "/v1/tier/segments?topic=" + topic)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []segView
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		n.t.Fatal(err)
	}
	return out
}

// waitTiered waits until every sealed segment is in the bucket and the
// local copies beyond localRetention bytes per partition are evicted.
func (n *node) waitTiered(topic string, localRetention int64, timeout time.Duration) []segView {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		segs := n.segments(topic)
		pending, remote := 0, 0
		// Per partition: bytes on local disk, and the oldest uploaded local
		// segment, which the store evicts while the rest of the local log
		// still reaches local.retention.bytes.
		localBytes := map[int32]int64{}
		oldest := map[int32]int64{}
		for _, s := range segs {
			switch s.State {
			case "active":
				localBytes[s.Partition] += s.Bytes
			case "remote":
				remote++
			case "local+remote":
				localBytes[s.Partition] += s.Bytes
				if _, ok := oldest[s.Partition]; !ok {
					oldest[s.Partition] = s.Bytes
				}
			default:
				pending++
			}
		}
		over := 0
		for p, size := range oldest {
			if localBytes[p]-size >= localRetention {
				over++
			}
		}
		if pending == 0 && over == 0 && remote > 0 {
			return segs
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("after %v: %d segments not uploaded, %d partitions above local retention, %d remote\n%s",
				timeout, pending, over, remote, tail(n.logText(), 40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func createTopic(t *testing.T, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
}

func ptr(s string) *string { return &s }

// digest is a running CRC32C over a partition's record values in order,
// with their count: equal digests mean the same records in the same order.
type digest struct {
	crc   uint32
	count int64
	bytes int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (d *digest) add(key, value []byte) {
	d.crc = crc32.Update(d.crc, castagnoli, key)
	d.crc = crc32.Update(d.crc, castagnoli, value)
	d.count++
	d.bytes += int64(len(value))
}

// produce writes total bytes of records of size bytes each, spread round
// robin over the partitions, and returns each partition's digest.
func produce(t *testing.T, addr, topic string, partitions int32, total int64, size int) map[int32]*digest {
	return produceMore(t, addr, topic, partitions, total, size, nil)
}

// produceMore is produce continuing the digests of earlier rounds.
func produceMore(t *testing.T, addr, topic string, partitions int32, total int64, size int, digests map[int32]*digest) map[int32]*digest {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedBytes(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if digests == nil {
		digests = map[int32]*digest{}
	}
	for p := int32(0); p < partitions; p++ {
		if digests[p] == nil {
			digests[p] = &digest{}
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	n := total / int64(size)
	ctx := context.Background()
	for i := int64(0); i < n; i++ {
		p := int32(i % int64(partitions))
		value := make([]byte, size)
		fill(value, i)
		key := []byte(fmt.Sprintf("k%d-%d", digests[p].count, i))
		digests[p].add(key, value) // records of one partition are acked in order
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Key: key, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return digests
}

// fill writes pseudo-random bytes derived from seed, so values differ and
// do not compress into nothing.
func fill(b []byte, seed int64) {
	x := uint64(seed)*0x9E3779B97F4A7C15 + 1
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i], b[i+1], b[i+2], b[i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
		b[i+4], b[i+5], b[i+6], b[i+7] = byte(x>>32), byte(x>>40), byte(x>>48), byte(x>>56)
	}
}

// consumeAll reads every partition from offset 0 until it has seen the
// expected counts, and returns the digests.
func consumeAll(t *testing.T, addr, topic string, want map[int32]*digest, timeout time.Duration) map[int32]*digest {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range want {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]*digest{}
	var total, wantTotal int64
	for p, d := range want {
		got[p] = &digest{}
		wantTotal += d.count
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	next := map[int32]int64{}
	for total < wantTotal {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the timeout", total, wantTotal)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, expected %d (gap or duplicate)", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			got[r.Partition].add(r.Key, r.Value)
			total++
		})
	}
	return got
}

func sameDigests(t *testing.T, want, got map[int32]*digest) {
	t.Helper()
	for p, w := range want {
		g := got[p]
		if g == nil || g.count != w.count || g.crc != w.crc {
			t.Fatalf("partition %d: read %+v, produced %+v", p, g, w)
		}
	}
}

// checkBucket runs `tier verify` and `tier gc` (dry run, no age grace): the
// bucket must hold exactly what the catalog says, intact.
func (n *node) checkBucket() {
	n.t.Helper()
	out, err := n.tier("verify")
	if err != nil {
		n.t.Fatalf("tier verify: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`\d+ remote segments checked, 0 bad`).MatchString(out) {
		n.t.Fatalf("tier verify: %s", out)
	}
	out, err = n.tier("gc", "--min-age-ms", "0")
	if err != nil || !strings.Contains(out, "0 orphaned objects") {
		n.t.Fatalf("tier gc: %v\n%s", err, out)
	}
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
