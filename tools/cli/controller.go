package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/replica"
	"github.com/aerostream/aerostream/tools/config"
)

// The controller: `aerostream controller` (one Raft voter), its membership
// commands, `aerostream topic`, and the pieces serve and store use to run
// or reach one.

const controllerLong = `Run one Raft controller voter: the cluster's metadata (topics, configs,
partition placement, registered stores and gateways). Raft and the client
API share listeners.controller (--controller-listen); Raft state lives in
<data_dir>/raft.

A new cluster starts from one node with --controller.bootstrap; every other
node starts with --controller.join=ADDR[,ADDR...] naming a running controller,
and asks it to add this node as a voter. Both only act on the first start
(when <data_dir>/raft is empty); a node with state rejoins its cluster on
its own. Node ids (controller.node_id) must differ.

  aerostream controller --data-dir /tmp/c1 --controller-listen 127.0.0.1:8001 \
      --controller.node_id 1 --controller.bootstrap
  aerostream controller --data-dir /tmp/c2 --controller-listen 127.0.0.1:8002 \
      --controller.node_id 2 --controller.join 127.0.0.1:8001
  aerostream controller --data-dir /tmp/c3 --controller-listen 127.0.0.1:8003 \
      --controller.node_id 3 --controller.join 127.0.0.1:8001

Three voters keep serving while any one is down. SIGINT or SIGTERM stops
cleanly.`

func newControllerCmd(env Env) *cobra.Command {
	var flags *config.Flags
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run a Raft controller voter (metadata, membership, placement)",
		Long:  controllerLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := config.Load(config.Options{File: flags.File, Env: env.Environ, Flags: flags})
			if err != nil {
				return err
			}
			return runController(cmd.Context(), env, loaded)
		},
	}
	cmd.Flags().SortFlags = false
	flags = config.AddFlags(cmd.Flags())
	cmd.AddCommand(newAddVoterCmd(env), newRemoveVoterCmd(env), newControllerStatusCmd(env))
	return cmd
}

// runController runs one voter until a signal or ctx ends it.
func runController(ctx context.Context, env Env, loaded *config.Loaded) (err error) {
	cfg := loaded.Config
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Listeners.Controller == "" {
		return errors.New("listeners.controller is empty: a controller serves Raft and its clients there")
	}
	if err := cfg.CheckControllerSecret(); err != nil {
		return err
	}
	ln, err := listen(cfg.Listeners.Controller)
	if err != nil {
		return fmt.Errorf("listeners.controller: %w", err)
	}
	defer ln.Close()
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// The common mistake, caught before anything is logged; Open checks
	// the Raft state itself too.
	raftDir := filepath.Join(cfg.DataDir, "raft")
	if _, err := os.Stat(raftDir); errors.Is(err, os.ErrNotExist) && !cfg.Controller.Bootstrap && cfg.Controller.Join == "" {
		return fmt.Errorf("%s holds no controller state: set controller.bootstrap to start a new cluster, or controller.join to join an existing one", raftDir)
	}
	logger := newLogger(env, cfg)
	slog.SetDefault(logger)
	logger.Info("starting", "command", "controller", "version", Version(),
		"config_file", orNone(loaded.File), "data_dir", cfg.DataDir)
	for _, name := range loaded.UnknownEnv {
		logger.Warn("environment variable sets no config key", "name", name)
	}
	start := time.Now()
	// Opening reads the Raft state from disk, which a bad disk can make
	// slow; a signal meanwhile stops the process then, not after.
	c, err := openOrStop(ctx, "the controller", func() (*controller.Controller, error) {
		return openController(cfg, ln, logger, cfg.Controller.Bootstrap, splitAddrs(cfg.Controller.Join))
	}, func(c *controller.Controller) { _ = c.Close() })
	if errors.Is(err, errInterrupted) {
		logger.Info("stopped", "during", "startup", "reason", err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	logger.Info("running", "command", "controller", "node_id", cfg.Controller.NodeID,
		"controller_addr", c.Addr(), "listen", listenerAddr(ln), "startup", time.Since(start).Round(time.Millisecond))
	werr := superviseController(ctx, stop, c, logger)
	if err := c.Close(); err != nil {
		werr = errors.Join(werr, fmt.Errorf("close controller: %w", err))
	}
	if werr != nil {
		logger.Error("stopped", "err", werr)
		return werr
	}
	logger.Info("stopped")
	return nil
}

// superviseController waits for a signal (ctx) or for one of the loops
// serving the controller's port to die, which it returns: a voter that
// no longer serves Raft or its clients must exit non-zero, not linger.
func superviseController(ctx context.Context, stop context.CancelFunc, c *controller.Controller, logger *slog.Logger) error {
	sup := newSupervisor(logger)
	sup.start(ctx, "controller", c.Wait)
	err := sup.wait(ctx)
	stop() // a second signal now ends the process, for when closing hangs
	if err != nil {
		logger.Error("stopping", "reason", "part failed", "part", "controller", "err", err)
	} else {
		logger.Info("stopping", "reason", "signal")
	}
	sup.stop()
	return err
}

// openController starts a voter with its Raft state in <data_dir>/raft.
func openController(cfg config.Config, ln net.Listener, logger *slog.Logger, bootstrap bool, join []string) (*controller.Controller, error) {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	cc := cfg.Controller
	links, err := newInternalTLS(cfg, logger) // internaltls.go
	if err != nil {
		return nil, err
	}
	c, err := controller.Open(controller.Options{
		NodeID:                  cc.NodeID,
		TLS:                     links.ctlServer,
		PeerTLS:                 links.ctlClient,
		ClusterSecret:           links.ctlSecret,
		OldClusterSecrets:       links.ctlOldSecrets,
		Dir:                     filepath.Join(cfg.DataDir, "raft"),
		Listener:                ln,
		Advertise:               cc.Advertise,
		Bootstrap:               bootstrap,
		Join:                    join,
		SessionTimeout:          ms(cc.SessionTimeoutMs),
		HeartbeatInterval:       ms(cc.HeartbeatIntervalMs),
		RaftTimeout:             ms(cc.RaftTimeoutMs),
		LeaderRebalanceInterval: rebalanceInterval(cc.LeaderRebalanceIntervalMs),
		TopicDefaults:           cfg.TopicDefaults.KafkaConfigs(),
		Logger:                  logger,
	})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	return c, nil
}

// storeDefaults is [topic_defaults] as a store applies it. The values
// are integers checked against the registry by config.Validate, so
// reading them cannot fail.
// rebalanceInterval maps the config's 0 (off) onto the controller's
// negative interval, since the controller reads 0 as its default.
func rebalanceInterval(ms int64) time.Duration {
	if ms == 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func storeDefaults(td config.TopicDefaults) logstore.PartitionConfig {
	pc, _ := partitionConfig(td.KafkaConfigs())
	return pc
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// storeAgent registers a store with the controller (in-process or over the
// network) and applies placement to it until ctx ends, handing each view
// to the replica manager (nil for none). lease says whether heartbeats
// renew the store's leadership lease: not in serve, whose controller is in
// the same process and so can never fence it.
func storeAgent(api controller.Members, st *logstore.Store, id int32, ringAddr string, mgr *replica.Manager, lease bool, stats *storeStats, logger *slog.Logger) *controller.StoreAgent {
	opts := controller.StoreAgentOptions{Logger: logger}
	if stats != nil {
		opts.Stats = stats.get
	}
	if mgr != nil {
		opts.OnView = mgr.Apply
		if lease {
			opts.OnHeartbeat = mgr.OnHeartbeat
			// A failed disk gives up the store's leaderships: it stops
			// heartbeating, so the controller fences it.
			opts.Healthy = st.StorageFailure
		}
	}
	return controller.NewStoreAgentWith(api, storePartitions{st}, controller.RegisterNodeRequest{
		ID:            id,
		Shards:        int32(st.NumShards()),
		RingAddr:      ringAddr,
		Addresses:     map[string]string{"ring": ringAddr},
		MaxPartitions: int32(min(st.PartitionCapacity(), math.MaxInt32)),
	}, opts)
}

// advertisedRing is the ring address a store registers: the listener's,
// with an unspecified host replaced by the hostname.
func advertisedRing(ln net.Listener) string {
	if ln == nil {
		return "in-process"
	}
	addr := listenerAddr(ln)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // unix:/path
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// storePartitions adapts logstore to controller.PartitionManager.
type storePartitions struct{ st *logstore.Store }

var (
	_ controller.PartitionManager = storePartitions{}
	_ controller.ConfigUpdater    = storePartitions{}
)

// UpdatePartitionConfig applies a topic's changed configs to a local
// partition.
func (p storePartitions) UpdatePartitionConfig(ctx context.Context, topic string, partition int32, cfg map[string]string) error {
	pc, err := partitionConfig(cfg)
	if err != nil {
		return err
	}
	return p.st.SetPartitionConfig(ctx, topic, partition, pc)
}

func (p storePartitions) CreatePartition(ctx context.Context, topic string, partition int32, cfg map[string]string) error {
	pc, err := partitionConfig(cfg)
	if err != nil {
		return err
	}
	err = p.st.CreatePartition(ctx, topic, partition, pc)
	if errors.Is(err, logstore.ErrPartitionExists) {
		return nil
	}
	return err
}

func (p storePartitions) DeletePartition(ctx context.Context, topic string, partition int32) error {
	err := p.st.DeletePartition(ctx, topic, partition)
	if errors.Is(err, logstore.ErrUnknownPartition) {
		return nil
	}
	return err
}

func (p storePartitions) ListPartitions(ctx context.Context) ([]controller.LocalPartition, error) {
	infos, err := p.st.ListPartitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]controller.LocalPartition, len(infos))
	for i, in := range infos {
		out[i] = controller.LocalPartition{Topic: in.Topic, Partition: in.Partition}
	}
	return out, nil
}

// partitionConfig is how a store reads a topic's configs: the registry's
// logstore rows (the Kafka gateway's metadata uses it too).
var partitionConfig = logstore.PartitionConfigOf

// Client commands.

// clientFlags are the flags of a command that talks to the controller.
type clientFlags struct {
	addrs   string
	timeout time.Duration
	// What --controller SSL:// presents and trusts (internaltls.go).
	tlsCert, tlsKey, tlsCA string
	// secretFile holds the cluster secret the controllers require;
	// dataDir is a local serve's data_dir, which holds the one it made.
	secretFile, dataDir string
}

// addControllerFlag adds --controller and --timeout to a client command.
func addControllerFlag(cmd *cobra.Command) *clientFlags {
	f := &clientFlags{}
	cmd.PersistentFlags().StringVar(&f.addrs, "controller", "127.0.0.1:8001", "controller addresses, comma-separated [SSL://]host:port (any voter; the leader is found); SSL:// when listeners.controller is, with --tls-cert, --tls-key and --tls-ca")
	cmd.PersistentFlags().StringVar(&f.tlsCert, "tls-cert", "", "with --controller SSL://: PEM client certificate signed by the cluster CA (default $AEROSTREAM_TLS_CERT_FILE)")
	cmd.PersistentFlags().StringVar(&f.tlsKey, "tls-key", "", "with --controller SSL://: PEM key of --tls-cert (default $AEROSTREAM_TLS_KEY_FILE)")
	cmd.PersistentFlags().StringVar(&f.tlsCA, "tls-ca", "", "with --controller SSL://: PEM CA bundle the controller's certificate is verified against (default $AEROSTREAM_TLS_CA_FILE)")
	cmd.PersistentFlags().StringVar(&f.secretFile, "controller-secret-file", "", "file holding the cluster secret, when the controllers require one (auth.controller_secret_file; default $AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE, else <data-dir>/controller.secret when it exists)")
	cmd.PersistentFlags().StringVar(&f.dataDir, "data-dir", "", "data_dir of a local serve, whose <data_dir>/controller.secret is the cluster secret it made (default $AEROSTREAM_DATA_DIR, else "+config.Default().DataDir+")")
	cmd.PersistentFlags().DurationVar(&f.timeout, "timeout", 15*time.Second, "give up when no controller leader answers for this long")
	return f
}

// newClient returns a client of the controllers of --controller, once one
// of them accepts a connection.
func newClient(ctx context.Context, f *clientFlags) (*controller.Client, error) {
	list, tc, err := f.controllers() // internaltls.go
	if err != nil {
		return nil, err
	}
	secret, err := f.secret()
	if err != nil {
		return nil, err
	}
	if err := dialAny(ctx, list); err != nil {
		return nil, err
	}
	return controller.NewClient(list, controller.ClientOptions{Timeout: f.timeout, TLS: tc, ClusterSecret: secret,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), nil
}

// secret is the cluster secret to present: --controller-secret-file or
// its key's variable, else the file a serve on --data-dir made (as a
// serve run from the same directory keeps it in ./data); nil when there is
// none, for controllers that require none.
func (f *clientFlags) secret() ([]byte, error) {
	if p := orEnv(f.secretFile, "auth.controller_secret_file"); p != "" {
		secret, _, err := readClusterSecret("--controller-secret-file", p)
		return secret, err
	}
	dir := orEnv(f.dataDir, "data_dir")
	if dir == "" {
		dir = config.Default().DataDir
	}
	p := filepath.Join(dir, localSecretFile)
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	secret, _, err := readClusterSecret("--data-dir", p)
	return secret, err
}

// controllerDialTimeout bounds the wait for a connection to a controller
// address. The client itself keeps looking for a leader for the whole
// --timeout, which is right during an election but turns a mistyped
// address into a long silence; a dial that fails says what is wrong.
const controllerDialTimeout = 2 * time.Second

// dialAny dials every address at once and returns nil as soon as one
// accepts, else the dial error of each, with its address.
func dialAny(ctx context.Context, addrs []string) error {
	ctx, cancel := context.WithTimeout(ctx, controllerDialTimeout)
	defer cancel()
	type dialed struct {
		addr string
		err  error
	}
	ch := make(chan dialed, len(addrs))
	for _, a := range addrs {
		go func() {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", a)
			if err == nil {
				c.Close()
			}
			ch <- dialed{a, err}
		}()
	}
	var errs []error
	for range addrs {
		r := <-ch
		if r.err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("--controller %s: %w", r.addr, r.err))
	}
	return fmt.Errorf("no controller reachable: %w", errors.Join(errs...))
}

func newAddVoterCmd(env Env) *cobra.Command {
	var id int32
	var addr string
	cmd := &cobra.Command{
		Use:   "add-voter",
		Short: "Add a controller voter to the Raft configuration",
		Long: `Add a controller voter. Start the new controller first (with
--controller.join, it adds itself; this command is for one started with
neither bootstrap nor join state, or to re-add a removed voter).`,
		Args: cobra.NoArgs,
	}
	ctl := addControllerFlag(cmd)
	cmd.Flags().Int32Var(&id, "id", -1, "node id of the voter (its controller.node_id)")
	cmd.Flags().StringVar(&addr, "address", "", "host:port the voter is reached at (its controller address)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if id < 0 || addr == "" {
			return errors.New("add-voter needs --id and --address")
		}
		cl, err := newClient(cmd.Context(), ctl)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.AddVoter(cmd.Context(), controller.AddVoterRequest{ID: id, Address: addr}); err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "added voter %d at %s\n", id, addr)
		return err
	}
	return cmd
}

func newRemoveVoterCmd(env Env) *cobra.Command {
	var id int32
	cmd := &cobra.Command{
		Use:   "remove-voter",
		Short: "Remove a controller voter from the Raft configuration",
		Args:  cobra.NoArgs,
	}
	ctl := addControllerFlag(cmd)
	cmd.Flags().Int32Var(&id, "id", -1, "node id of the voter to remove")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if id < 0 {
			return errors.New("remove-voter needs --id")
		}
		cl, err := newClient(cmd.Context(), ctl)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.RemoveVoter(cmd.Context(), controller.RemoveVoterRequest{ID: id}); err != nil {
			return err
		}
		_, err = fmt.Fprintf(env.Stdout, "removed voter %d\n", id)
		return err
	}
	return cmd
}

func newControllerStatusCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the controller cluster: id, leader, voters, joining controllers, registered nodes",
		Args:  cobra.NoArgs,
	}
	ctl := addControllerFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cl, err := newClient(cmd.Context(), ctl)
		if err != nil {
			return err
		}
		defer cl.Close()
		info, err := cl.ClusterInfo(cmd.Context())
		if err != nil {
			return err
		}
		nodes, err := cl.ListNodes(cmd.Context())
		if err != nil {
			return err
		}
		return writeControllerStatus(env.Stdout, info, nodes)
	}
	return cmd
}

// writeControllerStatus prints what `controller status` shows. Controllers
// being added join as non-voters and are promoted once they have caught
// up; until then they are listed as joining, with their Raft suffrage, so
// that an operator sees an add in progress (or one that never catches up).
func writeControllerStatus(out io.Writer, info controller.ClusterInfo, nodes controller.NodesResponse) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "cluster id:\t%s\n", info.ClusterID)
	fmt.Fprintf(w, "leader:\t%d at %s\n", info.LeaderID, info.LeaderAddr)
	fmt.Fprintf(w, "metadata version:\t%d\n", info.Version)
	for _, v := range info.Voters {
		fmt.Fprintf(w, "voter %d:\t%s (%s)\n", v.ID, v.Address, v.Suffrage)
	}
	for _, v := range info.Joining {
		fmt.Fprintf(w, "joining %d:\t%s (%s, catching up; promoted to voter once caught up)\n", v.ID, v.Address, v.Suffrage)
	}
	for _, n := range nodes.Nodes {
		state := "live"
		if !n.Live {
			state = "down"
		}
		fmt.Fprintf(w, "%s %d:\t%s, %d shards at %s (ring version %d)\n", n.Kind, n.ID, state, n.Ring.Shards, n.Ring.Address, n.Ring.Version)
	}
	return w.Flush()
}

func newTopicCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, delete, list, describe and alter topics (through the controller)",
	}
	requireSubcommand(cmd)
	ctl := addControllerFlag(cmd)
	var configs []string
	withClient := func(fn func(ctx context.Context, cl *controller.Client, args []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			// A malformed --config is the user's to fix whether or not a
			// controller is reachable, so it is reported first.
			if _, err := parseConfigs(configs); err != nil {
				return err
			}
			cl, err := newClient(cmd.Context(), ctl)
			if err != nil {
				return err
			}
			defer cl.Close()
			return fn(cmd.Context(), cl, args)
		}
	}

	var partitions int32
	var rf int16
	var validateOnly bool
	create := &cobra.Command{
		Use:   "create NAME...",
		Short: "Create topics",
		Args:  needArgs("the NAME of the topic to create", 1, -1),
		RunE: withClient(func(ctx context.Context, cl *controller.Client, args []string) error {
			cfg, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			req := controller.CreateTopicsRequest{ValidateOnly: validateOnly, WaitMs: storeWaitMs}
			for _, name := range args {
				req.Topics = append(req.Topics, controller.NewTopic{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: cfg})
			}
			resp, err := cl.CreateTopics(ctx, req)
			if err != nil {
				return err
			}
			var errs []error
			for _, r := range resp.Topics {
				if err := r.Err(); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
					continue
				}
				verb := "created"
				if validateOnly {
					verb = "valid (not created)"
				}
				fmt.Fprintf(env.Stdout, "%s %s: %d partitions, replication factor %d, id %s\n", verb, r.Name, len(r.Partitions), r.ReplicationFactor, r.ID)
			}
			return errors.Join(errs...)
		}),
	}
	create.Flags().Int32VarP(&partitions, "partitions", "p", 1, "partition count (-1: the default, 1)")
	create.Flags().Int16VarP(&rf, "replication-factor", "r", 1, "replication factor: 1 to 3, at most the number of live stores")
	create.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config NAME=VALUE (Kafka names), repeatable")
	create.Flags().BoolVar(&validateOnly, "validate-only", false, "check the request, create nothing")

	var byID bool
	del := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics (with --id, the arguments are topic ids)",
		Args:  needArgs("the NAME (or, with --id, the id) of the topic to delete", 1, -1),
		RunE: withClient(func(ctx context.Context, cl *controller.Client, args []string) error {
			req := controller.DeleteTopicsRequest{WaitMs: storeWaitMs}
			for _, a := range args {
				ref := controller.TopicRef{Name: a}
				if byID {
					id, err := controller.ParseTopicID(a)
					if err != nil {
						return err
					}
					ref = controller.TopicRef{ID: id}
				}
				req.Topics = append(req.Topics, ref)
			}
			resp, err := cl.DeleteTopics(ctx, req)
			if err != nil {
				return err
			}
			var errs []error
			for i, r := range resp.Topics {
				if err := r.Err(); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", args[i], err))
					continue
				}
				fmt.Fprintf(env.Stdout, "deleted %s (id %s)\n", r.Name, r.ID)
			}
			return errors.Join(errs...)
		}),
	}
	del.Flags().BoolVar(&byID, "id", false, "the arguments are topic ids")

	list := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  cobra.NoArgs,
		RunE: withClient(func(ctx context.Context, cl *controller.Client, _ []string) error {
			md, err := cl.Metadata(ctx, controller.MetadataRequest{})
			if err != nil {
				return err
			}
			for _, t := range md.Topics {
				fmt.Fprintln(env.Stdout, t.Name)
			}
			return nil
		}),
	}

	var all bool
	describe := &cobra.Command{
		Use:   "describe [NAME...]",
		Short: "Describe topics (all of them with no names): id, partitions, leaders, configs",
		RunE: withClient(func(ctx context.Context, cl *controller.Client, args []string) error {
			md, err := cl.Metadata(ctx, controller.MetadataRequest{Topics: args})
			if err != nil {
				return err
			}
			var errs []error
			for _, m := range md.Missing {
				errs = append(errs, fmt.Errorf("%s: %w", m, controller.ErrUnknownTopic))
			}
			live := map[int32]bool{}
			for _, n := range md.Nodes {
				live[n.ID] = n.Live
			}
			var res []controller.ConfigResource
			for _, t := range md.Topics {
				res = append(res, controller.ConfigResource{Type: controller.ResourceTopic, Name: t.Name})
			}
			dc, err := cl.DescribeConfigs(ctx, controller.DescribeConfigsRequest{Resources: res})
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			for i, t := range md.Topics {
				fmt.Fprintf(w, "topic %s\tid %s\tpartitions %d\treplication factor %d\n", t.Name, t.ID, len(t.Partitions), t.ReplicationFactor)
				for _, p := range t.Partitions {
					fmt.Fprintf(w, "  partition %d\tleader %d\tepoch %d\treplicas %s\tisr %s\t%s\n",
						p.Partition, p.Leader, p.LeaderEpoch, idList(replicasOf(p)), idList(isrOf(p)), partitionState(p, live))
				}
				for _, e := range dc.Resources[i].Configs {
					if e.IsDefault && !all {
						continue
					}
					fmt.Fprintf(w, "  %s=%s\t(%s)\n", e.Name, e.Value, strings.ToLower(string(e.Source)))
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			return errors.Join(errs...)
		}),
	}
	describe.Flags().BoolVar(&all, "all-configs", false, "list every config, defaults included")

	var newPartitions int32
	var deleteConfigs []string
	alter := &cobra.Command{
		Use:   "alter NAME",
		Short: "Add partitions to a topic or change its configs",
		Args:  needArgs("the NAME of the topic to alter", 1, 1),
		RunE: withClient(func(ctx context.Context, cl *controller.Client, args []string) error {
			name := args[0]
			var ops []controller.ConfigOp
			cfg, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			keys := make([]string, 0, len(cfg))
			for k := range cfg {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ops = append(ops, controller.ConfigOp{Name: k, Op: controller.OpSet, Value: cfg[k]})
			}
			for _, k := range deleteConfigs {
				ops = append(ops, controller.ConfigOp{Name: k, Op: controller.OpDelete})
			}
			if newPartitions == 0 && len(ops) == 0 {
				return errors.New("nothing to alter: give --partitions, --config or --delete-config")
			}
			if newPartitions != 0 {
				resp, err := cl.CreatePartitions(ctx, controller.CreatePartitionsRequest{Topics: []controller.PartitionCount{{Name: name, Count: newPartitions}}, ValidateOnly: validateOnly, WaitMs: storeWaitMs})
				if err != nil {
					return err
				}
				if err := resp.Topics[0].Err(); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s: now %d partitions\n", name, newPartitions)
			}
			if len(ops) > 0 {
				if err := cl.IncrementalAlterConfigs(ctx, controller.ResourceTopic, name, ops, validateOnly); err != nil {
					return err
				}
				fmt.Fprintf(env.Stdout, "%s: configs altered\n", name)
			}
			return nil
		}),
	}
	alter.Flags().Int32VarP(&newPartitions, "partitions", "p", 0, "grow the topic to this many partitions")
	alter.Flags().StringArrayVarP(&configs, "config", "c", nil, "set topic config NAME=VALUE, repeatable")
	alter.Flags().StringArrayVar(&deleteConfigs, "delete-config", nil, "remove a topic config (back to the default), repeatable")
	alter.Flags().BoolVar(&validateOnly, "validate-only", false, "check the request, change nothing")

	cmd.AddCommand(create, del, list, describe, alter)
	return cmd
}

// replicasOf is a partition's replica list; one placed before replication
// existed has its leader alone.
func replicasOf(p controller.PartitionInfo) []int32 {
	if len(p.Replicas) == 0 && p.Leader != controller.NoLeader {
		return []int32{p.Leader}
	}
	return p.Replicas
}

func isrOf(p controller.PartitionInfo) []int32 {
	if len(p.ISR) == 0 && len(p.Replicas) == 0 && p.Leader != controller.NoLeader {
		return []int32{p.Leader}
	}
	return p.ISR
}

// partitionState says, for an operator, whether a partition serves and
// whether it is fully replicated.
func partitionState(p controller.PartitionInfo, live map[int32]bool) string {
	var state string
	switch {
	case p.Leader == controller.NoLeader && len(p.Replicas) == 0:
		state = "unplaced (no live store yet)"
	case p.Leader == controller.NoLeader:
		state = "offline (no in-sync replica is live)"
	case !live[p.Leader]:
		state = "offline (store down)"
	case len(isrOf(p)) < len(replicasOf(p)):
		state = "under-replicated"
	default:
		state = "online"
	}
	if len(p.TargetReplicas) > 0 {
		state += ", reassigning to " + idList(p.TargetReplicas)
	}
	return state
}

// idList writes node ids as Kafka's tools do: [11,12,13].
func idList(ids []int32) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	b.WriteByte(']')
	return b.String()
}

// storeWaitMs is how long topic commands wait for the stores to create or
// delete the partitions before answering.
const storeWaitMs = 10000

func parseConfigs(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--config %q: want NAME=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}
