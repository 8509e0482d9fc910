package nativetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binDir holds the aerostream binary built once for the suite; the CLI
// lines run through sh with it first on PATH, so they run as typed.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv("NATIVE_TESTS") == "" {
		fmt.Println("nativetest: set NATIVE_TESTS=1 (make test-native) to run the native protocol acceptance suite")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "aerostream-native-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "aerostream"), "github.com/aerostream/aerostream/tools/aerostream")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building aerostream:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func env(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") && !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	out = append(out, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "AEROSTREAM_LISTENERS_HTTP=127.0.0.1:0")
	return append(out, extra...)
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

// proc is a running aerostream process whose stderr (its log) is kept.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  []string
	line chan string
	done chan error
	out  *syncBuffer
}

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

func startProc(t *testing.T, name string, extraEnv []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "aerostream"), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env(extraEnv...)
	p := &proc{name: name, cmd: cmd, line: make(chan string, 1000), done: make(chan error, 1), out: &syncBuffer{}}
	cmd.Stdout = p.out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
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

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

func (p *proc) waitLog(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(time.Minute)
	for {
		select {
		case l := <-p.line:
			if rx.MatchString(l) {
				return
			}
		case err := <-p.done:
			p.done <- err
			t.Fatalf("%s exited (%v) before logging %q:\n%s", p.name, err, re, p.text())
		case <-timeout:
			t.Fatalf("%s: no log line %q within a minute:\n%s", p.name, re, p.text())
		}
	}
}

// waitOut waits until the process's stdout holds n lines.
func (p *proc) waitOut(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := p.out.String()
		if lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n"); s != "" && len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: stdout has not %d lines within a minute:\n%s\nlog:\n%s", p.name, n, s, p.text())
		}
		select {
		case err := <-p.done:
			p.done <- err
			s = p.out.String()
			if lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n"); s != "" && len(lines) >= n {
				return lines
			}
			t.Fatalf("%s exited (%v) with %q on stdout, want %d lines:\n%s", p.name, err, s, n, p.text())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGINT (Ctrl-C) and returns the exit code.
func (p *proc) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
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
		t.Fatalf("%s: no exit within a minute of SIGINT:\n%s", p.name, p.text())
		return -1
	}
}

// sh runs a command line as a user types it, with aerostream on PATH.
func sh(t *testing.T, extraEnv []string, line string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Env = env(extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", line, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// serve starts `aerostream serve` on free ports and returns its native and
// Kafka addresses once both gateways serve.
func serve(t *testing.T) (nativeAddr, kafkaAddr string) {
	t.Helper()
	nativeAddr, kafkaAddr = freeAddr(t), freeAddr(t)
	p := startProc(t, "serve", nil, "serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--ring-listen", "127.0.0.1:0",
		"--controller-listen", freeAddr(t), "--kafka-listen", kafkaAddr, "--native-listen", nativeAddr)
	p.waitLog(t, `msg="committed offsets loaded"`)
	t.Cleanup(func() {
		if code := p.stop(t); code != 0 {
			t.Errorf("serve exit %d:\n%s", code, p.text())
		}
	})
	return nativeAddr, kafkaAddr
}
