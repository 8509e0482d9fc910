package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tools/config"
)

// lockedBuffer is a log sink the daemon and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// storeConfig is a store on an ephemeral ring port, with no HTTP listener
// and no cold tier.
func storeConfig(t *testing.T) (*config.Loaded, []string) {
	t.Helper()
	env := []string{
		"AEROSTREAM_DATA_DIR=" + filepath.Join(t.TempDir(), "data"),
		"AEROSTREAM_LISTENERS_RING=127.0.0.1:0",
		"AEROSTREAM_LISTENERS_HTTP=",
		"AEROSTREAM_TIERED_STORAGE_ENABLED=false",
	}
	loaded, err := config.Load(config.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	return loaded, env
}

// TestDeadPartStopsTheDaemon: a part that dies while the daemon runs stops
// the daemon with an error naming the part (Main then exits 1); the other
// parts are stopped and the state closed.
func TestDeadPartStopsTheDaemon(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, tc := range []struct {
		name string
		run  func(context.Context) error
		want error
	}{
		{"fails", func(context.Context) error { return errors.New("boom") }, nil},
		{"returns", func(context.Context) error { return nil }, errPartStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded, env := storeConfig(t)
			kind := storeCmd
			kind.extra = []extraPart{{"doomed", tc.run}}
			var log lockedBuffer
			err := runDaemon(context.Background(), Env{Stdout: io.Discard, Stderr: &log, Environ: env}, kind, loaded)
			if err == nil || !strings.Contains(err.Error(), "doomed") {
				t.Fatalf("runDaemon = %v, want the death of part doomed\n%s", err, log.String())
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
			if isUsage(err) {
				t.Errorf("a dead part is reported as a usage error: %v", err)
			}
			for _, want := range []string{"msg=running", `reason="part failed" part=doomed`, "msg=stopped"} {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, log.String())
				}
			}
		})
	}
}

// TestSignalDuringStartupStopsCleanly: a signal that arrives before the
// state is open stops the daemon at once, without opening it, and is not a
// failure.
func TestSignalDuringStartupStopsCleanly(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	loaded, env := storeConfig(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log lockedBuffer
	if err := runDaemon(ctx, Env{Stdout: io.Discard, Stderr: &log, Environ: env}, storeCmd, loaded); err != nil {
		t.Fatalf("runDaemon after a signal = %v, want nil\n%s", err, log.String())
	}
	if _, err := os.Stat(filepath.Join(loaded.Config.DataDir, "catalog")); !os.IsNotExist(err) {
		t.Errorf("the catalog was opened after the signal (%v)", err)
	}
	if !strings.Contains(log.String(), "msg=stopped during=startup") {
		t.Errorf("log does not say it stopped during startup:\n%s", log.String())
	}
}

// TestOpenOrStopGivesWayToTheSignal: a slow open does not hold the daemon
// after a signal, and what it opens later is closed.
func TestOpenOrStopGivesWayToTheSignal(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithCancel(context.Background())
	started, release, closed := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := openOrStop(ctx, "the slow thing", func() (int, error) {
			close(started)
			<-release
			return 7, nil
		}, func(v int) { closed <- v })
		errc <- err
	}()
	<-started
	cancel()
	err := <-errc // returns while open is still blocked
	if !errors.Is(err, errInterrupted) || !strings.Contains(err.Error(), "the slow thing") {
		t.Fatalf("openOrStop = %v, want errInterrupted naming what it opened", err)
	}
	close(release)
	if v := <-closed; v != 7 {
		t.Errorf("closed %d, want what open returned late (7)", v)
	}
}

// TestSupervisorStopsInReverseOrder: parts stop last-started first, each
// before the next, so a gateway drains while what it uses still runs.
func TestSupervisorStopsInReverseOrder(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sup := newSupervisor(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var mu sync.Mutex
	var order []string
	for _, name := range []string{"a", "b", "c"} {
		sup.start(context.Background(), name, func(ctx context.Context) error {
			<-ctx.Done()
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return ctx.Err()
		})
	}
	sup.stop()
	if got := strings.Join(order, ""); got != "cba" {
		t.Errorf("stop order %q, want cba", got)
	}
}

// TestPprofOnlyWhenAsked: /debug/pprof is mounted on the admin listener
// only with admin.pprof; /metrics always is.
func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := config.Default()
		cfg.Admin.Pprof = on
		d := &daemon{cfg: cfg, reg: newRegistry(), logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		srv, err := d.httpServer()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"/metrics": http.StatusOK, "/debug/pprof/": http.StatusNotFound}
		if on {
			want["/debug/pprof/"] = http.StatusOK
		}
		for path, code := range want {
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != code {
				t.Errorf("admin.pprof=%v: GET %s = %d, want %d", on, path, rec.Code, code)
			}
		}
	}
}

// TestServeRefusesAGatewayIDThatClashes: serve's gateway registers beside
// serve's store, so their ids must differ (issue 23, item 3).
func TestServeRefusesAGatewayIDThatClashes(t *testing.T) {
	cfg := config.Default()
	cfg.Gateway.NodeID = cfg.Controller.NodeID
	err := checkDaemon(serveCmd, cfg)
	if err == nil || !strings.Contains(err.Error(), "gateway.node_id 1 clashes with controller.node_id 1") {
		t.Fatalf("checkDaemon = %v, want the clash named", err)
	}
	if err := checkDaemon(serveCmd, config.Default()); err != nil {
		t.Errorf("defaults: %v", err)
	}
	// Without a Kafka listener there is no gateway to clash.
	cfg.Listeners.Kafka = ""
	if err := checkDaemon(serveCmd, cfg); err != nil {
		t.Errorf("no kafka listener: %v", err)
	}
}

// TestStoreNeedsTheClusterSecretWithSecurity: with the authorizer on, a
// store that joins controllers needs auth.controller_secret_file, while
// serve, which makes its own in its data_dir, passes on loopback and
// beyond.
func TestStoreNeedsTheClusterSecretWithSecurity(t *testing.T) {
	cfg := config.Default()
	cfg.Auth.Authorizer = true
	for _, ctl := range []string{"127.0.0.1:8001", "0.0.0.0:8001"} {
		cfg.Listeners.Controller = ctl
		if err := checkDaemon(serveCmd, cfg); err != nil {
			t.Errorf("serve, controller on %s: %v", ctl, err)
		}
	}
	cfg.Controller.Join = "127.0.0.1:8001"
	if err := checkDaemon(storeCmd, cfg); err == nil || !strings.Contains(err.Error(), "auth.controller_secret_file") {
		t.Fatalf("store: checkDaemon = %v, want auth.controller_secret_file named", err)
	}
	cfg.Auth.ControllerSecretFile = "/etc/aerostream/cluster-secret"
	if err := checkDaemon(storeCmd, cfg); err != nil {
		t.Fatalf("store with the secret: %v", err)
	}
}
