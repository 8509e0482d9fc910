package kafka_test

// Acceptance with real Kafka clients against a real `aerostream serve`
// (and, for TestClientSeparateProcesses, a controller, a store and an
// `aerostream gateway kafka` process): franz-go's integration suite, kcat,
// kafka-python and confluent-kafka. They need tools outside Go, so they run
// only with KAFKA_CLIENT_TESTS=1; `make test-kafka` installs the tools and
// sets it (and KAFKA_PYTHON, the Python with both client libraries).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gate skips the test unless the client tests were asked for.
func gate(t *testing.T) {
	t.Helper()
	if os.Getenv("KAFKA_CLIENT_TESTS") == "" {
		t.Skip("real Kafka client tests: run `make test-kafka` (sets KAFKA_CLIENT_TESTS=1)")
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// aerostream builds the binary once per test run.
func aerostream(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aerostream-kafka-clients")
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

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running aerostream process.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(aerostream(t), args...)
	cmd.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &proc{name: name, cmd: cmd, done: make(chan error, 1)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, p.text())
		}
	})
	return p
}

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitLog waits for a log line matching re.
func (p *proc) waitLog(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(90 * time.Second)
	for !rx.MatchString(p.text()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no log line matching %q after 90s:\n%s", p.name, re, p.text())
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited (%v) before logging %q:\n%s", p.name, err, re, p.text())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and wants a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%s exited with %v:\n%s", p.name, err, p.text())
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("%s did not stop within 60s of SIGTERM", p.name)
	}
}

// serve starts `aerostream serve` on free loopback ports and returns it
// with its Kafka address, once the gateway has loaded its offsets.
func serve(t *testing.T, dataDir string, extra ...string) (*proc, string) {
	t.Helper()
	kafkaAddr := freeAddr(t)
	args := append([]string{"serve", "--data-dir", dataDir, "--kafka-listen", kafkaAddr,
		"--controller-listen", freeAddr(t), "--ring-listen", freeAddr(t),
		"--native-listen", "", "--http-listen", ""}, extra...)
	p := startProc(t, "serve", args...)
	p.waitLog(t, `msg="committed offsets loaded"`)
	return p, kafkaAddr
}

// run runs a command and returns its stdout, failing the test on a
// non-zero exit.
func run(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// kcatCheck: list metadata, produce, consume, consume in a group and resume
// from the committed offsets, and every compression codec.
func kcatCheck(t *testing.T, broker string) {
	t.Helper()
	want := make([]string, 100)
	for i := range want {
		want[i] = fmt.Sprintf("message-%d", i)
	}
	run(t, strings.Join(want, "\n")+"\n", "kcat", "-b", broker, "-P", "-t", "kc-plain", "-k", "k")
	meta := run(t, "", "kcat", "-b", broker, "-L")
	if !strings.Contains(meta, `topic "kc-plain" with 1 partitions`) || !strings.Contains(meta, "at "+broker) {
		t.Fatalf("kcat -L:\n%s", meta)
	}
	got := lines(run(t, "", "kcat", "-b", broker, "-C", "-t", "kc-plain", "-o", "beginning", "-e", "-q"))
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kcat consumed %d lines, want %d: %v", len(got), len(want), got)
	}

	group := []string{"-b", broker, "-G", "kc-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "kc-plain"}
	got = lines(run(t, "", "kcat", group...))
	sort.Strings(got)
	sorted := append([]string(nil), want...)
	sort.Strings(sorted)
	if strings.Join(got, ",") != strings.Join(sorted, ",") {
		t.Fatalf("kcat -G consumed %d lines, want %d", len(got), len(want))
	}
	more := []string{"late-1", "late-2", "late-3"}
	run(t, strings.Join(more, "\n")+"\n", "kcat", "-b", broker, "-P", "-t", "kc-plain")
	if got = lines(run(t, "", "kcat", group...)); strings.Join(got, ",") != strings.Join(more, ",") {
		t.Fatalf("kcat -G after a restart consumed %v, want only %v", got, more)
	}

	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		topic := "kc-" + codec
		run(t, strings.Join(want, "\n")+"\n", "kcat", "-b", broker, "-P", "-t", topic, "-z", codec)
		got := lines(run(t, "", "kcat", "-b", broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q"))
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: kcat consumed %d lines, want %d", codec, len(got), len(want))
		}
	}
}

func TestClientKcat(t *testing.T) {
	gate(t)
	p, broker := serve(t, filepath.Join(t.TempDir(), "data"))
	kcatCheck(t, broker)
	p.stop(t)
}

// TestClientPython runs testdata/clients/resume.py with kafka-python and
// confluent-kafka: produce, consume in a group and commit, restart the
// consumer, resume from the committed offset with nothing missing and
// nothing twice. Between the two clients the whole server restarts, so the
// second one also shows committed offsets surviving a restart.
func TestClientPython(t *testing.T) {
	gate(t)
	python := os.Getenv("KAFKA_PYTHON")
	if python == "" {
		python = "python3"
	}
	data := filepath.Join(t.TempDir(), "data")
	p, broker := serve(t, data)
	for _, client := range []string{"kafka-python", "confluent-kafka"} {
		out := run(t, "", python, "testdata/clients/resume.py", broker, client, "py-"+client, "group-"+client)
		t.Log(strings.TrimSpace(out))
	}
	// The first client's group, after a restart, has nothing left.
	p.stop(t)
	p, broker = serve(t, data)
	out := run(t, "", "kcat", "-b", broker, "-G", "group-kafka-python", "-e", "-q", "py-kafka-python")
	if strings.TrimSpace(out) != "" {
		t.Fatalf("after a restart the group re-read %d records", len(lines(out)))
	}
	p.stop(t)
}

// TestClientPythonTransactions runs testdata/clients/txn.py: a
// confluent-kafka transactional producer commits, aborts and commits, and
// read_committed and read_uncommitted consumers check what each sees.
func TestClientPythonTransactions(t *testing.T) {
	gate(t)
	python := os.Getenv("KAFKA_PYTHON")
	if python == "" {
		python = "python3"
	}
	p, broker := serve(t, filepath.Join(t.TempDir(), "data"))
	out := run(t, "", python, "testdata/clients/txn.py", broker, "py-txn")
	t.Log(strings.TrimSpace(out))
	p.stop(t)
}

// TestClientFranzGo runs franz-go's integration suite (the kgo package's
// tests) against serve, TestTxnEtl (transactions) included; the suite
// skips the share-group, KIP-848 and SASL tests itself when the broker does
// not advertise those keys (or no SASL seeds are given), and the log lists
// them.
func TestClientFranzGo(t *testing.T) {
	gate(t)
	p, broker := serve(t, filepath.Join(t.TempDir(), "data"))
	logFile := filepath.Join(t.TempDir(), "kgo.log")
	f, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-timeout", "20m", "github.com/twmb/franz-go/pkg/kgo")
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+broker, "KGO_TEST_RF=1", "KGO_LOG_LEVEL=none")
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	out, _ := os.ReadFile(logFile)
	counts := map[string]int{}
	var skipped, failed []string
	top := regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+)`)
	sub := regexp.MustCompile(`^\s+--- (SKIP|FAIL): (\S+)`)
	for _, l := range strings.Split(string(out), "\n") {
		if m := top.FindStringSubmatch(l); m != nil {
			counts[m[1]]++
			switch m[1] {
			case "SKIP":
				skipped = append(skipped, m[2])
			case "FAIL":
				failed = append(failed, m[2])
			}
		} else if m := sub.FindStringSubmatch(l); m != nil {
			if m[1] == "SKIP" {
				skipped = append(skipped, m[2])
			} else {
				failed = append(failed, m[2])
			}
		}
	}
	t.Logf("franz-go kgo suite: %d passed, %d failed, %d skipped by the suite",
		counts["PASS"], counts["FAIL"], counts["SKIP"])
	t.Logf("skipped by the suite: %s", strings.Join(skipped, ", "))
	if runErr != nil || len(failed) > 0 {
		tail := string(out)
		if len(tail) > 20000 {
			tail = tail[len(tail)-20000:]
		}
		t.Fatalf("franz-go suite failed (%v); failed: %s\n%s", runErr, strings.Join(failed, ", "), tail)
	}
	p.stop(t)
}

// TestClientSeparateProcesses runs a controller, a store and an
// `aerostream gateway kafka` as three processes on loopback, and passes the
// kcat check through the gateway, which reaches the store over the shard
// ring.
func TestClientSeparateProcesses(t *testing.T) {
	gate(t)
	dir := t.TempDir()
	ctl, ringAddr, kafkaAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cp := startProc(t, "controller", "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", ctl, "--controller.bootstrap")
	cp.waitLog(t, `msg=running`)
	sp := startProc(t, "store", "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", ringAddr,
		"--controller.join", ctl, "--controller.node_id", "2", "--kafka-listen", "", "--native-listen", "", "--http-listen", "")
	sp.waitLog(t, `msg="registered with the controller"`)
	gp := startProc(t, "gateway", "gateway", "kafka", "--kafka-listen", kafkaAddr, "--gateway.ring_addr", ringAddr,
		"--controller.join", ctl, "--gateway.node_id", "1002")
	gp.waitLog(t, `msg="committed offsets loaded"`)
	kcatCheck(t, kafkaAddr)
	gp.stop(t)
	sp.stop(t)
	cp.stop(t)
	if !strings.Contains(gp.text(), "ring_addr="+ringAddr) {
		t.Errorf("the gateway log does not name the ring it used")
	}
}
