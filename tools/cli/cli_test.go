package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tools/cli"
)

// binary is the aerostream executable built once for the tests that run a
// real process.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aerostream-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "aerostream")
	build := exec.Command("go", "build", "-o", binary, "github.com/aerostream/aerostream/tools/aerostream")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building aerostream:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	// goleak.VerifyTestMain would exit before the binary's folder is
	// removed, so the check runs here.
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment for a child: no AEROSTREAM_* from the
// developer's shell, and a working directory without an aerostream.toml.
// The HTTP admin listener and the cold tier default to an ephemeral port
// and off, so that tests running side by side do not fight over :9001; a
// test that wants them sets them by flag.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AEROSTREAM_LISTENERS_HTTP=127.0.0.1:0")
	return append(env, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary to completion; it must not take long.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = cleanEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// wantOneLineFailure checks a failed start: non-zero exit, nothing on
// stdout, exactly one line on stderr, containing want.
func wantOneLineFailure(t *testing.T, r result, want string) {
	t.Helper()
	if r.code == 0 {
		t.Fatalf("exit 0, want failure; stderr:\n%s", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout: %q", r.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "aerostream: ") || !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q does not contain %q", r.stderr, want)
	}
}

func TestVersion(t *testing.T) {
	r := run(t, nil, "version")
	if r.code != 0 || !regexp.MustCompile(`^aerostream \S+ go\S+ \w+/\w+\n$`).MatchString(r.stdout) {
		t.Errorf("version: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestBadConfigKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(cfg, []byte("[logstore]\nflush = \"always\"\nshard = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	for _, cmd := range []string{"serve", "store"} {
		r := run(t, nil, cmd, "--config", cfg, "--data-dir", data, "--ring-listen", "127.0.0.1:0")
		wantOneLineFailure(t, r, `unknown key "logstore.shard"`)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data dir was created by a start that failed on its config (%v)", err)
	}
}

func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"store", "--logstore.flush=sometimes"}, "logstore.flush"},
		{[]string{"AEROSTREAM_LOGSTORE_FLUSH=sometimes"}, []string{"serve"}, "env AEROSTREAM_LOGSTORE_FLUSH"},
		{nil, []string{"store", "--logstore.shards=many"}, "logstore.shards"},
		{nil, []string{"store", "--ring-listen=7001"}, "listeners.ring"},
		{nil, []string{"store", "--ring-listen="}, "listeners.ring is empty"},
		{nil, []string{"store", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{nil, []string{"store", "--config", "/nonexistent/aerostream.toml"}, "/nonexistent/aerostream.toml"},
		{nil, []string{"stroe"}, `unknown command "stroe"`},
		{nil, []string{"store", "extra"}, `unknown command "extra"`},
	} {
		wantOneLineFailure(t, run(t, tc.env, tc.args...), tc.want)
	}
}

func TestPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := filepath.Join(t.TempDir(), "data")
	for _, cmd := range []string{"serve", "store"} {
		start := time.Now()
		r := run(t, nil, cmd, "--data-dir", data, "--ring-listen", ln.Addr().String())
		wantOneLineFailure(t, r, "address already in use")
		if !strings.Contains(r.stderr, ln.Addr().String()) {
			t.Errorf("%s: error does not name the address: %q", cmd, r.stderr)
		}
		t.Logf("%s failed in %v", cmd, time.Since(start))
	}
	// The listener is bound before any state is opened.
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data dir was touched by a start that failed on its port (%v)", err)
	}
}

func TestDataDirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "store", "--data-dir", file, "--ring-listen", "127.0.0.1:0")
	wantOneLineFailure(t, r, "data_dir "+file)
}

// proc is a running aerostream daemon whose stderr (the log) is collected.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	line chan string
	done chan error
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startEnv(t, cleanEnv(env...), args...)
}

// startEnv is start with the whole environment given.
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, line: make(chan string, 1000), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
			select {
			case p.line <- sc.Text():
			default:
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFor returns the first log line matching re, or fails.
func (p *proc) waitFor(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(time.Minute)
	for {
		select {
		case l := <-p.line:
			if m := rx.FindStringSubmatch(l); m != nil {
				return m
			}
		case err := <-p.done:
			p.done <- err
			t.Fatalf("process exited (%v) before logging %q:\n%s", err, re, p.logText())
		case <-timeout:
			t.Fatalf("no log line %q within a minute:\n%s", re, p.logText())
		}
	}
}

// sawOrWaitFor is waitFor for a line that may already have gone by: one
// logged by another goroutine than the line waited for before it, in
// either order.
func (p *proc) sawOrWaitFor(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	p.mu.Lock()
	for _, l := range p.log {
		if rx.MatchString(l) {
			p.mu.Unlock()
			return
		}
	}
	p.mu.Unlock()
	p.waitFor(t, re)
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// stop sends sig and waits for the exit code.
func (p *proc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(time.Minute):
		t.Fatalf("no exit within a minute of %v:\n%s", sig, p.logText())
		return -1
	}
}

// The README's cluster runs several stores on one machine without naming
// their admin ports: a default admin port that is taken moves to a free
// one, while a port the user chose still fails the start.
func TestDefaultAdminPortTakenMoves(t *testing.T) {
	const def = "127.0.0.1:9001"
	if ln, err := net.Listen("tcp", def); err == nil {
		defer ln.Close()
	} // else something else holds it, which is the case under test too
	data := filepath.Join(t.TempDir(), "data")
	env := slices.DeleteFunc(cleanEnv(), func(kv string) bool { return strings.HasPrefix(kv, "AEROSTREAM_LISTENERS_HTTP=") })
	p := startEnv(t, env, "store", "--data-dir", data, "--ring-listen", "127.0.0.1:0")
	p.waitFor(t, `default admin HTTP port is taken`)
	m := p.waitFor(t, `msg=running .*http_addr=(\S+)`)
	if m[1] == def {
		t.Fatalf("admin API on the taken port %s", def)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.logText())
	}
	r := run(t, nil, "store", "--data-dir", filepath.Join(t.TempDir(), "d2"), "--ring-listen", "127.0.0.1:0", "--http-listen", def)
	wantOneLineFailure(t, r, "address already in use")
}

func TestStoreRunsAndStopsOnSIGTERM(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, nil, "store", "--data-dir", data, "--ring-listen", "127.0.0.1:0")
	m := p.waitFor(t, `msg=running .*ring_addr=(\S+)`)
	c, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatalf("ring listener %s: %v", m[1], err)
	}
	c.Close()

	// A second daemon on the same data directory is refused, in one line.
	r := run(t, nil, "store", "--data-dir", data, "--ring-listen", "127.0.0.1:0")
	wantOneLineFailure(t, r, "in use by another aerostream process")

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.logText())
	}
	if !strings.Contains(p.logText(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", p.logText())
	}
	for _, dir := range []string{"catalog"} {
		if _, err := os.Stat(filepath.Join(data, dir)); err != nil {
			t.Errorf("data dir: %v", err)
		}
	}

	// And it starts again on the same data directory.
	p = start(t, nil, "store", "--data-dir", data, "--ring-listen", "127.0.0.1:0")
	p.waitFor(t, `msg=running`)
	if code := p.stop(t, os.Interrupt); code != 0 {
		t.Fatalf("exit %d after SIGINT:\n%s", code, p.logText())
	}
}

func TestServeOpensOnlyWhatExists(t *testing.T) {
	// Addresses free now; serve must leave the ones of parts not built
	// yet alone, so we can still bind them while it runs.
	free := make(map[string]string)
	for _, name := range []string{"kafka", "native", "http", "controller"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		free[name] = ln.Addr().String()
		ln.Close()
	}
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, []string{"AEROSTREAM_LOG_FORMAT=json"}, "serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0",
		"--kafka-listen", free["kafka"], "--native-listen", free["native"],
		"--http-listen", free["http"], "--controller-listen", free["controller"])
	m := p.waitFor(t, `"msg":"running".*"ring_addr":"([^"]+)"`)
	if c, err := net.Dial("tcp", m[1]); err != nil {
		t.Errorf("ring listener %s: %v", m[1], err)
	} else {
		c.Close()
	}
	// The controller is built: serve holds its address and answers there.
	if c, err := net.Dial("tcp", free["controller"]); err != nil {
		t.Errorf("controller listener %s: %v", free["controller"], err)
	} else {
		c.Close()
	}
	delete(free, "controller")
	// So is the HTTP admin API.
	if c, err := net.Dial("tcp", free["http"]); err != nil {
		t.Errorf("http listener %s: %v", free["http"], err)
	} else {
		c.Close()
	}
	delete(free, "http")
	// And the Kafka gateway.
	if c, err := net.Dial("tcp", free["kafka"]); err != nil {
		t.Errorf("kafka listener %s: %v", free["kafka"], err)
	} else {
		c.Close()
	}
	delete(free, "kafka")
	// And the native gateway.
	if c, err := net.Dial("tcp", free["native"]); err != nil {
		t.Errorf("native listener %s: %v", free["native"], err)
	} else {
		c.Close()
	}
	delete(free, "native")
	for name, addr := range free {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("serve holds the %s address %s although that part is not built: %v", name, addr, err)
			continue
		}
		ln.Close()
	}
	log := p.logText()
	if !strings.Contains(log, `ring(in-process)`) {
		t.Errorf("log does not list the in-process ring:\n%s", log)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, log)
	}
}

func TestRingOnUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "ring.sock")
	// A socket file left by a process that died is taken over.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()

	p := start(t, nil, "store", "--data-dir", filepath.Join(dir, "data"), "--ring-listen", "unix:"+sock)
	p.waitFor(t, `msg=running .*ring_addr=unix:`)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// A live one is not.
	r := run(t, nil, "store", "--data-dir", filepath.Join(dir, "data2"), "--ring-listen", "unix:"+sock)
	wantOneLineFailure(t, r, "address already in use")

	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.logText())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file left behind (%v)", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestInProcessStopLeaksNothing runs serve inside the test and stops it
// through its context: every goroutine it started must be gone.
func TestInProcessStopLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, []string{"serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0", "--kafka-listen", "127.0.0.1:0"},
			cli.Env{Stdout: &bytes.Buffer{}, Stderr: &stderr, Environ: cleanEnv()})
	}()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "msg=running") {
		if time.Now().After(deadline) {
			t.Fatalf("not running after a minute:\n%s", stderr.String())
		}
		select {
		case c := <-code:
			t.Fatalf("exited %d:\n%s", c, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d:\n%s", c, stderr.String())
	}
}

// TestUnknownCommand: a mistyped command is refused with exit 2, never
// answered with help and exit 0 (issue 23, item 6).
func TestUnknownCommand(t *testing.T) {
	for _, args := range [][]string{
		{"nope"},
		{"topic", "creat", "x"},
		{"tier", "lss"},
		{"gateway", "kafak"},
		{"controller", "stauts"},
	} {
		r := run(t, nil, args...)
		if r.code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr %q", args, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "unknown command") {
			t.Errorf("%v: stderr %q does not say unknown command", args, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("%v: help on stdout instead of an error:\n%s", args, r.stdout)
		}
	}
	// A typo gets a suggestion.
	if r := run(t, nil, "topic", "creat", "x"); !strings.Contains(r.stderr, `unknown command "creat"`) || !strings.Contains(r.stderr, `"create"`) {
		t.Errorf("topic creat: %q", r.stderr)
	}
	// A group asked for nothing still shows its help.
	if r := run(t, nil, "topic"); r.code != 0 || !strings.Contains(r.stdout, "create") {
		t.Errorf("topic: exit %d stdout %q", r.code, r.stdout)
	}
}

// TestMissingArguments: a command without the argument it needs names it
// and exits 2; none reaches for a controller or a store.
func TestMissingArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create"}, "missing the NAME of the topic to create"},
		{[]string{"topic", "delete"}, "missing the NAME"},
		{[]string{"topic", "alter"}, "missing the NAME of the topic to alter"},
		{[]string{"topic", "alter", "a", "b"}, "too many arguments"},
		// tier describe shows one segment: which one is not guessed.
		{[]string{"tier", "describe", "--topic", "t"}, `required flag(s) "base", "partition" not set`},
		{[]string{"tier", "describe", "--topic", "t", "--partition", "0"}, `required flag(s) "base" not set`},
		{[]string{"tier", "rehydrate", "--topic", "t"}, `required flag(s) "partition" not set`},
	} {
		r := run(t, nil, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestWrongControllerAddress: a --controller where nothing listens fails
// with the dial error and the address, instead of waiting out --timeout in
// silence. The --timeout here outlasts run's one-minute limit, so a
// command that waits it out fails the test.
func TestWrongControllerAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"topic", "list"}, {"topic", "create", "x"}, {"controller", "status"}} {
		r := run(t, nil, append(args, "--controller", addr, "--timeout", "10m")...)
		if r.code != 1 || !strings.Contains(r.stderr, addr) || !strings.Contains(r.stderr, "connection refused") {
			t.Errorf("%v --controller %s: exit %d stderr %q, want 1, the address and the dial error", args, addr, r.code, r.stderr)
		}
	}
}

// TestServeRefusesGatewayIDClash: serve's gateway and store cannot share a
// node id; the start fails in one line naming both keys, before binding
// anything (issue 23, item 3).
func TestServeRefusesGatewayIDClash(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	r := run(t, nil, "serve", "--data-dir", data, "--gateway.node_id", "1", "--kafka-listen", "127.0.0.1:0",
		"--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0")
	wantOneLineFailure(t, r, "gateway.node_id 1 clashes with controller.node_id 1")
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("data dir was created by a start refused on its ids (%v)", err)
	}
}

// TestStoreRefusesNonPositiveID: a store's node id goes into follower
// fetches, where 0 means a consumer; store and serve refuse it in one line
// before binding anything.
func TestStoreRefusesNonPositiveID(t *testing.T) {
	for _, args := range [][]string{
		{"store", "--controller.join", "127.0.0.1:1", "--controller.node_id", "0", "--ring-listen", "127.0.0.1:0"},
		{"serve", "--controller.node_id", "0", "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0", "--kafka-listen", ""},
	} {
		data := filepath.Join(t.TempDir(), "data")
		r := run(t, nil, append(args, "--data-dir", data, "--http-listen", "", "--native-listen", "")...)
		wantOneLineFailure(t, r, "controller.node_id 0: a store's node id must be > 0")
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Errorf("%s: data dir was created by a start refused on its id (%v)", args[0], err)
		}
	}
}

// TestTierCommandsAgainstServe runs serve with its admin API and checks
// what the tier commands and the admin listener answer.
func TestTierCommandsAgainstServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, nil, "serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0",
		"--kafka-listen", "127.0.0.1:0", "--native-listen", "", "--http-listen", "127.0.0.1:0")
	m := p.waitFor(t, `msg=running .*http_addr=(\S+)`)
	admin := m[1]

	// An unknown topic is an error, not an empty table.
	r := run(t, nil, "tier", "ls", "--topic", "nope", "--admin", admin)
	if r.code != 1 || !strings.Contains(r.stderr, `unknown topic "nope"`) {
		t.Errorf("tier ls --topic nope: exit %d stderr %q, want 1 and unknown topic", r.code, r.stderr)
	}
	r = run(t, nil, "tier", "ls", "--admin", admin)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "TOPIC") {
		t.Errorf("tier ls: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, nil, "tier", "describe", "--topic", "nope", "--partition", "0", "--base", "0", "--admin", admin)
	if r.code != 1 || !strings.Contains(r.stderr, "no such segment nope/0@0") {
		t.Errorf("tier describe of nothing: exit %d stderr %q", r.code, r.stderr)
	}

	// /metrics is served; /debug/pprof is not, unless admin.pprof is set.
	for path, want := range map[string]int{"/metrics": 200, "/debug/pprof/": 404} {
		resp, err := http.Get("http://" + admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.logText())
	}
}
