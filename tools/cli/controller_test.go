package cli_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// wantOK checks a command succeeded and its stdout contains each of want.
func wantOK(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout %q does not contain %q", r.stdout, w)
		}
	}
}

// TestServeControllerAndTopicCLI: serve runs a single-voter controller;
// `aerostream topic` reaches it, and the store creates and deletes the
// partitions placement gives it. The metadata survives a restart.
func TestServeControllerAndTopicCLI(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	ctl := freeAddr(t)
	args := []string{"serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", ctl,
		"--kafka-listen", "", "--native-listen", "", "--http-listen", ""}
	p := start(t, nil, args...)
	p.waitFor(t, `msg=running .*parts=\S*controller`)
	// serve logs running once its voter leads; the store may register
	// before that.
	p.sawOrWaitFor(t, `msg="registered with the controller"`)

	c := "--controller=" + ctl
	wantOK(t, run(t, nil, "topic", c, "create", "orders", "-p", "3", "-c", "retention.ms=3600000"),
		"created orders: 3 partitions, replication factor 1, id ")
	for i := 0; i < 3; i++ {
		p.waitFor(t, `msg="created partition".* topic=orders`)
	}
	wantOK(t, run(t, nil, "topic", c, "create", "v", "--validate-only"), "valid (not created) v")
	wantOK(t, run(t, nil, "topic", c, "list"), "orders\n")
	r := run(t, nil, "topic", c, "list")
	if strings.Contains(r.stdout, "v\n") {
		t.Errorf("validate-only created a topic: %q", r.stdout)
	}
	wantOK(t, run(t, nil, "topic", c, "describe", "orders"), "partition 2", "leader 1", "online", "retention.ms=3600000", "(topic_config)")
	wantOK(t, run(t, nil, "topic", c, "alter", "orders", "-p", "4", "-c", "segment.ms=60000"), "now 4 partitions", "configs altered")
	p.waitFor(t, `msg="created partition".* topic=orders partition=3`)
	wantOK(t, run(t, nil, "controller", "status", c), "leader:", "voter 1:", "store 1:", "live")

	// Bad input: one line each, naming the problem.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "orders"}, "orders: topic already exists"},
		{[]string{"create", "r3", "-r", "3"}, "replication factor 3 is larger than the 1 live store(s)"},
		{[]string{"create", "bad", "-c", "retention.ms=soon"}, `retention.ms = "soon" is not an integer`},
		{[]string{"create", "bad", "-c", "no.such.config=1"}, `unknown topic config "no.such.config"`},
		{[]string{"create", "bad/name"}, "invalid topic name"},
		{[]string{"alter", "orders", "-p", "2"}, "has 4 partitions; the count can only grow"},
		{[]string{"alter", "nope", "-c", "retention.ms=1"}, `unknown topic: "nope"`},
		{[]string{"delete", "nope"}, `unknown topic: "nope"`},
		{[]string{"describe", "nope"}, "nope: unknown topic"},
	} {
		wantOneLineFailure(t, run(t, nil, append([]string{"topic", c}, tc.args...)...), tc.want)
	}
	wantOneLineFailure(t, run(t, nil, "topic", "--controller="+freeAddr(t), "--timeout=1s", "list"), "no controller reachable")

	// Restart: the topic and its placement come back from <data>/raft.
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.logText())
	}
	if _, err := os.Stat(filepath.Join(data, "raft", "log")); err != nil {
		t.Errorf("raft state: %v", err)
	}
	p = start(t, nil, args...)
	p.waitFor(t, `msg=running`)
	wantOK(t, run(t, nil, "topic", c, "describe", "orders"), "partitions 4", "segment.ms=60000")
	wantOK(t, run(t, nil, "topic", c, "delete", "orders"), "deleted orders")
	for i := 0; i < 4; i++ {
		p.waitFor(t, `msg="deleted partition".* topic=orders`)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.logText())
	}
}

func TestControllerStartRefusals(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--data-dir", filepath.Join(dir, "a"), "--controller-listen", "127.0.0.1:0"}, "holds no controller state: set controller.bootstrap"},
		{[]string{"controller", "--data-dir", filepath.Join(dir, "b"), "--controller-listen", ln.Addr().String(), "--controller.bootstrap"}, "address already in use"},
		{[]string{"controller", "--data-dir", filepath.Join(dir, "c"), "--controller.bootstrap", "--controller.join", "127.0.0.1:1"}, "bootstrap and join are exclusive"},
		{[]string{"controller", "--data-dir", filepath.Join(dir, "d"), "--controller-listen", ""}, "listeners.controller is empty"},
		{[]string{"serve", "--data-dir", filepath.Join(dir, "e"), "--controller.join", "127.0.0.1:1"}, "serve runs its own single-voter controller"},
		{[]string{"controller", "add-voter", "--id", "2"}, "needs --id and --address"},
		{[]string{"topic", "create"}, "missing the NAME of the topic to create"},
		{[]string{"topic", "create", "x", "-c", "novalue"}, `want NAME=VALUE`},
	} {
		wantOneLineFailure(t, run(t, nil, tc.args...), tc.want)
	}
}

// TestStoreJoinsController: `aerostream store --controller.join` registers
// with a separate `aerostream controller` and creates what placement gives
// it.
func TestStoreJoinsController(t *testing.T) {
	dir := t.TempDir()
	ctl := freeAddr(t)
	cp := start(t, nil, "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", ctl, "--controller.bootstrap")
	cp.waitFor(t, `msg=running .*controller_addr=`)
	sp := start(t, nil, "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", "127.0.0.1:0",
		"--controller.join", ctl, "--controller.node_id", "7", "--kafka-listen", "", "--native-listen", "", "--http-listen", "")
	sp.waitFor(t, `msg=running .*parts=\S*controller-member`)
	sp.sawOrWaitFor(t, `msg="registered with the controller"`)
	wantOK(t, run(t, nil, "topic", "--controller="+ctl, "create", "events", "-p", "2"), "created events")
	for i := 0; i < 2; i++ {
		sp.waitFor(t, `msg="created partition".* node=7 topic=events`)
	}
	wantOK(t, run(t, nil, "controller", "status", "--controller="+ctl), "store 7:", "live, ")
	if code := sp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("store exit %d:\n%s", code, sp.logText())
	}
	if code := cp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("controller exit %d:\n%s", code, cp.logText())
	}
}

// TestClusterSecret: a controller given auth.controller_secret_file
// refuses a CLI without the secret, or with another one, each with one
// line naming the problem, logs the refusal and carries on; a store
// given the same file registers, and the CLI holding it (by flag or by
// the key's environment variable) creates a topic the store then holds;
// the older secret on the file's second line is still accepted.
func TestClusterSecret(t *testing.T) {
	dir := t.TempDir()
	secret, older := filepath.Join(dir, "secret"), filepath.Join(dir, "older")
	wrong, short := filepath.Join(dir, "wrong"), filepath.Join(dir, "short")
	for p, v := range map[string]string{
		secret: strings.Repeat("5e", 32) + "\n" + strings.Repeat("0d", 32) + "\n", // the current one, then one a rotation retires
		older:  strings.Repeat("0d", 32), wrong: strings.Repeat("a7", 32), short: "changeme",
	} {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctl := freeAddr(t)
	cp := start(t, nil, "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", ctl, "--controller.bootstrap",
		"--auth.controller_secret_file", secret)
	cp.waitFor(t, `msg=running .*controller_addr=`)
	sp := start(t, nil, "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", "127.0.0.1:0",
		"--controller.join", ctl, "--controller.node_id", "7", "--kafka-listen", "", "--native-listen", "", "--http-listen", "",
		"--auth.controller_secret_file", secret)
	sp.waitFor(t, `msg="registered with the controller"`)

	c := "--controller=" + ctl
	wantOneLineFailure(t, run(t, nil, "topic", c, "list"), "cluster credential refused: the request carries no credential")
	cp.waitFor(t, `refused a client without a valid cluster credential`)
	wantOneLineFailure(t, run(t, nil, "topic", c, "--controller-secret-file", wrong, "list"), "holds another cluster secret")
	wantOneLineFailure(t, run(t, nil, "topic", c, "--controller-secret-file", short, "list"), "want at least 32")
	wantOK(t, run(t, nil, "topic", c, "--controller-secret-file", secret, "create", "events", "-p", "2"), "created events")
	for i := 0; i < 2; i++ {
		sp.waitFor(t, `msg="created partition".* node=7 topic=events`)
	}
	wantOK(t, run(t, []string{"AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE=" + secret}, "topic", c, "list"), "events\n")
	// A node not yet rotated, holding the older secret, is still answered.
	wantOK(t, run(t, nil, "topic", c, "--controller-secret-file", older, "list"), "events\n")
	if code := sp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("store exit %d:\n%s", code, sp.logText())
	}
	if code := cp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("controller exit %d:\n%s", code, cp.logText())
	}
}

// TestClusterSecretUnprovenController: a controller started without
// auth.controller_secret_file cannot prove the cluster secret, so the CLI
// and a store holding it refuse its answers, naming the controller and
// the key to set on it, rather than take a controller anyone may call
// for the secured cluster's.
func TestClusterSecretUnprovenController(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("5e", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctl := freeAddr(t)
	cp := start(t, nil, "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", ctl, "--controller.bootstrap")
	cp.waitFor(t, `msg=running .*controller_addr=`)

	r := run(t, nil, "topic", "--controller="+ctl, "--controller-secret-file", secret, "list")
	wantOneLineFailure(t, r, "does not require the cluster secret")
	for _, want := range []string{ctl, "auth.controller_secret_file"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal %q does not name %s", r.stderr, want)
		}
	}
	sp := start(t, nil, "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", "127.0.0.1:0",
		"--controller.join", ctl, "--controller.node_id", "7", "--kafka-listen", "", "--native-listen", "", "--http-listen", "",
		"--auth.controller_secret_file", secret)
	sp.waitFor(t, `controller unreachable.*does not require the cluster secret`)
	if strings.Contains(sp.logText(), "registered with the controller") {
		t.Errorf("the store took the controller's answer:\n%s", sp.logText())
	}
	if code := sp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("store exit %d:\n%s", code, sp.logText())
	}
	if code := cp.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("controller exit %d:\n%s", code, cp.logText())
	}
}

// TestSecureServeMakesItsClusterSecret: serve with the authorizer on and
// no auth.controller_secret_file makes a cluster secret in
// <data_dir>/controller.secret (mode 0600), names it in its log, and its
// controller on loopback refuses a call without it (401 UNAUTHENTICATED),
// as another local process would make; the CLI finds the secret with
// --data-dir or $AEROSTREAM_DATA_DIR, and without it is told what to set.
// A restart reuses the same secret. A separate controller or store with
// security on and no secret refuses to start, naming the key.
func TestSecureServeMakesItsClusterSecret(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	ctl := freeAddr(t)
	args := []string{"serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", ctl, "--auth.authorizer",
		"--kafka-listen", "", "--native-listen", "", "--http-listen", "", "--schema-registry-listen", ""}
	secretPath := filepath.Join(data, "controller.secret")
	p := start(t, nil, args...)
	if m := p.waitFor(t, `requires the cluster secret.* file=(\S+) created=true`); m[1] != secretPath {
		t.Errorf("the log names %s, want %s", m[1], secretPath)
	}
	p.waitFor(t, `msg=running`)
	fi, err := os.Stat(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", secretPath, fi.Mode().Perm())
	}
	made, err := os.ReadFile(secretPath)
	if err != nil {
		t.Fatal(err)
	}

	// What any process of the host could send to the loopback port.
	resp, err := http.Post("http://"+ctl+"/v1/topics/create", "application/json",
		strings.NewReader(`{"topics":[{"name":"stolen","partitions":1,"replication_factor":1}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"UNAUTHENTICATED"`) ||
		!strings.Contains(string(body), "the request carries no credential") {
		t.Errorf("an unsigned call: %d %s, want 401 UNAUTHENTICATED", resp.StatusCode, body)
	}

	c := "--controller=" + ctl
	// The CLI runs in a directory of its own, so ./data is not serve's.
	r := run(t, nil, "topic", c, "list")
	wantOneLineFailure(t, r, "the request carries no credential")
	for _, want := range []string{"--data-dir", "--controller-secret-file", "auth.controller_secret_file"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal %q does not name %s", r.stderr, want)
		}
	}
	wantOK(t, run(t, nil, "topic", c, "--data-dir", data, "create", "orders", "-p", "1"), "created orders")
	wantOK(t, run(t, nil, "acl", "add", "--allow", "User:alice", "--operation", "READ", "--topic", "orders", c, "--data-dir", data), "User:alice")
	wantOK(t, run(t, []string{"AEROSTREAM_DATA_DIR=" + data}, "acl", "list", c), "User:alice", "orders")
	if r := run(t, nil, "topic", c, "--data-dir", data, "list"); r.code != 0 || r.stdout != "orders\n" {
		t.Errorf("topic list: exit %d %q %s, want orders alone", r.code, r.stdout, r.stderr)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, p.logText())
	}

	p = start(t, nil, args...)
	p.waitFor(t, `requires the cluster secret.* created=false`)
	p.waitFor(t, `msg=running`)
	if again, err := os.ReadFile(secretPath); err != nil || !bytes.Equal(again, made) {
		t.Errorf("the secret after a restart: %v, changed %v", err, !bytes.Equal(again, made))
	}
	wantOK(t, run(t, nil, "topic", c, "--data-dir", data, "list"), "orders\n")
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, p.logText())
	}

	wantOneLineFailure(t, run(t, nil, "controller", "--data-dir", filepath.Join(dir, "c"), "--controller-listen", freeAddr(t),
		"--controller.bootstrap", "--auth.authorizer"), "auth.controller_secret_file is not set")
	wantOneLineFailure(t, run(t, nil, "store", "--data-dir", filepath.Join(dir, "s"), "--ring-listen", "127.0.0.1:0",
		"--controller.join", ctl, "--auth.authorizer"), "auth.controller_secret_file is not set")
}
