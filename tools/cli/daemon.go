package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/tools/config"
)

// daemonKind says which parts a daemon subcommand runs.
type daemonKind struct {
	use, short, long string
	// inProcess: build the in-process ring backend that serve's gateways
	// will use.
	inProcess bool
	// needRing: a store with no ring listener serves nothing, so it is an
	// error; serve may run without one.
	needRing bool
	// controller: run a single-voter controller in-process on
	// listeners.controller, bootstrapped on the first start, and register
	// the store with it. Without it, a store registers with the
	// controllers of controller.join, if any.
	controller bool
	// absent lists the parts DESIGN §1 puts in this command that are not
	// built yet, with the key of the listener they will take. They are
	// logged as absent, and their ports are left closed.
	absent []absentPart
}

type absentPart struct{ part, key string }

var serveCmd = daemonKind{
	use:   "serve",
	short: "Run a single-node AeroStream: store and shard ring in one process",
	long: `Run everything in one process on the embedded defaults (data in ./data).

Today that is the storage engine (logstore + catalog) with the in-process
shard-ring backend, the ring's network listener (listeners.ring) so that
other processes can reach the shards, and a single-voter Raft controller on
listeners.controller (bootstrapped on the first start, state in
<data_dir>/raft) with which the store registers, so that
"aerostream topic" creates partitions in it, and the Kafka wire-protocol
gateway on listeners.kafka (advertised as listeners.advertised_kafka, else
the listen address with 127.0.0.1 for an unspecified host), tiered storage
(tierd and the cold-read cache, on by default to a directory under the data
dir) and the HTTP admin API on listeners.http (/metrics, /debug/pprof,
/v1/tier). The native gateway is not built yet: serve does not open its
port.

SIGINT or SIGTERM drains connections and stops cleanly; a second signal
stops at once.`,
	inProcess:  true,
	controller: true,
	absent: []absentPart{
		{"native gateway", "listeners.native"},
	},
}

// daemonGCPercent is the Go GC target of the daemons when GOGC is not set.
// A broker's live heap is small (request structs and maps; indexes are
// mmap'd and record bytes live in the page cache), yet it allocates per
// request, so at Go's default of 100 it collected several times a second
// at 50,000 msg/s (134 cycles a minute, 7 MiB live heap). Measured with
// aerostream bench on 2 cores: 200 cut publish p99 at 50,000 msg/s by
// about a tenth for 10 MiB more RSS; 400 did no better there and, at full
// load, grew RSS to 700 MiB and cost CPU (fresh pages are dear on a VM).
// On a tiering node it applies to the heap outside the fetch cache
// (gctune.go).
const daemonGCPercent = 200

// tuneGC applies daemonGCPercent unless the operator set GOGC.
func tuneGC() { setGCPercent(daemonGCPercent) }

// setGCPercent sets the GC target unless the operator set GOGC.
func setGCPercent(percent int) {
	if !gogcSet() {
		debug.SetGCPercent(percent)
	}
}

// gogcSet says whether the operator set GOGC, whose pacing then stands.
func gogcSet() bool {
	_, set := os.LookupEnv("GOGC")
	return set
}

var storeCmd = daemonKind{
	use:   "store",
	short: "Run a storage node: logstore + catalog serving the shard ring",
	long: `Run a storage node: the storage engine (logstore + catalog), serving
its shards on the ring listener (listeners.ring, host:port or unix:/path).
With controller.join set, it registers with those controllers under
controller.node_id, heartbeats, and creates and deletes the partitions
their placement gives it.

SIGINT or SIGTERM drains connections and stops cleanly; a second signal
stops at once.`,
	needRing: true,
}

func newDaemonCmd(env Env, kind daemonKind) *cobra.Command {
	var flags *config.Flags
	cmd := &cobra.Command{
		Use:   kind.use,
		Short: kind.short,
		Long:  kind.long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := config.Load(config.Options{File: flags.File, Env: env.Environ, Flags: flags})
			if err != nil {
				return err
			}
			return runDaemon(cmd.Context(), env, kind, loaded)
		},
	}
	cmd.Flags().SortFlags = false
	flags = config.AddFlags(cmd.Flags())
	return cmd
}

// runDaemon starts the parts of kind, waits for a signal (or ctx, or a part
// failing) and stops them in reverse order. Nothing is logged before the
// listeners are bound and the data directory is locked, so that a start
// that fails on those prints only its one-line reason.
func runDaemon(ctx context.Context, env Env, kind daemonKind, loaded *config.Loaded) (err error) {
	tuneGC()
	cfg := loaded.Config
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Listeners first: a port conflict must fail before we spend seconds
	// recovering the log.
	var ringLn net.Listener
	if cfg.Listeners.Ring != "" {
		ringLn, err = listen(cfg.Listeners.Ring)
		if err != nil {
			return fmt.Errorf("listeners.ring: %w", err)
		}
		defer ringLn.Close() // Serve closes it too; this covers failed starts
	} else if kind.needRing {
		return errors.New("listeners.ring is empty: a store serves its shards only there")
	}
	var ctlLn net.Listener
	if kind.controller {
		if cfg.Controller.Join != "" {
			return errors.New("controller.join is set, but serve runs its own single-voter controller; join is for aerostream controller and store")
		}
		if cfg.Listeners.Controller != "" {
			ctlLn, err = listen(cfg.Listeners.Controller)
			if err != nil {
				return fmt.Errorf("listeners.controller: %w", err)
			}
			defer ctlLn.Close()
		}
	}

	var httpLn net.Listener
	if cfg.Listeners.HTTP != "" {
		httpLn, err = listen(cfg.Listeners.HTTP)
		if err != nil {
			return fmt.Errorf("listeners.http: %w", err)
		}
		defer httpLn.Close()
	}

	// serve's Kafka gateway (kafka.go, gateway.go) gets its metadata from
	// serve's own controller.
	var kafkaLn net.Listener
	if kind.inProcess && cfg.Listeners.Kafka != "" {
		if ctlLn == nil {
			return errors.New("listeners.kafka needs serve's controller for topics and configs, but listeners.controller is empty")
		}
		kafkaLn, err = listen(cfg.Listeners.Kafka)
		if err != nil {
			return fmt.Errorf("listeners.kafka: %w", err)
		}
		defer kafkaLn.Close()
	}

	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()

	logger := newLogger(env, cfg)
	slog.SetDefault(logger)
	logger.Info("starting", "command", kind.use, "version", Version(),
		"config_file", orNone(loaded.File), "data_dir", cfg.DataDir)
	for _, name := range loaded.UnknownEnv {
		logger.Warn("environment variable sets no config key", "name", name)
	}
	logstore.RaiseFileLimit(logger) // before anything opens files: it sizes the log file cache
	// Deferred first, so it runs last: after the store and catalog closed.
	running := false
	defer func() {
		if running {
			if err != nil {
				logger.Error("stopped", "err", err)
			} else {
				logger.Info("stopped")
			}
		}
	}()

	start := time.Now()
	cat, err := catalog.Open(filepath.Join(cfg.DataDir, "catalog"), catalog.Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("open catalog: %w", err)
	}
	defer func() {
		if cerr := cat.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close catalog: %w", cerr)
		}
	}()
	reg := newRegistry()
	opts := storeOptions(cfg, cat, logger)
	var tier *tierStack
	if cfg.TieredStorage.Enabled {
		if tier, err = openTierStack(ctx, cfg, reg, logger); err != nil {
			return err
		}
		tier.storeHooks(&opts)
		defer startGCTuner(daemonGCPercent, tier.cache.HeldBytes)()
	}
	st, err := logstore.Open(opts)
	if err != nil {
		if tier != nil {
			tier.close()
		}
		return fmt.Errorf("open logstore: %w", err)
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close logstore: %w", cerr)
		}
	}()
	// tierd stops before the store closes: its last upload may still record
	// a pointer through the store.
	tierCtx, tierCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer tierCancel()
	if tier != nil {
		if err := tier.start(tierCtx, cfg, st, cat, logger); err != nil {
			tier.close()
			return fmt.Errorf("start tierd: %w", err)
		}
		defer func() {
			tierCancel()
			tier.close()
		}()
	}

	// The in-process backend is what serve's gateways will be handed; until
	// one exists it only shows that the store is reachable in-process.
	var backend ring.Backend
	if kind.inProcess {
		backend = ring.NewInProcess(st)
		defer func() {
			if cerr := backend.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close in-process ring: %w", cerr)
			}
		}()
	}

	// The store's controller: serve's own voter, or the controllers of
	// controller.join.
	var members controller.Members
	var ctl *controller.Controller
	if ctlLn != nil {
		ctl, err = openController(cfg, ctlLn, logger, true, nil)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := ctl.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("close controller: %w", cerr)
			}
		}()
		members = ctl
	} else if addrs := splitAddrs(cfg.Controller.Join); len(addrs) > 0 && !kind.controller {
		cl := controller.NewClient(addrs, controller.ClientOptions{Logger: logger})
		defer cl.Close()
		members = cl
	}

	// The parts stop when runDaemon says so, after it has logged why, not
	// on the signal itself.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	serveErr := make(chan error, 1)
	parts := []string{"logstore", "catalog"}
	if kind.inProcess {
		parts = append(parts, "ring(in-process)")
	}
	attrs := []any{"command", kind.use, "startup", time.Since(start).Round(time.Millisecond)}
	if ringLn != nil {
		srv := ring.NewServer(st, logger)
		go func() { serveErr <- srv.Serve(runCtx, ringLn) }()
		parts = append(parts, "ring(network)")
		attrs = append(attrs, "ring_addr", listenerAddr(ringLn))
	} else {
		serveErr = nil // nothing to wait for
	}
	var adminDone chan error
	if httpLn != nil {
		adm := &adminServer{st: st, cat: cat, tier: tier, reg: reg, logger: logger,
			restore: topicRegistrar(ctl, splitAddrs(cfg.Controller.Join), logger)}
		adminDone = make(chan error, 1)
		go func() { adminDone <- adm.serve(runCtx, httpLn) }()
		parts = append(parts, "http-admin")
		attrs = append(attrs, "http_addr", listenerAddr(httpLn))
	}
	if tier != nil {
		parts = append(parts, "tierd("+tier.bucket.Name()+")", "fetchcache")
	}
	var agentDone chan struct{}
	if members != nil {
		agent := storeAgent(members, st, cfg.Controller.NodeID, advertisedRing(ringLn), logger)
		agentDone = make(chan struct{})
		go func() {
			defer close(agentDone)
			_ = agent.Run(runCtx)
		}()
		if ctl != nil {
			parts = append(parts, "controller")
			attrs = append(attrs, "controller_addr", ctl.Addr())
		} else {
			parts = append(parts, "controller-member")
			attrs = append(attrs, "controllers", cfg.Controller.Join)
		}
	}
	var kafkaGW *runningKafka
	if kafkaLn != nil {
		kafkaGW, err = startKafkaGateway(runCtx, cfg, kafkaLn, backend, ctl, reg, logger)
		if err != nil {
			return err
		}
		parts = append(parts, "kafka")
		attrs = append(attrs, "kafka_addr", listenerAddr(kafkaLn), "kafka_advertised", kafkaGW.advertised)
	}
	for _, a := range kind.absent {
		logger.Info("not built yet, listener left closed", "part", a.part, "key", a.key)
	}
	logger.Info("running", append(attrs, "parts", strings.Join(parts, ","))...)
	running = true

	var runErr error
	select {
	case <-ctx.Done():
		logger.Info("stopping", "reason", "signal")
	case err := <-serveErr:
		serveErr = nil
		if err == nil {
			err = errors.New("stopped unexpectedly")
		}
		runErr = fmt.Errorf("ring server: %w", err)
		logger.Error("stopping", "reason", "ring server failed", "err", err)
	}
	// From here on a second signal takes the default action and ends the
	// process, for when draining hangs.
	stop()
	cancel()
	if kafkaGW != nil {
		if err := kafkaGW.wait(); err != nil {
			logger.Warn("kafka gateway drain", "err", err)
		}
	}
	if agentDone != nil {
		<-agentDone
	}
	if adminDone != nil {
		if err := <-adminDone; err != nil {
			logger.Warn("http admin stopped", "err", err)
		}
	}
	if serveErr != nil {
		if err := <-serveErr; err != nil && !errors.Is(err, context.Canceled) {
			logger.Warn("ring server drain", "err", err)
		}
	}
	return runErr
}

// storeOptions maps the config onto logstore.Options.
func storeOptions(cfg config.Config, cat *catalog.Catalog, logger *slog.Logger) logstore.Options {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	l, td := cfg.Logstore, cfg.TopicDefaults
	return logstore.Options{
		Dir:                    cfg.DataDir,
		Shards:                 l.Shards,
		PinCPUs:                l.PinCPUs,
		Flush:                  logstore.FlushPolicy(l.Flush),
		FlushInterval:          ms(l.FlushIntervalMs),
		IndexIntervalBytes:     l.IndexIntervalBytes,
		WritebackBytes:         l.WritebackBytes,
		MaxIndexBytes:          l.MaxIndexBytes,
		RetentionCheckInterval: ms(l.RetentionCheckIntervalMs),
		ProducerIDExpiration:   ms(l.ProducerIDExpirationMs),
		Defaults:               storeDefaults(td),
		Catalog:                cat,
		Logger:                 logger,
	}
}

func newLogger(env Env, cfg config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(env.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(env.Stderr, opts))
}

// listen binds addr (host:port or unix:/path). A Unix socket file left by a
// process that died is removed; one that still answers is in use.
func listen(addr string) (net.Listener, error) {
	network, address := config.Network(addr)
	if network == "unix" {
		if err := removeStaleSocket(address); err != nil {
			return nil, err
		}
	}
	return net.Listen(network, address)
}

func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("listen unix %s: address already in use", path)
	}
	return os.Remove(path)
}

func listenerAddr(ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		return "unix:" + ln.Addr().String()
	}
	return ln.Addr().String()
}

// lockFile sits in the data directory while a daemon owns it. Two processes
// on one directory would each believe they own every segment.
const lockFile = "aerostream.lock"

// lockDataDir creates dir if needed, checks it can be read and written, and
// takes an exclusive flock on dir/aerostream.lock that the kernel drops when
// the process exits, however it exits.
func lockDataDir(dir string) (unlock func(), err error) {
	fail := func(err error) (func(), error) {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	if _, err := os.ReadDir(dir); err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return fail(fmt.Errorf("in use by another aerostream process (pid %s)", strings.TrimSpace(string(pid))))
		}
		return fail(err)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		if err != nil {
			f.Close()
			return fail(err)
		}
	}
	return func() {
		// Keep the file: removing it would race with a process that
		// opened it and is waiting for the lock.
		_ = f.Close()
	}, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
