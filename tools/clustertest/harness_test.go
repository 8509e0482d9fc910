package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/controller"
)

// gate skips a process test unless the cluster tests were asked for, and
// returns the aerostream binary.
func gate(t *testing.T) string {
	t.Helper()
	if os.Getenv("CLUSTER_TESTS") == "" {
		t.Skip("cluster acceptance tests spawn six processes for minutes: run `make test-cluster` (sets CLUSTER_TESTS=1)")
	}
	return aerostream(t)
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// aerostream returns the binary: AEROSTREAM_BIN if set, else one built
// once per test run into a directory of its own, so that the run never
// races another build writing bin/.
func aerostream(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("AEROSTREAM_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("AEROSTREAM_BIN=%s cannot be used: %v", p, err)
		}
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "clustertest-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "aerostream")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/aerostream/aerostream/tools/aerostream").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
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

// proc is one aerostream process. Its output goes to a log file that
// survives restarts (each start is marked in it) and is printed, the tail
// of it, when the test fails.
type proc struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{}
		err    error
		paused bool
		// stopped: the test killed or stopped it on purpose, so an exit
		// is no crash.
		stopped bool
		starts  int
	}
}

// start runs the process. It does not wait for it to be ready: the
// cluster's readiness checks look at what it serves.
func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "=== %s start %s: %s\n", p.name, time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	// The child's AEROSTREAM_* variables would override our flags, and a
	// test binary killed by its timeout must not leave children behind.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.mu.cmd, p.mu.exited, p.mu.err, p.mu.paused, p.mu.stopped = cmd, exited, nil, false, false
	p.mu.starts++
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.mu.err = err
		p.mu.Unlock()
		close(exited)
	}()
}

// running reports whether the process is started and has not exited, and
// if it exited, how.
func (p *proc) running() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.exited == nil {
		return false, nil
	}
	select {
	case <-p.mu.exited:
		return false, p.mu.err
	default:
		return true, nil
	}
}

// signal sends sig and, for SIGKILL and SIGTERM, waits for the exit (a
// SIGTERM that is not obeyed within 30 s becomes a SIGKILL).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	cmd, exited := p.mu.cmd, p.mu.exited
	switch sig {
	case syscall.SIGSTOP:
		p.mu.paused = true
	case syscall.SIGCONT:
		p.mu.paused = false
	case syscall.SIGKILL, syscall.SIGTERM:
		p.mu.stopped = true
	}
	paused := p.mu.paused
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	if sig == syscall.SIGTERM && paused {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(sig)
	switch sig {
	case syscall.SIGKILL:
		<-exited
	case syscall.SIGTERM:
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
	}
}

func (p *proc) kill() { p.signal(syscall.SIGKILL) }

// crashed reports a process that exited without the test asking, and how.
func (p *proc) crashed() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.exited == nil || p.mu.stopped {
		return false, nil
	}
	select {
	case <-p.mu.exited:
		return true, p.mu.err
	default:
		return false, nil
	}
}

// isDown reports a process the test stopped on purpose.
func (p *proc) isDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.stopped
}

// stop is SIGTERM, waited for; it returns how the process exited.
func (p *proc) stop() error {
	p.signal(syscall.SIGTERM)
	_, err := p.running()
	return err
}

func (p *proc) log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cluster is one controller, some stores and some gateways on loopback.
type cluster struct {
	t        *testing.T
	dir      string
	bin      string
	ctlAddr  string
	ctl      *proc
	stores   map[int32]*proc
	gateways map[int32]*proc
	kafka    map[int32]string // gateway id -> Kafka address
	http     *http.Client
	// storeArgs, when set, gives a store's flags beyond the harness's
	// (later flags win).
	storeArgs func(id int32) []string
}

// Node ids, as the commands give them.
const controllerID = 1

var (
	storeIDs   = []int32{11, 12, 13}
	gatewayIDs = []int32{1001, 1002}
)

// newCluster starts the controller, the stores and the gateways and waits
// until the controller sees them all live and both gateways answer Kafka
// Metadata naming each other. Every process is killed when the test ends;
// a failed test keeps the logs (their tails are printed) in dir.
func newCluster(t *testing.T, bin string, stores, gateways []int32) *cluster {
	t.Helper()
	return newClusterWith(t, bin, stores, gateways, nil)
}

// newClusterWith is newCluster with storeArgs (cluster.storeArgs).
func newClusterWith(t *testing.T, bin string, stores, gateways []int32, storeArgs func(id int32) []string) *cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "clustertest-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, dir: dir, bin: bin, stores: map[int32]*proc{}, gateways: map[int32]*proc{}, kafka: map[int32]string{},
		http: &http.Client{Timeout: 5 * time.Second}, storeArgs: storeArgs}
	t.Cleanup(c.cleanup)

	c.ctlAddr = freeAddr(t)
	c.ctl = c.newProc("controller", "controller", "--controller.node_id", strconv.Itoa(controllerID), "--controller.bootstrap",
		"--controller-listen", c.ctlAddr, "--data-dir", filepath.Join(dir, "c1"))
	c.ctl.start(t)
	c.waitFor("the controller to answer /v1/metadata", 60*time.Second, func() (bool, string) {
		_, err := c.metadata()
		return err == nil, fmt.Sprint(err)
	})
	for _, id := range stores {
		c.addStore(id)
	}
	for _, id := range gateways {
		addr := freeAddr(t)
		c.kafka[id] = addr
		c.gateways[id] = c.newProc(fmt.Sprintf("gateway-%d", id), "gateway", "kafka", "--gateway.node_id", strconv.Itoa(int(id)),
			"--controller.join", c.ctlAddr, "--kafka-listen", addr)
		c.gateways[id].start(t)
	}
	c.waitMembers(90 * time.Second)
	for _, id := range gateways {
		c.waitKafka(id, 60*time.Second)
	}
	return c
}

func (c *cluster) newProc(name string, args ...string) *proc {
	return &proc{name: name, bin: c.bin, args: args, logPath: filepath.Join(c.dir, name+".log")}
}

// addStore starts a store with its own data dir and ring port.
func (c *cluster) addStore(id int32) *proc {
	p := c.newProc(fmt.Sprintf("store-%d", id), "store", "--controller.node_id", strconv.Itoa(int(id)),
		"--controller.join", c.ctlAddr, "--ring-listen", freeAddr(c.t), "--data-dir", c.storeDir(id),
		"--http-listen", "", "--kafka-listen", "", "--native-listen", "")
	if c.storeArgs != nil {
		p.args = append(p.args, c.storeArgs(id)...)
	}
	c.stores[id] = p
	p.start(c.t)
	return p
}

func (c *cluster) storeDir(id int32) string { return filepath.Join(c.dir, fmt.Sprintf("s%d", id)) }

func (c *cluster) procs() []*proc {
	ps := []*proc{c.ctl}
	for _, id := range sortedIDs(c.stores) {
		ps = append(ps, c.stores[id])
	}
	for _, id := range sortedIDs(c.gateways) {
		ps = append(ps, c.gateways[id])
	}
	return ps
}

func sortedIDs(m map[int32]*proc) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// cleanup kills every process (a paused one too: SIGKILL ends a stopped
// process) and, when the test failed, prints each log's tail and keeps the
// logs.
func (c *cluster) cleanup() {
	for _, p := range c.procs() {
		if p != nil {
			p.kill()
		}
	}
	if keep := os.Getenv("CLUSTERTEST_KEEP") != ""; c.t.Failed() || keep {
		if keep && !c.t.Failed() {
			c.t.Logf("cluster logs and data kept in %s (CLUSTERTEST_KEEP)", c.dir)
			return
		}
		for _, p := range c.procs() {
			if p != nil {
				c.t.Logf("--- %s log (last 60 lines; all in %s):\n%s", p.name, p.logPath, tail(p.log(), 60))
			}
		}
		c.t.Logf("cluster logs and data kept in %s", c.dir)
		return
	}
	os.RemoveAll(c.dir)
}

// waitFor polls cond until it holds, failing the test after timeout with
// cond's last description of what it saw. A process that exited is named
// at once, with its log, instead of waiting out the timeout.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	c.t.Helper()
	if msg := c.tryWait(timeout, cond); msg != "" {
		c.t.Fatalf("waiting for %s: %s", what, msg)
	}
}

// tryWait is waitFor returning the failure instead ("" once cond holds).
func (c *cluster) tryWait(timeout time.Duration, cond func() (bool, string)) string {
	deadline := time.Now().Add(timeout)
	for {
		ok, last := cond()
		if ok {
			return ""
		}
		for _, p := range c.procs() {
			if crashed, err := p.crashed(); crashed {
				return fmt.Sprintf("%s exited (%v); last seen: %s\n%s", p.name, err, last, tail(p.log(), 30))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("not after %v; last seen: %s", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metadata reads the controller's /v1/metadata.
func (c *cluster) metadata() (controller.MetadataResponse, error) {
	var md controller.MetadataResponse
	resp, err := c.http.Get("http://" + c.ctlAddr + "/v1/metadata?leader=1")
	if err != nil {
		return md, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return md, err
	}
	if resp.StatusCode != http.StatusOK {
		return md, fmt.Errorf("GET /v1/metadata: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	if err := json.Unmarshal(body, &md); err != nil {
		return md, fmt.Errorf("GET /v1/metadata: %v", err)
	}
	return md, nil
}

// mustMetadata is metadata failing the test on an error.
func (c *cluster) mustMetadata() controller.MetadataResponse {
	c.t.Helper()
	md, err := c.metadata()
	if err != nil {
		c.t.Fatal(err)
	}
	return md
}

// liveNodes lists the live node ids of a kind.
func liveNodes(md controller.MetadataResponse, kind string) []int32 {
	var ids []int32
	for _, n := range md.Nodes {
		if n.Kind == kind && n.Live {
			ids = append(ids, n.ID)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// waitMembers waits until the controller shows every started store and
// gateway live.
func (c *cluster) waitMembers(timeout time.Duration) {
	c.t.Helper()
	c.waitFor("every store and gateway to be live in /v1/metadata", timeout, c.membersLive)
}

func (c *cluster) membersLive() (bool, string) {
	md, err := c.metadata()
	if err != nil {
		return false, err.Error()
	}
	stores, gws := liveNodes(md, controller.KindStore), liveNodes(md, controller.KindGateway)
	want := 0
	for _, p := range c.stores {
		if !p.isDown() {
			want++
		}
	}
	ok := len(stores) == want && len(gws) == len(c.gateways)
	return ok, fmt.Sprintf("live stores %v, live gateways %v", stores, gws)
}

// kgoClient is a franz-go client seeded with one gateway.
func (c *cluster) kgoClient(gw int32, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.kafka[gw])}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// waitKafka waits until the gateway answers Kafka Metadata listing every
// gateway as a broker.
func (c *cluster) waitKafka(gw int32, timeout time.Duration) {
	c.t.Helper()
	cl := c.kgoClient(gw)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	c.waitFor(fmt.Sprintf("gateway %d to answer Kafka Metadata with every gateway", gw), timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return false, err.Error()
		}
		ids := md.Brokers.NodeIDs()
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return len(ids) == len(c.gateways), fmt.Sprintf("brokers %v", ids)
	})
}

// cli runs an aerostream command and returns its stdout and error (with
// stderr in it).
func (c *cluster) cli(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("aerostream %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), err
}

// createTopic creates the topic with the CLI, as a user would, and waits
// until every partition has a live leader and a full ISR in the
// controller's metadata and both gateways serve it.
func (c *cluster) createTopic(topic string, partitions, rf, minISR int) {
	c.t.Helper()
	out, err := c.cli(60*time.Second, "topic", "create", topic, "-p", strconv.Itoa(partitions), "-r", strconv.Itoa(rf),
		"--config", fmt.Sprintf("min.insync.replicas=%d", minISR), "--controller", c.ctlAddr)
	if err != nil {
		c.t.Fatalf("%v\n%s", err, out)
	}
	c.t.Logf("%s", strings.TrimSpace(out))
	c.waitFor("every partition of "+topic+" to have a live leader and a full ISR", 60*time.Second, func() (bool, string) {
		return c.healthy(topic, rf)
	})
	for gw := range c.gateways {
		c.waitTopicKafka(gw, topic, partitions, 60*time.Second)
	}
}

// healthy says whether every partition of topic has a live leader and an
// ISR of want members (and describes the partitions that do not).
func (c *cluster) healthy(topic string, want int) (bool, string) {
	md, err := c.metadata()
	if err != nil {
		return false, err.Error()
	}
	ti, ok := findTopic(md, topic)
	if !ok {
		return false, "topic not in metadata"
	}
	live := map[int32]bool{}
	for _, id := range liveNodes(md, controller.KindStore) {
		live[id] = true
	}
	var bad []string
	for _, p := range ti.Partitions {
		if p.Leader == controller.NoLeader || !live[p.Leader] || len(p.ISR) < want {
			bad = append(bad, fmt.Sprintf("p%d leader=%d replicas=%v isr=%v", p.Partition, p.Leader, p.Replicas, p.ISR))
		}
	}
	if len(ti.Partitions) == 0 {
		bad = append(bad, "no partitions")
	}
	return len(bad) == 0, strings.Join(bad, "; ")
}

func findTopic(md controller.MetadataResponse, topic string) (controller.TopicInfo, bool) {
	for _, ti := range md.Topics {
		if ti.Name == topic {
			return ti, true
		}
	}
	return controller.TopicInfo{}, false
}

// leaders maps each partition of topic to its leader store.
func leaders(md controller.MetadataResponse, topic string) map[int32]int32 {
	out := map[int32]int32{}
	ti, _ := findTopic(md, topic)
	for _, p := range ti.Partitions {
		out[p.Partition] = p.Leader
	}
	return out
}

// leaderEpochs maps each partition of topic to its leader epoch.
func leaderEpochs(md controller.MetadataResponse, topic string) map[int32]int32 {
	out := map[int32]int32{}
	ti, _ := findTopic(md, topic)
	for _, p := range ti.Partitions {
		out[p.Partition] = p.LeaderEpoch
	}
	return out
}

// kafkaLeaders describes which gateway each partition of topic names as
// its leader in Kafka Metadata, as seen through gw.
func (c *cluster) kafkaLeaders(gw int32, topic string) string {
	cl := c.kgoClient(gw)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return err.Error()
	}
	td := md.Topics[topic]
	var parts []string
	for _, p := range td.Partitions.Sorted() {
		parts = append(parts, fmt.Sprintf("p%d->%d", p.Partition, p.Leader))
	}
	return strings.Join(parts, " ")
}

// waitTopicKafka waits until the gateway's Kafka Metadata shows every
// partition of topic with a leader and no error.
func (c *cluster) waitTopicKafka(gw int32, topic string, partitions int, timeout time.Duration) {
	c.t.Helper()
	cl := c.kgoClient(gw)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	c.waitFor(fmt.Sprintf("gateway %d to serve %s in Kafka Metadata", gw, topic), timeout, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		td, ok := md.Topics[topic]
		if !ok || td.Err != nil {
			return false, fmt.Sprintf("topic: %v", td.Err)
		}
		if len(td.Partitions) != partitions {
			return false, fmt.Sprintf("%d partitions", len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false, fmt.Sprintf("partition %d: leader %d err %v", p.Partition, p.Leader, p.Err)
			}
		}
		return true, ""
	})
}
