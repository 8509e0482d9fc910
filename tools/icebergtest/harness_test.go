package icebergtest

import (
	"bufio"
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
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var binPath string

// gated reports whether any test here will run; without a gate nothing is
// built, so that `go test ./...` stays cheap.
func gated() bool {
	return os.Getenv("ICEBERG_PYTHON") != "" || os.Getenv("ICEBERG_SPARK_PYTHON") != ""
}

func TestMain(m *testing.M) {
	if !gated() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "icebergtest-bin")
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

func skipWithout(t *testing.T, v, why string) string {
	t.Helper()
	s := os.Getenv(v)
	if s == "" {
		t.Skipf("%s is not set; %s", v, why)
	}
	return s
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

// node is one `aerostream serve` process; its data dir and ports survive
// a kill and restart.
type node struct {
	t           *testing.T
	dir         string
	extra, env  []string
	kafka, http string
	args        []string
	cmd         *exec.Cmd
	logMu       sync.Mutex
	log         strings.Builder
	exited      chan struct{}
}

func newNode(t *testing.T, extra, env []string) *node {
	n := &node{t: t, dir: t.TempDir(), extra: extra, env: env}
	n.kafka, n.http = freeAddr(t), freeAddr(t)
	n.args = append([]string{"serve", "--data-dir", filepath.Join(n.dir, "data"),
		"--kafka-listen", n.kafka, "--http-listen", n.http,
		"--ring-listen", freeAddr(t), "--controller-listen", freeAddr(t), "--native-listen", "",
		"--log_level", "info"}, extra...)
	t.Cleanup(func() {
		if n.exited != nil {
			select {
			case <-n.exited:
			default:
				n.kill()
			}
		}
		if t.Failed() {
			t.Logf("serve log tail:\n%s", tail(n.logText(), 60))
		}
	})
	return n
}

func (n *node) start() {
	t := n.t
	t.Helper()
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
	running := make(chan struct{})
	n.exited = make(chan struct{})
	scanned := make(chan struct{})
	exited := n.exited
	cmd := n.cmd
	go func() {
		<-scanned // Wait closes the pipe: read it to the end first
		_ = cmd.Wait()
		close(exited)
	}()
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			n.logMu.Lock()
			n.log.WriteString(line + "\n")
			n.logMu.Unlock()
			if strings.Contains(line, "msg=running") {
				once.Do(func() { close(running) })
			}
		}
	}()
	select {
	case <-running:
	case <-exited:
		t.Fatalf("serve exited before running:\n%s", tail(n.logText(), 40))
	case <-time.After(90 * time.Second):
		t.Fatalf("serve did not start in 90s:\n%s", tail(n.logText(), 40))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka))
		if err == nil {
			err = cl.Ping(context.Background())
			cl.Close()
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafka listener not answering: %v\n%s", err, tail(n.logText(), 40))
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

// catalogURI is the built-in REST catalog's URI, all a reader is given.
func (n *node) catalogURI() string { return "http://" + n.http + "/iceberg" }

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func createTopic(t *testing.T, addr, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, cfg, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, res.Err)
	}
}

// kcatProduce produces n keyed records (record i of the run has key
// key-<run>-<i> and a value derived from it) with kcat, acks=all, and
// waits until kcat has them all acknowledged.
func kcatProduce(t *testing.T, addr, topic, run string, n int) {
	t.Helper()
	var in bytes.Buffer
	for i := range n {
		fmt.Fprintf(&in, "key-%s-%06d\tvalue-%s-%06d-%x\n", run, i, run, i, uint32(i)*2654435761)
	}
	cmd := exec.Command("kcat", "-P", "-b", addr, "-t", topic, "-K", "\t", "-z", "none",
		"-X", "acks=all", "-X", "linger.ms=5", "-X", "enable.idempotence=false")
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
}

// row is one record: where it is in the log, and its key and value.
type row struct {
	p          int32
	o          int64
	key, value string // hex, "-" for null
}

func (r row) String() string { return fmt.Sprintf("%d %d %s %s", r.p, r.o, r.key, r.value) }

func hexOrDash(b []byte) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprintf("%x", b)
}

// readLog reads every record of topic up to the end offsets, as a Kafka
// consumer sees them; the table must equal this.
func readLog(t *testing.T, addr, topic string) ([]row, map[int32]int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	end := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	var total int64
	ends.Each(func(o kadm.ListedOffset) {
		end[o.Partition] = o.Offset
		offsets[o.Partition] = kgo.NewOffset().At(0)
		total += o.Offset
	})
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rows []row
	for int64(len(rows)) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of the log", len(rows), total)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < end[r.Partition] {
				rows = append(rows, row{r.Partition, r.Offset, hexOrDash(r.Key), hexOrDash(r.Value)})
			}
		})
	}
	return rows, end
}

// tableOffsets is the aerostream.offsets summary of the table's current
// snapshot, read through the REST catalog; nil before the first commit.
func (n *node) tableOffsets(ns, tbl string) (map[int32]int64, error) {
	rsp, err := http.Get(n.catalogURI() + "/v1/namespaces/" + ns + "/tables/" + tbl)
	if err != nil {
		return nil, err
	}
	defer rsp.Body.Close()
	if rsp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if rsp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(rsp.Body)
		return nil, fmt.Errorf("load table: %d %s", rsp.StatusCode, b)
	}
	var ltr struct {
		Metadata struct {
			Current   *int64 `json:"current-snapshot-id"`
			Snapshots []struct {
				ID      int64             `json:"snapshot-id"`
				Summary map[string]string `json:"summary"`
			} `json:"snapshots"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(rsp.Body).Decode(&ltr); err != nil {
		return nil, err
	}
	if ltr.Metadata.Current == nil || *ltr.Metadata.Current < 0 {
		return nil, nil
	}
	for _, s := range ltr.Metadata.Snapshots {
		if s.ID != *ltr.Metadata.Current {
			continue
		}
		var raw map[string]int64
		if err := json.Unmarshal([]byte(s.Summary["aerostream.offsets"]), &raw); err != nil {
			return nil, fmt.Errorf("aerostream.offsets %q: %w", s.Summary["aerostream.offsets"], err)
		}
		out := map[int32]int64{}
		for k, v := range raw {
			p, err := strconv.Atoi(k)
			if err != nil {
				return nil, err
			}
			out[int32(p)] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("current snapshot %d not in the metadata", *ltr.Metadata.Current)
}

// waitTranslated waits until the table's offsets reach end for every
// partition, and returns how long that took.
func (n *node) waitTranslated(ns, tbl string, end map[int32]int64, timeout time.Duration) time.Duration {
	n.t.Helper()
	start := time.Now()
	for {
		got, err := n.tableOffsets(ns, tbl)
		done := err == nil
		for p, e := range end {
			if got[p] < e {
				done = false
			}
		}
		if done {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			n.t.Fatalf("table %s.%s at offsets %v (err %v), log at %v after %v\n%s", ns, tbl, got, err, end, timeout, tail(n.logText(), 40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tableRead is what read_table.py reports beside the rows.
type tableRead struct {
	Rows     int64  `json:"rows"`
	Snapshot int64  `json:"snapshot"`
	Offsets  string `json:"offsets"`
	Files    []struct {
		Path  string `json:"path"`
		Bytes int64  `json:"bytes"`
		Rows  int64  `json:"rows"`
	} `json:"files"`
	Namespaces [][]string `json:"namespaces"`
	Tables     [][]string `json:"tables"`
}

// pyiceberg reads the table through the REST catalog with pyiceberg.
func pyiceberg(t *testing.T, python, uri, ns, tbl string) ([]row, tableRead) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rows.txt")
	cmd := exec.Command(python, "read_table.py", uri, ns, tbl, out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("read_table.py: %v\n%s", err, stderr.String())
	}
	var tr tableRead
	if err := json.Unmarshal(stdout, &tr); err != nil {
		t.Fatalf("read_table.py output %q: %v", stdout, err)
	}
	f, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(string(f)), "\n") {
		if line == "" {
			continue
		}
		var r row
		if _, err := fmt.Sscanf(line, "%d %d %s %s", &r.p, &r.o, &r.key, &r.value); err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows, tr
}

// sameRows fails unless the table holds exactly the log's records: each
// (partition, offset) once, with the log's key and value.
func sameRows(t *testing.T, log, table []row) {
	t.Helper()
	cmp := func(a, b row) int {
		if a.p != b.p {
			return int(a.p - b.p)
		}
		return int(a.o - b.o)
	}
	slices.SortFunc(log, cmp)
	slices.SortFunc(table, cmp)
	for i := 1; i < len(table); i++ {
		if table[i].p == table[i-1].p && table[i].o == table[i-1].o {
			t.Fatalf("duplicate row in the table: partition %d offset %d", table[i].p, table[i].o)
		}
	}
	if len(table) != len(log) {
		t.Fatalf("table has %d rows, the log %d records", len(table), len(log))
	}
	for i := range log {
		if log[i] != table[i] {
			t.Fatalf("row %d: table %v, log %v", i, table[i], log[i])
		}
	}
}

// fileSizes summarizes data file sizes: count, smallest, median, largest.
func fileSizes(tr tableRead) string {
	var s []int64
	for _, f := range tr.Files {
		s = append(s, f.Bytes)
	}
	if len(s) == 0 {
		return "no files"
	}
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("%d files, min %d B, median %d B, max %d B", len(s), s[0], s[len(s)/2], s[len(s)-1])
}
