package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/gateways/http/adminapi"
	"github.com/aerostream/aerostream/gateways/http/console"
	"github.com/aerostream/aerostream/gateways/http/icebergrest"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/replica"
	"github.com/aerostream/aerostream/tools/config"
)

// daemonKind says which parts a daemon subcommand runs.
type daemonKind struct {
	use, short, long string
	// inProcess: build the in-process ring backend that serve's Kafka
	// gateway uses.
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
	// extra parts run after the built-in ones, under the same supervisor;
	// tests use them to make a part die.
	extra []extraPart
}

type extraPart struct {
	name string
	run  func(ctx context.Context) error
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
dir) and the HTTP admin API on listeners.http (/v1/tier, /metrics, and
/debug/pprof with admin.pprof). The HTTP admin API and the controller
listen on loopback unless configured otherwise. Once security is on
(auth.authorizer, a SASL listener, or HTTP authentication required), the
controller requires the cluster secret of auth.controller_secret_file, or
without one a secret serve makes in <data_dir>/controller.secret, where
the CLI finds it with --data-dir. The
native-protocol gateway (gateways/native/PROTOCOL.md) listens on
listeners.native, on the same topics and metadata as the Kafka gateway.

If a part dies (a listener's serve loop, the gateway, tierd, the
controller agent), serve logs why and exits non-zero rather than run
half-alive.

SIGINT or SIGTERM drains connections and stops cleanly; a second signal
stops at once.`,
	inProcess:  true,
	controller: true,
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
stops at once. If a part dies, the store logs why and exits non-zero.`,
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
	if kind.use == storeCmd.use {
		cmd.AddCommand(newStoreDrainCmd(env))
	}
	return cmd
}

// runDaemon runs kind in four steps, in this order: bind (the listeners and
// the data directory, so that a port conflict or a second process fails
// before seconds go into recovering the log), open (the state: catalog, cold
// tier, logstore, controller), start (the parts that serve, under a
// supervisor) and wait (for a signal, ctx, or a part dying). Whatever was
// bound, opened or started is closed in the reverse order. Nothing is logged
// before bind succeeds, so that a start that fails there prints only its
// one-line reason. A signal is honoured at every step.
func runDaemon(ctx context.Context, env Env, kind daemonKind, loaded *config.Loaded) (err error) {
	tuneGC()
	cfg := loaded.Config
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := checkDaemon(kind, cfg); err != nil {
		return err
	}
	d := &daemon{kind: kind, cfg: cfg, env: env, httpDefault: loaded.Sources["listeners.http"] == "default"}
	defer func() { err = d.close(err) }()
	if err := d.bind(); err != nil {
		return err
	}
	d.logger = newLogger(env, cfg)
	slog.SetDefault(d.logger)
	d.logger.Info("starting", "command", kind.use, "version", Version(),
		"config_file", orNone(loaded.File), "data_dir", cfg.DataDir)
	for _, name := range loaded.UnknownEnv {
		d.logger.Warn("environment variable sets no config key", "name", name)
	}
	logstore.RaiseFileLimit(d.logger) // before anything opens files: it sizes the log file cache
	if err := d.open(ctx); err != nil {
		return err
	}
	if err := d.start(ctx); err != nil {
		return err
	}
	return d.wait(ctx, stop)
}

// checkDaemon refuses, before anything is bound, a configuration that
// would start but never work.
func checkDaemon(kind daemonKind, cfg config.Config) error {
	if kind.needRing && cfg.Listeners.Ring == "" {
		return errors.New("listeners.ring is empty: a store serves its shards only there")
	}
	// A store replicates under its node id, and follower fetches take 0
	// for "a consumer".
	if (kind.needRing && cfg.Controller.Join != "" || kind.controller && kind.inProcess) && cfg.Controller.NodeID <= 0 {
		return fmt.Errorf("controller.node_id %d: a store's node id must be > 0", cfg.Controller.NodeID)
	}
	// serve makes its own cluster secret when it needs one (open); a
	// store reaching the controllers must be given theirs.
	if !kind.controller {
		if cfg.Controller.Join != "" {
			return cfg.CheckControllerSecret()
		}
		return nil
	}
	if cfg.Controller.Join != "" {
		return errors.New("controller.join is set, but serve runs its own single-voter controller; join is for aerostream controller and store")
	}
	if kind.inProcess && cfg.Listeners.Kafka != "" {
		// serve's Kafka gateway gets its topics and configs from serve's
		// own controller.
		if cfg.Listeners.Controller == "" {
			return errors.New("listeners.kafka needs serve's controller for topics and configs, but listeners.controller is empty")
		}
		// serve's store registers under controller.node_id and its gateway
		// under gateway.node_id; with one id for both, Kafka clients are
		// told of a broker that is not the gateway and time out.
		if id := cfg.Gateway.NodeID; id == cfg.Controller.NodeID {
			return fmt.Errorf("gateway.node_id %d clashes with controller.node_id %d, the id serve's store and controller use: give the gateway another id (default %d)",
				id, cfg.Controller.NodeID, config.Default().Gateway.NodeID)
		}
	}
	return nil
}

// daemon is one run of a daemon subcommand: what it bound, opened and
// started.
type daemon struct {
	kind   daemonKind
	cfg    config.Config
	env    Env
	logger *slog.Logger // set once bind succeeded

	// closers undo bind, open and start, run last to first by close.
	closers []closer

	ringLn, ctlLn, httpLn, kafkaLn, nativeLn net.Listener
	// httpDefault: listeners.http was left at its default; httpMoved: that
	// port was taken, so a free loopback port serves instead.
	httpDefault, httpMoved bool
	// httpGuard authenticates listeners.http; httpRefresh keeps its ACLs
	// current (nil for none).
	httpGuard   *gwhttp.Guard
	httpRefresh func(ctx context.Context)

	// icebergCat is the Iceberg catalog of Iceberg topics, icebergIO the
	// FileIO properties its readers need (iceberg.go); nil without one.
	icebergCat icebergCatalog
	icebergIO  map[string]string
	iceberg    *icebergManager // the Iceberg committers (iceberg.go); nil without a catalog

	cat      *catalog.Catalog
	reg      *prometheus.Registry
	tier     *tierStack // nil when tiered storage is disabled
	st       *logstore.Store
	backend  ring.Backend // serve's in-process ring; nil in a store
	ctl      *controller.Controller
	members  controller.Members // the controller the store registers with; nil for none
	links    internalTLS        // TLS of the ring and controller links (internaltls.go)
	openedAt time.Time

	sup     *supervisor
	running bool // "running" was logged

	// admin feeds the REST admin API (adminapi.go); nil without an HTTP
	// listener.
	admin    *adminSources
	adminAPI *adminapi.API
}

type closer struct {
	what string
	fn   func() error
}

func (d *daemon) onClose(what string, fn func() error) {
	d.closers = append(d.closers, closer{what, fn})
}

// close runs the closers last to first and returns err, or the first
// close error when err is nil. A startup interrupted by a signal is a clean
// stop.
func (d *daemon) close(err error) error {
	for i := len(d.closers) - 1; i >= 0; i-- {
		c := d.closers[i]
		if cerr := c.fn(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", c.what, cerr)
		}
	}
	d.closers = nil
	interrupted := errors.Is(err, errInterrupted)
	switch {
	case d.logger == nil:
	case interrupted:
		d.logger.Info("stopped", "during", "startup", "reason", err.Error())
	case !d.running:
	case err != nil:
		d.logger.Error("stopped", "err", err)
	default:
		d.logger.Info("stopped")
	}
	if interrupted {
		return nil
	}
	return err
}

// bind opens the listeners of the parts kind runs and locks the data
// directory.
func (d *daemon) bind() error {
	cfg, kind := d.cfg, d.kind
	bind := func(key, addr string) (net.Listener, error) {
		if addr == "" {
			return nil, nil
		}
		ln, err := listen(addr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		// The serve loops close their listener too; this covers a start
		// that fails before they run.
		d.onClose(key, func() error { _ = ln.Close(); return nil })
		if key == "listeners.http" || key == "listeners.native" {
			return tlsListener(cfg, key, addr, ln, nil) // security.go; Kafka's is wrapped with its gateway
		}
		return ln, nil
	}
	var err error
	if d.ringLn, err = bind("listeners.ring", cfg.Listeners.Ring); err != nil {
		return err
	}
	if kind.controller {
		if d.ctlLn, err = bind("listeners.controller", cfg.Listeners.Controller); err != nil {
			return err
		}
	}
	if d.httpLn, err = bind("listeners.http", cfg.Listeners.HTTP); err != nil {
		// Every process of a cluster on one machine defaults to the same
		// admin port; a default that is taken moves to a free loopback
		// port (logged once running) rather than stop the node. A port
		// the user chose is theirs to fix.
		if !d.httpDefault || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		if d.httpLn, err = bind("listeners.http", "127.0.0.1:0"); err != nil {
			return err
		}
		d.httpMoved = true
	}
	if kind.inProcess {
		if d.kafkaLn, err = bind("listeners.kafka", cfg.Listeners.Kafka); err != nil {
			return err
		}
		if d.nativeLn, err = bind("listeners.native", cfg.Listeners.Native); err != nil {
			return err
		}
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	d.onClose("data_dir lock", func() error { unlock(); return nil })
	return nil
}

// open opens the daemon's state. Each slow step gives way to a signal.
func (d *daemon) open(ctx context.Context) (err error) {
	d.openedAt = time.Now()
	if d.kind.controller {
		if err := d.localClusterSecret(); err != nil {
			return err
		}
	}
	cfg, logger := d.cfg, d.logger
	if d.links, err = newInternalTLS(cfg, logger); err != nil {
		return err
	}
	d.cat, err = openOrStop(ctx, "the catalog", func() (*catalog.Catalog, error) {
		return catalog.Open(filepath.Join(cfg.DataDir, "catalog"), catalog.Options{Logger: logger})
	}, func(c *catalog.Catalog) { _ = c.Close() })
	if err != nil {
		return fmt.Errorf("open catalog: %w", err)
	}
	d.onClose("catalog", d.cat.Close)

	d.reg = newRegistry()
	opts := storeOptions(cfg, d.cat, logger)
	if cfg.TieredStorage.Enabled {
		if d.tier, err = openTierStack(ctx, cfg, d.reg, logger); err != nil {
			return err
		}
		d.tier.storeHooks(&opts)
		stopTuner := startGCTuner(daemonGCPercent, d.tier.cache.HeldBytes)
		d.onClose("gc tuner", func() error { stopTuner(); return nil })
	}
	if err := d.openIceberg(ctx, &opts); err != nil { // iceberg.go
		return err
	}
	d.st, err = openOrStop(ctx, "the logstore", func() (*logstore.Store, error) { return logstore.OpenContext(ctx, opts) },
		func(st *logstore.Store) { _ = st.Close() })
	if err != nil {
		if d.tier != nil {
			d.tier.close()
		}
		return fmt.Errorf("open logstore: %w", err)
	}
	d.onClose("logstore", d.st.Close)
	d.reg.MustRegister(cleanerCollectors(d.st)...)
	if d.tier != nil {
		// After the store, so it runs before the store closes: tierd's last
		// upload may still record a pointer through the store.
		d.onClose("tiered storage", func() error { d.tier.close(); return nil })
		if err := d.tier.newDaemon(cfg, d.st, d.cat, logger); err != nil {
			return fmt.Errorf("start tierd: %w", err)
		}
	}

	// serve's Kafka gateway reaches the store through the in-process ring:
	// the same Backend a gateway process dials over the network.
	if d.kind.inProcess {
		d.backend = meterBackend(ring.NewInProcess(d.st), d.reg) // adminapi.go: throughput samples
		d.onClose("in-process ring", d.backend.Close)
	}

	// The store's controller: serve's own voter, or the controllers of
	// controller.join.
	if d.ctlLn != nil {
		d.ctl, err = openOrStop(ctx, "the controller", func() (*controller.Controller, error) {
			return openController(cfg, d.ctlLn, logger, true, nil)
		}, func(c *controller.Controller) { _ = c.Close() })
		if err != nil {
			return err
		}
		d.onClose("controller", d.ctl.Close)
		d.members = d.ctl
	} else if addrs := splitAddrs(cfg.Controller.Join); len(addrs) > 0 && !d.kind.controller {
		cl := d.links.controllerClient(addrs, logger)
		d.onClose("controller client", func() error { cl.Close(); return nil })
		d.members = cl
	}
	return ctx.Err()
}

// localClusterSecret gives serve's controller a cluster secret once
// security is on and auth.controller_secret_file names none: the one in
// <data_dir>/controller.secret, made on the first such start, which the
// CLI finds there (clientFlags.secret). Every process is then refused
// without it, loopback included.
func (d *daemon) localClusterSecret() error {
	if !d.cfg.SecurityOn() || d.cfg.Auth.ControllerSecretFile != "" {
		return nil
	}
	path, created, err := ensureLocalClusterSecret(d.cfg.DataDir) // internaltls.go
	if err != nil {
		return err
	}
	d.cfg.Auth.ControllerSecretFile = path
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // what an operator copies, wherever the CLI runs
	}
	d.logger.Info("the controller requires the cluster secret serve keeps in its data_dir; the CLI finds it with --data-dir",
		"file", path, "created", created)
	return nil
}

// start starts the parts that serve, under a supervisor, and logs
// "running" with what runs where.
func (d *daemon) start(ctx context.Context) error {
	cfg, logger := d.cfg, d.logger
	d.sup = newSupervisor(logger)
	// Registered last, so the parts stop before anything they use closes.
	d.onClose("parts", func() error { d.sup.stop(); return nil })

	parts := []string{"logstore", "catalog"}
	if d.kind.inProcess {
		parts = append(parts, "ring(in-process)")
	}
	attrs := []any{"command", d.kind.use, "startup", time.Since(d.openedAt).Round(time.Millisecond)}
	// The replica manager takes the roles the controller's views give the
	// store's partitions, and asks the same controller to change ISRs. In
	// a cluster store it first fences every local partition until the
	// first view, before anything serves them: a store restarted after
	// it was deposed must not serve its old leadership meanwhile.
	var mgr *replica.Manager
	if alter, ok := d.members.(replica.Controller); ok {
		var err error
		mgr, err = replica.New(replica.Options{Store: d.st, Controller: alter, LocalID: cfg.Controller.NodeID, Logger: logger,
			Dial: d.links.ringDial(2*time.Second, logger)})
		if err != nil {
			return fmt.Errorf("controller.node_id: %w", err)
		}
		if d.ctl == nil {
			if err := mgr.Fence(ctx); err != nil {
				return err
			}
		}
	}
	if d.tier != nil {
		d.sup.start(ctx, "tierd", d.tier.daemon.Run)
		parts = append(parts, "tierd("+d.tier.bucket.Name()+")", "fetchcache")
	}
	if d.ringLn != nil {
		srv := ring.NewServer(d.st, logger)
		srv.TLS = d.links.ringServer
		ln := d.ringLn
		d.sup.start(ctx, "ring server", func(ctx context.Context) error { return srv.Serve(ctx, ln) })
		parts = append(parts, "ring(network)")
		attrs = append(attrs, "ring_addr", listenerAddr(ln))
	}
	if d.httpLn != nil {
		srv, err := d.httpServer()
		if err != nil {
			return err
		}
		ln := d.httpLn
		d.sup.start(ctx, "admin api sampler", d.adminAPI.Run)
		d.sup.start(ctx, "http", func(ctx context.Context) error {
			return runBeside(ctx, d.httpRefresh, func(ctx context.Context) error { return srv.Serve(ctx, ln) }) // security.go
		})
		if d.httpMoved {
			logger.Warn("the default admin HTTP port is taken (another AeroStream process?); serving the admin API on a free loopback port instead: set listeners.http to choose one",
				"default", cfg.Listeners.HTTP, "http_addr", listenerAddr(ln))
		}
		parts = append(parts, "http")
		attrs = append(attrs, "http_addr", listenerAddr(ln), "pprof", cfg.Admin.Pprof)
	}
	if d.ctl != nil {
		if err := bootstrapUser(ctx, cfg, d.env, d.ctl, logger); err != nil { // security.go
			return err
		}
		addr, err := startSchemaRegistry(ctx, d.sup, cfg, d.ctl, logger) // schema_registry.go
		if err != nil {
			return err
		}
		if addr != "" {
			parts = append(parts, "schema-registry")
			attrs = append(attrs, "schema_registry_addr", addr)
		}
	}
	if d.members != nil {
		if mgr != nil {
			d.reg.MustRegister(mgr.Collectors()...)
			d.sup.start(ctx, "replica manager", mgr.Run)
			parts = append(parts, "replica-manager")
		}
		stats := &storeStats{st: d.st, cat: d.cat, log: logger} // storestats.go: reported with heartbeats
		d.sup.start(ctx, "store stats", stats.run)
		agent := storeAgent(d.members, d.st, cfg.Controller.NodeID, advertisedRing(d.ringLn), mgr, d.ctl == nil, stats, logger)
		d.sup.start(ctx, "controller agent", agent.Run)
		if d.ctl != nil {
			d.sup.start(ctx, "controller", d.ctl.Wait)
			parts = append(parts, "controller")
			attrs = append(attrs, "controller_addr", d.ctl.Addr())
		} else {
			parts = append(parts, "controller-member")
			attrs = append(attrs, "controllers", cfg.Controller.Join)
		}
	}
	var (
		kafkaMeta *kmeta.Cluster
		kafkaAddr string
	)
	if d.kafkaLn != nil {
		gw, err := newKafkaGateway(cfg, d.kafkaLn, d.backend, d.ctl, d.reg, logger)
		if err != nil {
			return err
		}
		gw.start(ctx, d.sup)
		if d.admin != nil {
			d.admin.setKafka(gw.gw) // the admin API's groups
		}
		kafkaMeta, kafkaAddr = gw.cluster, gw.advertised
		parts = append(parts, "kafka")
		attrs = append(attrs, "kafka_addr", listenerAddr(d.kafkaLn), "kafka_advertised", gw.advertised)
	}
	if d.nativeLn != nil {
		if err := startNative(ctx, d.sup, cfg, d.nativeLn, d.backend, d.ctl, kafkaMeta, kafkaAddr, logger); err != nil {
			return err
		}
		parts = append(parts, "native")
		attrs = append(attrs, "native_addr", listenerAddr(d.nativeLn))
	}
	if d.startIceberg(ctx) { // iceberg.go
		parts = append(parts, "iceberg")
	}
	for _, p := range d.kind.extra {
		d.sup.start(ctx, p.name, p.run)
		parts = append(parts, p.name)
	}
	for _, a := range d.kind.absent {
		logger.Info("not built yet, listener left closed", "part", a.part, "key", a.key)
	}
	if d.ctl != nil {
		// "running" promises that a write is taken: the first one must not
		// meet the embedded voter's election.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if !d.ctl.AwaitSoleLeadership(wctx) && wctx.Err() != nil && ctx.Err() == nil {
			logger.Warn("the controller does not lead yet; writes wait for its election", "node_id", cfg.Controller.NodeID)
		}
		cancel()
	}
	logger.Info("running", append(attrs, "parts", strings.Join(parts, ","))...)
	d.running = true
	if d.admin != nil {
		d.admin.running.Store(true) // /healthz: ready
	}
	return nil
}

// httpServer mounts the node's HTTP APIs: the tier catalog API, /metrics,
// the REST admin API and /healthz and, when asked for, Go's profiles; the
// web console gets every other path.
func (d *daemon) httpServer() (*gwhttp.Server, error) {
	sec, err := newHTTPSecurity(d.cfg, "listeners.http", d.cfg.Listeners.HTTP, d.members, d.logger) // security.go
	if err != nil {
		return nil, err
	}
	d.httpGuard, d.httpRefresh = sec.guard, sec.refresh
	guard := sec.guard
	srv := gwhttp.NewServer(gwhttp.Options{Logger: d.logger, Guard: guard})
	if d.admin, d.adminAPI, err = d.newAdminAPI(); err != nil { // adminapi.go
		return nil, err
	}
	ops := &tierOps{st: d.st, cat: d.cat, tier: d.tier, logger: d.logger,
		restore: topicRegistrar(d.ctl, splitAddrs(d.cfg.Controller.Join), d.links, d.logger)}
	mounts := []struct {
		prefix string
		h      http.Handler
	}{
		{"/v1/tier", guard.RequireCluster(auth.OpDescribe, auth.OpAlter, gwhttp.TierAPI(ops, d.logger))},
		{"/metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{})},
		{"/v1/iceberg", icebergStatusAPI(d.iceberg)}, // iceberg.go
		{"/api", d.adminAPI.Handler()},
		{"/healthz", d.adminAPI.Healthz()},
	}
	if d.cfg.Admin.Pprof {
		mounts = append(mounts, struct {
			prefix string
			h      http.Handler
		}{"/debug/pprof", guard.RequireCluster(auth.OpAlter, auth.OpAlter, gwhttp.Pprof())})
	}
	if d.ctl != nil {
		reg, err := newSchemaRegistry(d.cfg, d.ctl, d.logger)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, struct {
			prefix string
			h      http.Handler
		}{schemaRegistryPrefix, guard.RequireCluster("", auth.OpAlter, reg.Handler())})
	}
	if d.icebergCat != nil {
		mounts = append(mounts, struct {
			prefix string
			h      http.Handler
		}{"/iceberg", icebergREST(icebergrest.Options{Catalog: d.icebergCat, IOProps: d.icebergIO}, guard, d.logger)}) // icebergrest.go
	}
	// The web console takes every path that no API above claims.
	con, err := console.Handler(console.Options{Logger: d.logger})
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, struct {
		prefix string
		h      http.Handler
	}{"/", con})
	for _, m := range mounts {
		if err := srv.Mount(m.prefix, m.h); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

// wait waits for a signal, ctx, or a part to die; the parts are then
// stopped by close. A second signal from here on takes the default action
// and ends the process, for when draining hangs.
func (d *daemon) wait(ctx context.Context, stop context.CancelFunc) error {
	err := d.sup.wait(ctx)
	stop()
	if err != nil {
		var f partFailure
		part := ""
		if errors.As(err, &f) {
			part = f.name
		}
		d.logger.Error("stopping", "reason", "part failed", "part", part, "err", err)
		return err
	}
	d.logger.Info("stopping", "reason", "signal")
	// The parts still run: a cluster store hands its leaderships over
	// while it can still serve as a follower.
	if rep, ok := d.members.(controller.Replication); ok && d.ctl == nil {
		leaveLeadership(context.WithoutCancel(ctx), rep, d.cfg.Controller.NodeID, storeShutdownWait, d.logger)
	}
	return nil
}

// storeShutdownWait bounds the controlled shutdown of a stopping store, so
// that an unreachable controller delays the stop only a little.
const storeShutdownWait = 5 * time.Second

// leaveLeadership asks the controller for store id's controlled shutdown
// (its leaderships move to other in-sync replicas, its replicas stay) and
// waits until it leads nothing or wait passes, so that clients switch
// leaders at once rather than after the session timeout. Failing is logged
// and the stop goes on: the session expiry moves leadership anyway.
func leaveLeadership(ctx context.Context, rep controller.Replication, id int32, wait time.Duration, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := shutdownStore(ctx, Env{Stdout: io.Discard}, rep, id, false); err != nil {
		logger.Warn("stopping with leaderships the controller did not move", "store", id, "err", err)
		return
	}
	logger.Info("leaderships moved to other replicas before stopping", "store", id)
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
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
		Cleaner:                logstore.CleanerOptions{Interval: ms(l.CleanerIntervalMs), BytesPerSecond: l.CleanerBytesPerSec},
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
