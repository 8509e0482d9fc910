package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/fetchcache"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/objstore/azure"
	"github.com/aerostream/aerostream/tierd/objstore/filesystem"
	"github.com/aerostream/aerostream/tierd/objstore/gcs"
	"github.com/aerostream/aerostream/tierd/objstore/s3"
	"github.com/aerostream/aerostream/tools/config"
)

// tierStack is the cold tier of a store: the bucket, the tiering daemon
// and the cold-read cache, wired into logstore through its Tier and
// ColdTier seams.
type tierStack struct {
	bucket  objstore.Bucket
	cache   *fetchcache.Cache
	metrics *tierd.Metrics
	proxy   *tierProxy
	daemon  *tierd.Daemon // made by newDaemon once the store is open; run by the daemon's supervisor
}

// openBucket builds the configured provider. Secrets stay in cfg; Name()
// and every log line show only the location.
//
// A bucket that is missing or refuses the credentials at start does not stop
// the store: produce must never depend on the cold tier. The problem is
// logged as an error naming the bucket, uploads fail and are retried by the
// rescan (each failure logged, the backlog gauge growing), and tiering
// catches up once the bucket is fixed. A configuration error (a bad key)
// still fails the start, naming the key.
func openBucket(ctx context.Context, cfg config.Config, logger *slog.Logger) (objstore.Bucket, error) {
	b, err := openProvider(ctx, cfg, logger, false)
	if errors.Is(err, objstore.ErrBucketNotFound) || errors.Is(err, objstore.ErrAccessDenied) {
		logger.Error("tiered storage: the bucket is unusable; the store runs, and uploads are retried until it is fixed",
			"provider", cfg.TieredStorage.Provider, "err", err)
		return openProvider(ctx, cfg, logger, true)
	}
	return b, err
}

func openProvider(ctx context.Context, cfg config.Config, logger *slog.Logger, skipCheck bool) (objstore.Bucket, error) {
	ts := cfg.TieredStorage
	switch ts.Provider {
	case "s3":
		c := ts.S3
		return s3.New(ctx, s3.Config{Bucket: c.Bucket, Prefix: c.Prefix, Region: c.Region, EndpointURL: c.EndpointURL,
			AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, ForcePathStyle: c.ForcePathStyle, SignPayload: c.SignPayload},
			s3.Options{Logger: logger, SkipBucketCheck: skipCheck})
	case "gcs":
		c := ts.GCS
		return gcs.New(ctx, gcs.Config{Bucket: c.Bucket, Prefix: c.Prefix, ServiceAccountPath: c.ServiceAccountPath,
			Endpoint: c.Endpoint}, gcs.Options{Logger: logger, SkipBucketCheck: skipCheck})
	case "azure":
		c := ts.Azure
		return azure.New(ctx, azure.Config{ContainerName: c.ContainerName, AccountName: c.AccountName, Prefix: c.Prefix,
			AccessKey: c.AccessKey, Endpoint: c.Endpoint}, azure.Options{Logger: logger, SkipContainerCheck: skipCheck})
	case "local":
		root := ts.Local.RootPath
		if root == "" {
			// The embedded default lives in the data dir, so it is made on
			// first start. An explicit root_path is not created: a missing
			// NFS mount must fail rather than fill the local disk.
			root = filepath.Join(cfg.DataDir, "cold")
			if err := os.MkdirAll(root, 0o755); err != nil {
				return nil, fmt.Errorf("tiered_storage.local: %w", err)
			}
		}
		return filesystem.New(filesystem.Config{RootPath: root}, logger)
	}
	return nil, fmt.Errorf("tiered_storage.provider %q is not one of s3, gcs, azure, local", ts.Provider)
}

// openTierStack opens the bucket and the cache, which the store needs to
// open. The daemon needs the store, so newDaemon makes it once the store is
// open; until then the proxy drops the store's notifications, and the
// daemon's first rescan finds that work again.
func openTierStack(ctx context.Context, cfg config.Config, reg prometheus.Registerer, logger *slog.Logger) (*tierStack, error) {
	b, err := openBucket(ctx, cfg, logger)
	if err != nil {
		return nil, fmt.Errorf("tiered storage: %w", err)
	}
	m := tierd.NewMetrics(reg)
	b = objstore.Instrumented(b, m)
	ts := cfg.TieredStorage
	cache, err := fetchcache.New(b, fetchcache.Options{ChunkSize: ts.CacheChunkBytes, MaxBytes: ts.CacheBytes, Prealloc: ts.CachePrealloc,
		MaxConcurrentGets: ts.ColdReadGets, MaxBytesPerSec: ts.ColdReadBytesPerS, Readahead: readahead(ts.CacheReadahead), Logger: logger})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("tiered storage cache: %w", err)
	}
	if reg != nil {
		for _, c := range cache.Collectors() {
			reg.MustRegister(c)
		}
	}
	return &tierStack{bucket: b, cache: cache, metrics: m, proxy: &tierProxy{}}, nil
}

// readahead maps the config (0 = none) onto fetchcache's (negative = none,
// 0 = its default).
func readahead(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// storeHooks sets the store options that connect logstore to the tier.
func (t *tierStack) storeHooks(o *logstore.Options) {
	o.Tier = t.proxy
	o.Cold = t.cache
}

// newDaemon makes the tiering daemon for st and connects the store's
// notifications to it. Its Run is started (and watched) by the caller.
func (t *tierStack) newDaemon(cfg config.Config, st *logstore.Store, cat *catalog.Catalog, logger *slog.Logger) error {
	d, err := tierd.New(tierd.Options{Bucket: t.bucket, Store: st, Catalog: cat, Uploaders: cfg.TieredStorage.Uploaders,
		RescanInterval:   time.Duration(cfg.TieredStorage.RescanIntervalMs) * time.Millisecond,
		ManifestInterval: time.Duration(cfg.TieredStorage.ManifestIntervalMs) * time.Millisecond,
		Metrics:          t.metrics, Logger: logger})
	if err != nil {
		return err
	}
	t.daemon = d
	t.proxy.set(d)
	return nil
}

// close disconnects the daemon (whose Run must have returned) and releases
// the cache and the bucket.
func (t *tierStack) close() {
	t.proxy.set(nil)
	t.cache.Close()
	t.bucket.Close()
}

// tierProxy forwards logstore's Tier calls to the daemon once it exists.
type tierProxy struct {
	mu struct {
		sync.Mutex
		d *tierd.Daemon
	}
}

var (
	_ logstore.Tier         = (*tierProxy)(nil)
	_ logstore.ReplacedTier = (*tierProxy)(nil)
)

func (p *tierProxy) set(d *tierd.Daemon) {
	p.mu.Lock()
	p.mu.d = d
	p.mu.Unlock()
}

func (p *tierProxy) get() *tierd.Daemon {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.d
}

func (p *tierProxy) Sealed(seg catalog.Segment) {
	if d := p.get(); d != nil {
		d.Sealed(seg)
	}
}

func (p *tierProxy) DeleteRemote(seg catalog.Segment) {
	if d := p.get(); d != nil {
		d.DeleteRemote(seg)
	}
}

// Replaced passes on the objects of segments the log cleaner rewrote
// (logstore.ReplacedTier); before the daemon runs, `tier gc` finds them.
func (p *tierProxy) Replaced(seg catalog.Segment) {
	if d := p.get(); d != nil {
		d.Replaced(seg)
	}
}

// topicRegistrar returns how `tier restore` registers a restored topic with
// the controller (serve's own, or those of controller.join), so that Kafka
// clients see it; nil when the store runs without a controller. The
// partitions exist locally already, so the store agent, told by placement
// to create them, finds them there and keeps them.
func topicRegistrar(ctl *controller.Controller, join []string, links internalTLS, logger *slog.Logger) func(ctx context.Context, topic string, partitions int32) error {
	create := func(ctx context.Context, req controller.CreateTopicsRequest) (controller.CreateTopicsResponse, error) {
		return ctl.CreateTopics(ctx, req)
	}
	switch {
	case ctl != nil:
	case len(join) > 0:
		create = func(ctx context.Context, req controller.CreateTopicsRequest) (controller.CreateTopicsResponse, error) {
			cl := links.controllerClient(join, logger)
			defer cl.Close()
			return cl.CreateTopics(ctx, req)
		}
	default:
		return nil
	}
	return func(ctx context.Context, topic string, partitions int32) error {
		resp, err := create(ctx, controller.CreateTopicsRequest{Topics: []controller.NewTopic{{Name: topic, Partitions: partitions,
			ReplicationFactor: 1}}, WaitMs: 10000})
		if err != nil {
			return err
		}
		for _, r := range resp.Topics {
			if r.Error != nil {
				return r.Error
			}
		}
		return nil
	}
}
