package kafka_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth/authtest"
)

// startProcEnv is startProc with extra environment variables (startProc
// drops every AEROSTREAM_* one of the test's own environment).
func startProcEnv(t *testing.T, name, dir string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(aerostream(t), args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AEROSTREAM_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
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

// runIn runs a command in dir with stdin and returns stdout, stderr and
// whether it exited 0.
func runIn(t *testing.T, dir, stdin, name string, args ...string) (string, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err == nil
}

// TestClientKcatSASLSSL runs the README's secure setup as written: serve
// with secure.toml and a bootstrap admin, alice created from stdin, her
// ACLs added, then kcat over SASL_SSL with SCRAM-SHA-256 and the test's
// own CA. alice produces to and reads orders; she is refused, with
// TOPIC_AUTHORIZATION_FAILED and an audit line, on a topic her ACLs do
// not name; a wrong password is refused.
func TestClientKcatSASLSSL(t *testing.T) {
	gate(t)
	dir := t.TempDir()
	if _, err := authtest.NewPKI(dir); err != nil {
		t.Fatal(err)
	}
	kafkaAddr, ctlAddr := freeAddr(t), freeAddr(t)
	toml := fmt.Sprintf(`# secure.toml
data_dir = "data"
[listeners]
kafka = "SASL_SSL://%s"
controller = "%s"
ring = "%s"
native = ""
http = ""
[tls]
cert_file = "server.pem"
key_file = "server-key.pem"
ca_file = "ca.pem"
[auth]
sasl_mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]
authorizer = true
super_users = ["User:admin"]
bootstrap_user = "admin"
`, kafkaAddr, ctlAddr, freeAddr(t))
	if err := os.WriteFile(filepath.Join(dir, "secure.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startProcEnv(t, "serve", dir, []string{"AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret"}, "serve", "--config", "secure.toml")
	srv.waitLog(t, `msg="bootstrap user created" user=admin`)
	srv.waitLog(t, `msg="committed offsets loaded"`)

	bin := aerostream(t)
	ctl := "--controller=" + ctlAddr
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, ok := runIn(t, dir, stdin, bin, append(args, ctl)...)
		if !ok {
			t.Fatalf("aerostream %s: %s%s", strings.Join(args, " "), out, errOut)
		}
		return out
	}
	must("alice-secret", "user", "create", "alice", "--mechanism", "SCRAM-SHA-256", "--password-stdin")
	must("", "acl", "add", "--allow", "User:alice", "--operation", "WRITE,READ,DESCRIBE", "--topic", "orders")
	must("", "acl", "add", "--allow", "User:alice", "--operation", "READ", "--group", "g1")
	must("", "topic", "create", "orders", "secret")
	if users := must("", "user", "list"); !strings.Contains(users, "alice") || !strings.Contains(users, "admin") || strings.Contains(users, "secret") {
		t.Errorf("user list:\n%s", users)
	}

	kcat := func(user, pass string, args ...string) []string {
		return append([]string{"-b", kafkaAddr, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-256",
			"-X", "sasl.username=" + user, "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=ca.pem"}, args...)
	}
	if out, errOut, ok := runIn(t, dir, "o1\no2\no3\n", "kcat", kcat("alice", "alice-secret", "-P", "-t", "orders")...); !ok {
		t.Fatalf("kcat -P as alice: %s%s", out, errOut)
	}
	out, errOut, ok := runIn(t, dir, "", "kcat", kcat("alice", "alice-secret", "-C", "-t", "orders", "-o", "beginning", "-e", "-c", "3")...)
	if !ok || strings.Join(lines(out), ",") != "o1,o2,o3" {
		t.Fatalf("kcat -C as alice: ok=%v out=%q err=%s", ok, out, errOut)
	}

	// A topic alice's ACLs do not name.
	start := time.Now()
	_, errOut, ok = runIn(t, dir, "x\n", "kcat", kcat("alice", "alice-secret", "-P", "-t", "secret")...)
	t.Logf("the denied produce took %v", time.Since(start))
	if ok || !strings.Contains(strings.ToLower(errOut), "authorization") {
		t.Errorf("kcat -P to secret as alice: ok=%v stderr:\n%s", ok, errOut)
	}
	srv.waitLog(t, `msg="operation denied" .*audit=true principal=User:alice client=127.0.0.1 operation=(WRITE|DESCRIBE) resource_type=TOPIC resource=secret`)

	// A wrong password.
	_, errOut, ok = runIn(t, dir, "", "kcat", kcat("alice", "wrong", "-L")...)
	if ok || !strings.Contains(strings.ToLower(errOut), "authentication") {
		t.Errorf("kcat with a wrong password: ok=%v stderr:\n%s", ok, errOut)
	}
	// The super user sees both topics.
	out, errOut, ok = runIn(t, dir, "", "kcat", kcat("admin", "admin-secret", "-L")...)
	if !ok || !strings.Contains(out, `topic "secret"`) || !strings.Contains(out, `topic "orders"`) {
		t.Errorf("kcat -L as admin: ok=%v\n%s%s", ok, out, errOut)
	}
	// alice sees only orders.
	out, _, _ = runIn(t, dir, "", "kcat", kcat("alice", "alice-secret", "-L")...)
	if !strings.Contains(out, `topic "orders"`) || strings.Contains(out, `topic "secret"`) {
		t.Errorf("kcat -L as alice:\n%s", out)
	}
	srv.stop(t)
}

// TestClientFranzGoSASL runs franz-go's own SCRAM tests (TestSCRAMAuth,
// TestSCRAMAuthBadCredentials, in pkg/kgo) against a SASL_PLAINTEXT
// serve, with SHA-256 and then SHA-512; TestClientFranzGo runs the rest of
// that suite on a PLAINTEXT listener, where it skips them.
func TestClientFranzGoSASL(t *testing.T) {
	gate(t)
	dir := t.TempDir()
	kafkaAddr := freeAddr(t)
	srv := startProcEnv(t, "serve", dir, []string{"AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD=admin-secret"}, "serve",
		"--data-dir", "data", "--kafka-listen", "SASL_PLAINTEXT://"+kafkaAddr, "--controller-listen", freeAddr(t),
		"--ring-listen", freeAddr(t), "--native-listen", "", "--http-listen", "", "--auth.bootstrap_user", "admin")
	srv.waitLog(t, `msg="committed offsets loaded"`)
	for _, alg := range []string{"256", "512"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-run", "^TestSCRAMAuth", "github.com/twmb/franz-go/pkg/kgo")
		cmd.Env = append(os.Environ(), "KGO_TEST_SCRAM_SEEDS="+kafkaAddr, "KGO_TEST_SCRAM=admin:admin-secret:"+alg, "KGO_LOG_LEVEL=none")
		out, err := cmd.CombinedOutput()
		cancel()
		text := string(out)
		for _, name := range []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials"} {
			if !strings.Contains(text, "--- PASS: "+name+" ") {
				t.Errorf("SCRAM-SHA-%s: %s did not pass (%v):\n%s", alg, name, err, text)
			}
		}
	}
	srv.stop(t)
}
