package registry_test

// Acceptance with confluent-kafka's SchemaRegistryClient and serializers
// (Python) and franz-go's sr client against a real `aerostream serve`.
// They need the Python client with its Avro, Protobuf and JSON extras, so
// they run only with REGISTRY_CLIENT_TESTS=1; `make test-registry`
// installs the client into bin/kafka-venv and sets it, with KAFKA_PYTHON.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
)

func gate(t *testing.T) string {
	t.Helper()
	if os.Getenv("REGISTRY_CLIENT_TESTS") == "" {
		t.Skip("real schema registry client tests: run `make test-registry` (sets REGISTRY_CLIENT_TESTS=1)")
	}
	python := os.Getenv("KAFKA_PYTHON")
	if python == "" {
		t.Fatal("REGISTRY_CLIENT_TESTS is set but KAFKA_PYTHON is not: the Python with confluent-kafka[avro,protobuf,json]")
	}
	return python
}

// buildBinary builds aerostream into a temporary directory, unless
// AEROSTREAM_BIN names one already built.
func buildBinary(t testing.TB) string {
	t.Helper()
	if b := os.Getenv("AEROSTREAM_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "aerostream")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/aerostream/aerostream/tools/aerostream").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// lockedBuffer collects a process's log from its reader goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type served struct {
	kafka, registry, http string
}

// startServe runs `aerostream serve` on free loopback ports and waits
// until its registry answers.
func startServe(t testing.TB) served {
	t.Helper()
	s := served{kafka: freeAddr(t), registry: freeAddr(t), http: freeAddr(t)}
	p := startProc(t, "serve", "serve", "--data-dir", t.TempDir(),
		"--kafka-listen", s.kafka, "--native-listen", freeAddr(t), "--http-listen", s.http,
		"--controller-listen", freeAddr(t), "--ring-listen", freeAddr(t), "--schema-registry-listen", s.registry)
	p.waitRegistry(t, s.registry)
	return s
}

// startGateway runs a controller, a store and `aerostream gateway kafka`
// with its registry listener, and waits until the registry answers.
func startGateway(t testing.TB) served {
	t.Helper()
	ctl := freeAddr(t)
	c := startProc(t, "controller", "controller", "--data-dir", t.TempDir(), "--controller-listen", ctl,
		"--controller.bootstrap", "--controller.node_id", "1", "--http-listen", freeAddr(t))
	c.waitLog(t, "msg=running")
	st := startProc(t, "store", "store", "--data-dir", t.TempDir(), "--ring-listen", freeAddr(t),
		"--controller.join", ctl, "--controller.node_id", "11", "--http-listen", freeAddr(t))
	st.waitLog(t, "msg=running")
	s := served{kafka: freeAddr(t), registry: freeAddr(t)}
	g := startProc(t, "gateway", "gateway", "kafka", "--data-dir", t.TempDir(), "--kafka-listen", s.kafka,
		"--controller.join", ctl, "--schema-registry-listen", s.registry)
	g.waitRegistry(t, s.registry)
	return s
}

// proc is a running aerostream process with its log.
type proc struct {
	name string
	log  lockedBuffer
	// exited is closed when the process has exited, with err its status.
	exited chan struct{}
	err    error
}

func startProc(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.log.add(sc.Text() + "\n")
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, p.log.String())
		}
	})
	return p
}

// wait polls ok every 100 ms for up to a minute, failing if the process
// exits first.
func (p *proc) wait(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		select {
		case <-p.exited:
			t.Fatalf("%s exited: %v\n%s", p.name, p.err, p.log.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s did not happen within 60s\n%s", p.name, what, p.log.String())
		}
	}
}

func (p *proc) waitLog(t testing.TB, s string) {
	t.Helper()
	p.wait(t, "log line "+s, func() bool { return strings.Contains(p.log.String(), s) })
}

func (p *proc) waitRegistry(t testing.TB, addr string) {
	t.Helper()
	p.wait(t, "the registry answering", func() bool {
		resp, err := http.Get("http://" + addr + "/subjects")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// runClients runs confluent_clients.py against s and checks every step.
func runClients(t *testing.T, python string, s served) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, filepath.Join("testdata", "confluent_clients.py"),
		s.kafka, "http://"+s.registry, fmt.Sprint(time.Now().UnixNano())).CombinedOutput()
	t.Logf("confluent_clients.py:\n%s", out)
	if err != nil {
		t.Fatalf("confluent_clients.py: %v", err)
	}
	for _, want := range []string{"avro produce/consume", "avro incompatible change gets 409",
		"avro compatible change registers version 2", "protobuf produce/consume",
		"json schema produce/consume", "broker-side validation refuses a wrong id"} {
		if !strings.Contains(string(out), "OK "+want+"\n") {
			t.Errorf("no OK for %q", want)
		}
	}
}

// TestConfluentClientsGateway: the same against the registry and the Kafka
// port of a separate `aerostream gateway kafka` process, whose registry
// reaches the state over the controller client.
func TestConfluentClientsGateway(t *testing.T) {
	python := gate(t)
	runClients(t, python, startGateway(t))
}

// TestConfluentClients: confluent-kafka's serializers produce and consume
// Avro, Protobuf and JSON Schema records through AeroStream with schemas
// registered in its registry; an incompatible Avro change gets 409, a
// compatible one version 2; a topic with schema validation refuses a
// record whose id is not the topic's.
func TestConfluentClients(t *testing.T) {
	python := gate(t)
	s := startServe(t)
	runClients(t, python, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// franz-go's sr client against the same registry, through its mount
	// on the HTTP admin listener: it sees what the Python client wrote.
	cl, err := sr.NewClient(sr.URLs("http://" + s.http + "/schema-registry"))
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := cl.Subjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var avro string
	for _, s := range subjects {
		if strings.HasPrefix(s, "avro-") {
			avro = s
		}
	}
	if avro == "" {
		t.Fatalf("subjects through /schema-registry: %v", subjects)
	}
	latest, err := cl.SchemaByVersion(ctx, avro, -1)
	if err != nil || latest.Version != 2 || !strings.Contains(latest.Schema.Schema, "email") {
		t.Fatalf("latest of %s through /schema-registry = %+v, %v", avro, latest, err)
	}
}
