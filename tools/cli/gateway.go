package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/tools/config"
)

// The Kafka gateway: inside serve (in-process ring, serve's controller),
// and as `aerostream gateway kafka`, a process of its own that reaches a
// store over the shard ring and the controllers over the network.

const gatewayKafkaLong = `Run a Kafka wire-protocol gateway as a process of its own: Kafka clients
connect to listeners.kafka (--kafka-listen); topics, configs, the live
gateways and every store's shard ring come from the controllers of
controller.join, with which the gateway registers under gateway.node_id.
Each partition goes to the store that leads it, over that store's ring,
following leadership as the controller moves it.

  aerostream gateway kafka --gateway.node_id 1001 \
      --controller.join 127.0.0.1:8001 --kafka-listen 127.0.0.1:9092

gateway.ring_addr (--gateway.ring_addr host:port or unix:/path) overrides
the routing for a one-store setup: every partition then goes to that store.

A gateway holds no state that must survive it: committed offsets live in
the store (__consumer_offsets). SIGINT or SIGTERM drains connections and
stops cleanly.`

func newGatewayCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Run a gateway process (kafka or native)",
	}
	requireSubcommand(cmd)
	var flags *config.Flags
	kafkaCmd := &cobra.Command{
		Use:   "kafka",
		Short: "Run a Kafka wire-protocol gateway that reaches the stores over their shard rings",
		Long:  gatewayKafkaLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := config.Load(config.Options{File: flags.File, Env: env.Environ, Flags: flags})
			if err != nil {
				return err
			}
			return runKafkaGateway(cmd.Context(), env, loaded)
		},
	}
	kafkaCmd.Flags().SortFlags = false
	flags = config.AddFlags(kafkaCmd.Flags())
	cmd.AddCommand(kafkaCmd, newGatewayNativeCmd(env))
	return cmd
}

// dialRingOverride dials gateway.ring_addr when it is set (nil, nil when
// not: the router then dials each store when a request first needs it).
// The one store may still be starting, so it keeps dialing until the store
// answers; a signal meanwhile returns nil, nil with ctx done.
func dialRingOverride(ctx context.Context, addr string, tlsCfg *tls.Config, logger *slog.Logger) (ring.Backend, error) {
	if addr == "" {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		b, err := ring.Dial(dctx, addr, ring.DialOptions{Logger: logger, TLS: tlsCfg})
		cancel()
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			logger.Info("stopped", "during", "startup", "ring_addr", addr, "err", err)
			return nil, nil
		}
		if attempt%10 == 0 {
			logger.Warn("store not reachable yet, retrying", "ring_addr", addr, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// runKafkaGateway runs `aerostream gateway kafka` until a signal.
func runKafkaGateway(ctx context.Context, env Env, loaded *config.Loaded) error {
	tuneGC()
	cfg := loaded.Config
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Listeners.Kafka == "" {
		return errors.New("listeners.kafka is empty: a Kafka gateway serves its clients there")
	}
	addrs := splitAddrs(cfg.Controller.Join)
	if len(addrs) == 0 {
		return errors.New("controller.join is empty: a gateway gets topics and configs from the controllers")
	}
	if err := cfg.CheckControllerSecret(); err != nil {
		return err
	}
	ln, err := listen(cfg.Listeners.Kafka)
	if err != nil {
		return fmt.Errorf("listeners.kafka: %w", err)
	}
	defer ln.Close()

	logger := newLogger(env, cfg)
	slog.SetDefault(logger)
	logger.Info("starting", "command", "gateway kafka", "version", Version(), "config_file", orNone(loaded.File))
	for _, name := range loaded.UnknownEnv {
		logger.Warn("environment variable sets no config key", "name", name)
	}

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

	gw, err := newKafkaGateway(cfg, ln, backend, api, nil, logger)
	if err != nil {
		return err
	}
	// Closed after the supervisor's parts have stopped (defers run last
	// in, first out), since the wire server uses it to the end.
	defer gw.backend.Close()
	sup := newSupervisor(logger)
	defer sup.stop()
	gw.start(ctx, sup)
	srAddr, err := startSchemaRegistry(ctx, sup, cfg, api, logger) // schema_registry.go
	if err != nil {
		return err
	}
	routing := "by partition leader"
	if cfg.Gateway.RingAddr != "" {
		routing = "ring_addr override"
	}
	logger.Info("running", "command", "gateway kafka", "kafka_addr", listenerAddr(ln), "advertised", gw.advertised,
		"ring_addr", orNone(cfg.Gateway.RingAddr), "routing", routing, "controllers", strings.Join(addrs, ","), "node_id", cfg.Gateway.NodeID,
		"schema_registry_addr", orNone(srAddr))
	err = sup.wait(ctx)
	stop() // a second signal now ends the process, for when draining hangs
	if err != nil {
		logger.Error("stopping", "reason", "part failed", "err", err)
	} else {
		logger.Info("stopping", "reason", "signal")
	}
	sup.stop()
	if err != nil {
		logger.Error("stopped", "err", err)
		return err
	}
	logger.Info("stopped")
	return nil
}

// kafkaGateway is a Kafka gateway ready to start: the wire server and its
// controller membership, which keeps its metadata current.
type kafkaGateway struct {
	advertised string
	// backend is the ring the gateway serves from: the one it was given,
	// or the router over every store that its Cluster built.
	backend ring.Backend
	serve   func(ctx context.Context) error
	member  func(ctx context.Context) error
	// cluster is its metadata, which serve's native gateway shares.
	cluster *kmeta.Cluster
	gw      *kafka.Gateway // for the admin API's groups
}

// start runs the gateway under sup: membership first, so that the wire
// server stops before the metadata it answers from.
func (g *kafkaGateway) start(ctx context.Context, sup *supervisor) {
	sup.start(ctx, "kafka gateway membership", g.member)
	sup.start(ctx, "kafka gateway", g.serve)
}

// certPrincipals maps the verified client certificates of Kafka, native
// and HTTP TLS listeners to principals by tls.principal_mapping_rules.
func certPrincipals(cfg config.Config) (*auth.PrincipalMapper, error) {
	m, err := auth.ParsePrincipalMappingRules(cfg.TLS.PrincipalMappingRules)
	if err != nil {
		return nil, fmt.Errorf("tls.principal_mapping_rules: %w", err)
	}
	return m, nil
}

// newKafkaGateway builds the Kafka gateway on ln, in front of backend
// (nil: a router to each partition's leader store), with its metadata from
// api.
func newKafkaGateway(cfg config.Config, ln net.Listener, backend ring.Backend, api controller.API, reg prometheus.Registerer, logger *slog.Logger) (*kafkaGateway, error) {
	adv, err := advertisedKafka(cfg, ln)
	if err != nil {
		return nil, err
	}
	sec, err := newKafkaSecurity(cfg, api, logger) // security.go
	if err != nil {
		return nil, err
	}
	authOpts := sec.opts
	if authOpts.Principals, err = certPrincipals(cfg); err != nil {
		return nil, err
	}
	if ln, err = tlsListener(cfg, "listeners.kafka", cfg.Listeners.Kafka, ln, logger); err != nil {
		return nil, err
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	kc := cfg.Kafka
	var dial kmeta.DialFunc
	if backend == nil { // a router over every store: their rings are as listeners.ring says
		links, err := newInternalTLS(cfg, logger) // internaltls.go
		if err != nil {
			return nil, err
		}
		dial = links.ringDial(0, logger)
	}
	cluster := newKafkaCluster(api, backend, dial, cfg.Gateway.NodeID, adv, logger)
	backend = cluster.Backend()
	gw, err := kafka.New(kafka.Options{
		Backend:                      backend,
		Cluster:                      cluster,
		Logger:                       logger,
		NodeID:                       cfg.Gateway.NodeID,
		AdvertisedAddr:               adv,
		MaxRequestBytes:              kc.SocketRequestMaxBytes,
		MaxQueuedRequestBytes:        kc.QueuedMaxRequestBytes,
		AutoCreateTopics:             kc.AutoCreateTopicsEnable,
		DefaultPartitions:            kc.NumPartitions,
		OffsetsPartitions:            kc.OffsetsTopicNumPartitions,
		GroupMinSessionTimeout:       ms(kc.GroupMinSessionTimeoutMs),
		GroupMaxSessionTimeout:       ms(kc.GroupMaxSessionTimeoutMs),
		GroupInitialRebalanceDelay:   ms(kc.GroupInitialRebalanceDelayMs),
		FetchSessionCacheSlots:       kc.FetchSessionCacheSlots,
		TransactionalIDExpiration:    ms(kc.TransactionalIDExpirationMs),
		GroupConsumerMigrationPolicy: kc.GroupConsumerMigrationPolicy,
		LogDir:                       cfg.DataDir,
		Auth:                         authOpts,
		SchemaIDs:                    schemaIDs(cfg, api, logger),
	})
	if err != nil {
		return nil, err
	}
	if reg != nil {
		reg.MustRegister(gw.Collectors()...)
	}
	return &kafkaGateway{
		advertised: adv,
		backend:    backend,
		serve: func(ctx context.Context) error {
			return sec.serve(ctx, func(ctx context.Context) error { return gw.Serve(ctx, ln) })
		},
		member:  cluster.Run,
		cluster: cluster,
		gw:      gw,
	}, nil
}

// advertisedKafka is the address Kafka clients are told:
// listeners.advertised_kafka, else the listener's, with 127.0.0.1 for an
// unspecified host (a client cannot dial 0.0.0.0).
func advertisedKafka(cfg config.Config, ln net.Listener) (string, error) {
	if a := cfg.Listeners.AdvertisedKafka; a != "" {
		return a, nil
	}
	host, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		return "", fmt.Errorf("listeners.kafka: %w", err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
