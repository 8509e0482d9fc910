package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/tools/config"
)

// The native gateway: inside serve, beside the Kafka gateway and on the
// same metadata (so both protocols see one set of topics and ids), and as
// `aerostream gateway native`, a process of its own.

// nativeCluster is native.Cluster over the Kafka gateway's metadata
// (kmeta): the native gateway reads the same snapshot and writes through
// the same controller client.
type nativeCluster struct{ c *kmeta.Cluster }

var _ native.Cluster = nativeCluster{}

func (n nativeCluster) ClusterID() string { return n.c.ClusterID() }

// kerrOf keeps kmeta's error text and adds the Kafka code both gateways
// answer it with, which the native gateway's table reads first.
func kerrOf(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", kafka.ErrorFor(err), err)
}

func toNativeTopic(t kafka.Topic) native.Topic {
	nt := native.Topic{Name: t.Name, ID: t.ID, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor,
		Internal: t.Internal, Configs: t.Configs}
	for p := range t.Partitions {
		pm := t.Partition(p)
		nt.Leaders = append(nt.Leaders, native.Leader{Node: pm.Leader, Epoch: pm.LeaderEpoch})
	}
	return nt
}

func (n nativeCluster) Topic(ctx context.Context, name string) (native.Topic, error) {
	t, err := n.c.Topic(ctx, name)
	if err != nil {
		return native.Topic{}, kerrOf(err)
	}
	return toNativeTopic(t), nil
}

func (n nativeCluster) TopicByID(ctx context.Context, id [16]byte) (native.Topic, error) {
	t, err := n.c.TopicByID(ctx, id)
	if err != nil {
		return native.Topic{}, kerrOf(err)
	}
	return toNativeTopic(t), nil
}

func (n nativeCluster) Topics(ctx context.Context) ([]native.Topic, error) {
	ts, err := n.c.Topics(ctx)
	if err != nil {
		return nil, kerrOf(err)
	}
	out := make([]native.Topic, 0, len(ts))
	for _, t := range ts {
		out = append(out, toNativeTopic(t))
	}
	return out, nil
}

func (n nativeCluster) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]*string) (native.Topic, error) {
	if kafka.IsInternalTopic(name) {
		return native.Topic{}, fmt.Errorf("%w: %s is the gateways' own", native.ErrInternalTopic, name)
	}
	t, err := n.c.CreateTopic(ctx, kafka.CreateTopic{Name: name, Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	if err != nil {
		return native.Topic{}, kerrOf(err)
	}
	return toNativeTopic(t), nil
}

func (n nativeCluster) AlterConfigs(ctx context.Context, name string, set map[string]*string) error {
	ops := make([]kafka.ConfigOp, 0, len(set))
	for k, v := range set {
		op := kafka.ConfigOp{Name: k, Op: kafka.ConfigOpSet, Value: v}
		if v == nil {
			op.Op = kafka.ConfigOpDelete
		}
		ops = append(ops, op)
	}
	res := kafka.ConfigResource{Type: kafka.ConfigResourceTopic, Name: name}
	return kerrOf(n.c.IncrementalAlterConfigs(ctx, res, ops, false))
}

func (n nativeCluster) DeleteTopic(ctx context.Context, name string) error {
	return kerrOf(n.c.DeleteTopic(ctx, name))
}

// kafkaOffsets is native.Offsets through the Kafka gateways' group
// coordinators, as a Kafka client commits: so native commits land in
// __consumer_offsets in the Kafka gateway's own format, with its
// coordinator routing, and Kafka consumers of the group see them. seeds
// names the Kafka gateways to bootstrap from.
type kafkaOffsets struct {
	seeds func(ctx context.Context) ([]string, error)
	// opts secure the client as listeners.kafka requires, and refused
	// names its principal in an authorization failure (security.go).
	opts    []kgo.Opt
	refused func(error) error

	mu struct {
		sync.Mutex
		adm *kadm.Client
		kc  *kgo.Client
	}
}

var _ native.Offsets = (*kafkaOffsets)(nil)

func (o *kafkaOffsets) admin(ctx context.Context) (*kadm.Client, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.adm != nil {
		return o.mu.adm, nil
	}
	seeds, err := o.seeds(ctx)
	if err != nil {
		return nil, err
	}
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%w: no Kafka gateway is live to coordinate groups", kerr.CoordinatorNotAvailable)
	}
	kc, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ClientID("aerostream-native-gateway")}, o.opts...)...)
	if err != nil {
		return nil, err
	}
	o.mu.kc, o.mu.adm = kc, kadm.NewClient(kc)
	return o.mu.adm, nil
}

func (o *kafkaOffsets) CommitOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	adm, err := o.admin(ctx)
	if err != nil {
		return err
	}
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err != nil {
		return o.refuse(err)
	}
	return o.refuse(resp.Error())
}

// refuse names the client's principal in an authorization failure.
func (o *kafkaOffsets) refuse(err error) error {
	if err == nil || o.refused == nil {
		return err
	}
	return o.refused(err)
}

func (o *kafkaOffsets) FetchOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	adm, err := o.admin(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, o.refuse(err)
	}
	out := map[int32]int64{}
	for p, r := range resp[topic] {
		if r.Err == nil && r.At >= 0 {
			out[p] = r.At
		}
	}
	return out, nil
}

var (
	_ native.GroupLister = (*kafkaOffsets)(nil)
	_ native.ProducerIDs = (*kafkaOffsets)(nil)
)

// ListGroups lists the groups the Kafka gateways' coordinators know (those
// with committed offsets among them).
func (o *kafkaOffsets) ListGroups(ctx context.Context) ([]string, error) {
	adm, err := o.admin(ctx)
	if err != nil {
		return nil, err
	}
	ls, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, o.refuse(err)
	}
	return ls.Groups(), nil
}

// InitProducerID asks a Kafka gateway for an idempotent producer id, so
// native producers draw from the cluster's one allocator (each gateway's
// blocks of __producer_ids) and never share an id with a Kafka producer.
func (o *kafkaOffsets) InitProducerID(ctx context.Context) (int64, error) {
	if _, err := o.admin(ctx); err != nil {
		return 0, err
	}
	o.mu.Lock()
	kc := o.mu.kc
	o.mu.Unlock()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp, err := req.RequestWith(ctx, kc)
	if err != nil {
		return 0, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, o.refuse(err)
	}
	return resp.ProducerID, nil
}

func (o *kafkaOffsets) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.kc != nil {
		o.mu.kc.Close()
	}
}

// newNativeGateway builds the native gateway over backend, with its
// metadata from cluster and its group offsets through the Kafka gateways
// seeds names.
func newNativeGateway(cfg config.Config, backend ring.Backend, cluster *kmeta.Cluster, offsets *kafkaOffsets, api any, logger *slog.Logger) (*native.Gateway, func(ctx context.Context), error) {
	sasl, refresh, err := nativeListenerSecurity(cfg, api, logger)
	if err != nil {
		return nil, nil, err
	}
	if offsets.opts, err = internalKafkaOpts(cfg, os.Environ()); err != nil { // security.go
		logger.Warn("the native gateway's group offsets and producer ids will fail", "err", err)
	}
	offsets.refused = func(err error) error { return internalRefused(cfg, err) }
	gw, err := native.New(native.Options{
		Backend: backend, Cluster: nativeCluster{cluster}, Logger: logger, NodeID: cfg.Gateway.NodeID,
		MaxQueuedBytes: cfg.Kafka.QueuedMaxRequestBytes, DefaultPartitions: cfg.Kafka.NumPartitions,
		Offsets: offsets, ProducerIDs: offsets, Auth: sasl,
	})
	return gw, refresh, err
}

// nativeListenerSecurity is the native listener's SASL (nativeSASL) and
// its authorizer, with the loop that keeps the ACLs current (nil: nothing
// to refresh), as the Kafka listener's.
func nativeListenerSecurity(cfg config.Config, api any, logger *slog.Logger) (native.AuthOptions, func(ctx context.Context), error) {
	o, err := nativeSASL(cfg, api) // security.go
	if err != nil {
		return o, nil, err
	}
	if o.Principals, err = certPrincipals(cfg); err != nil { // gateway.go
		return o, nil, err
	}
	warnAnonymous(cfg, "listeners.native", cfg.Listeners.Native, o.SASL, logger)
	z, refresh, err := aclAuthorizer(cfg, securityOf(api), logger) // security.go
	if err != nil {
		return o, nil, err
	}
	o.Authorizer = z
	return o, refresh, nil
}

// brokerSeeds lists the live Kafka gateways' addresses.
func brokerSeeds(cluster *kmeta.Cluster) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		bs, err := cluster.Brokers(ctx)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, b := range bs {
			out = append(out, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
		return out, nil
	}
}

const gatewayNativeLong = `Run a native binary-protocol gateway (gateways/native/PROTOCOL.md) as a
process of its own: native clients (the Go SDK, "aerostream produce" and
"aerostream consume") connect to listeners.native (--native-listen);
topics and every store's shard ring come from the controllers of
controller.join, with which the gateway registers under gateway.node_id
(give it an id no Kafka gateway uses). Each partition goes to the store
that leads it, over that store's ring.

  aerostream gateway native --gateway.node_id 2001 \
      --controller.join 127.0.0.1:8001 --native-listen 127.0.0.1:9091

gateway.ring_addr (--gateway.ring_addr host:port or unix:/path) overrides
the routing for a one-store setup. SIGINT or SIGTERM drains connections
and stops cleanly.`

func newGatewayNativeCmd(env Env) *cobra.Command {
	var flags *config.Flags
	cmd := &cobra.Command{
		Use:   "native",
		Short: "Run a native-protocol gateway that reaches the stores over their shard rings",
		Long:  gatewayNativeLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := config.Load(config.Options{File: flags.File, Env: env.Environ, Flags: flags})
			if err != nil {
				return err
			}
			return runNativeGateway(cmd.Context(), env, loaded)
		},
	}
	cmd.Flags().SortFlags = false
	flags = config.AddFlags(cmd.Flags())
	return cmd
}

// runNativeGateway runs `aerostream gateway native` until a signal.
func runNativeGateway(ctx context.Context, env Env, loaded *config.Loaded) error {
	tuneGC()
	cfg := loaded.Config
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Listeners.Native == "" {
		return errors.New("listeners.native is empty: a native gateway serves its clients there")
	}
	addrs := splitAddrs(cfg.Controller.Join)
	if len(addrs) == 0 {
		return errors.New("controller.join is empty: a gateway gets topics from the controllers")
	}
	if err := cfg.CheckControllerSecret(); err != nil {
		return err
	}
	ln, err := listen(cfg.Listeners.Native)
	if err != nil {
		return fmt.Errorf("listeners.native: %w", err)
	}
	defer ln.Close()
	logger := newLogger(env, cfg)
	slog.SetDefault(logger)
	if ln, err = tlsListener(cfg, "listeners.native", cfg.Listeners.Native, ln, logger); err != nil { // security.go
		return err
	}
	logger.Info("starting", "command", "gateway native", "version", Version(), "config_file", orNone(loaded.File))

	links, err := newInternalTLS(cfg, logger) // internaltls.go
	if err != nil {
		return err
	}
	backend, err := dialRingOverride(ctx, cfg.Gateway.RingAddr, links.ringClient, logger)
	if err != nil || (backend == nil && ctx.Err() != nil) {
		return err // nil: a signal while the store was not reachable yet
	}
	if backend != nil {
		defer backend.Close()
	}
	api := links.controllerClient(addrs, logger)
	defer api.Close()
	// No Kafka address: the controller lists this node as a gateway, but
	// Kafka clients never see it as a broker.
	cluster := kmeta.New(kmeta.Options{API: api, Backend: backend, Dial: links.ringDial(0, logger), NodeID: cfg.Gateway.NodeID, Logger: logger, PartitionConfig: partitionConfig})
	defer cluster.Backend().Close()
	offsets := &kafkaOffsets{seeds: brokerSeeds(cluster)}
	defer offsets.close()
	gw, refresh, err := newNativeGateway(cfg, cluster.Backend(), cluster, offsets, api, logger)
	if err != nil {
		return err
	}
	sup := newSupervisor(logger)
	defer sup.stop()
	sup.start(ctx, "native gateway membership", cluster.Run)
	sup.start(ctx, "native gateway", func(ctx context.Context) error {
		return runBeside(ctx, refresh, func(ctx context.Context) error { return gw.Serve(ctx, ln) }) // security.go
	})
	routing := "by partition leader"
	if cfg.Gateway.RingAddr != "" {
		routing = "ring_addr override"
	}
	logger.Info("running", "command", "gateway native", "native_addr", listenerAddr(ln), "ring_addr", orNone(cfg.Gateway.RingAddr),
		"routing", routing, "controllers", strings.Join(addrs, ","), "node_id", cfg.Gateway.NodeID)
	err = sup.wait(ctx)
	stop()
	sup.stop()
	if err != nil {
		logger.Error("stopped", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}

// startNative starts serve's native gateway on ln beside the Kafka one,
// on its metadata (cluster) and with its group coordinator at kafkaAddr,
// or on metadata of its own when serve runs no Kafka gateway (committed
// offsets are then not served).
func startNative(ctx context.Context, sup *supervisor, cfg config.Config, ln net.Listener, backend ring.Backend, api controller.API, cluster *kmeta.Cluster, kafkaAddr string, logger *slog.Logger) error {
	if cluster == nil {
		cluster = kmeta.New(kmeta.Options{API: api, Backend: backend, NodeID: cfg.Gateway.NodeID, Logger: logger, PartitionConfig: partitionConfig})
		sup.start(ctx, "native gateway membership", cluster.Run)
	}
	offsets := &kafkaOffsets{seeds: func(context.Context) ([]string, error) {
		if kafkaAddr == "" {
			return nil, nil
		}
		return []string{kafkaAddr}, nil
	}}
	gw, refresh, err := newNativeGateway(cfg, cluster.Backend(), cluster, offsets, api, logger)
	if err != nil {
		return err
	}
	sup.start(ctx, "native gateway", func(ctx context.Context) error {
		defer offsets.close()
		return runBeside(ctx, refresh, func(ctx context.Context) error { return gw.Serve(ctx, ln) }) // security.go
	})
	return nil
}
