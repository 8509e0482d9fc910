package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"syscall"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/registry"
	"github.com/aerostream/aerostream/tools/config"
)

// The schema registry runs in serve and beside `gateway kafka`, over the
// controller that holds its state: serve's own voter in process, or the
// controllers of controller.join. It answers on listeners.schema_registry
// and, in serve, under /schema-registry on listeners.http.

// schemaRegistryPrefix is where the HTTP admin listener mounts the registry.
const schemaRegistryPrefix = "/schema-registry"

// newSchemaRegistry builds a registry over api, nil when api cannot hold
// schemas (no controller).
func newSchemaRegistry(cfg config.Config, api any, logger *slog.Logger) (*registry.Registry, error) {
	switch c := api.(type) {
	case *controller.Controller:
		if c == nil {
			return nil, nil
		}
	case *controller.Client:
		if c == nil {
			return nil, nil
		}
	}
	store, ok := api.(controller.SchemaStore)
	if !ok {
		return nil, nil
	}
	return registry.New(registry.Options{Store: store, MaxSchemaBytes: cfg.SchemaRegistry.MaxSchemaBytes, Logger: logger})
}

// schemaIDs is what a Kafka gateway validates produced records with; nil
// without a controller.
func schemaIDs(cfg config.Config, api any, logger *slog.Logger) kafka.SchemaIDs {
	reg, err := newSchemaRegistry(cfg, api, logger)
	if err != nil || reg == nil {
		return nil
	}
	return registry.NewIDCache(reg)
}

// bindSchemaRegistry opens listeners.schema_registry. Every process on one
// machine defaults to the same port: a default that is taken leaves this
// process's registry listener off, with a warning (serve still mounts it
// on listeners.http); a port the user chose is theirs to fix.
func bindSchemaRegistry(cfg config.Config, logger *slog.Logger) (net.Listener, error) {
	addr := cfg.Listeners.SchemaRegistry
	if addr == "" {
		return nil, nil
	}
	ln, err := listen(addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) && addr == config.Default().Listeners.SchemaRegistry {
			logger.Warn("the default schema registry port is taken (another AeroStream process?); this process serves no schema registry listener: set listeners.schema_registry to choose one",
				"default", addr)
			return nil, nil
		}
		return nil, errors.Join(errors.New("listeners.schema_registry"), err)
	}
	return ln, nil
}

// startSchemaRegistry binds and serves the registry over api under sup; it
// returns the address served ("" for none).
func startSchemaRegistry(ctx context.Context, sup *supervisor, cfg config.Config, api any, logger *slog.Logger) (string, error) {
	reg, err := newSchemaRegistry(cfg, api, logger)
	if err != nil || reg == nil {
		return "", err
	}
	ln, err := bindSchemaRegistry(cfg, logger)
	if err != nil || ln == nil {
		return "", err
	}
	// As on listeners.http: reads need an authenticated principal when
	// authentication is required, writes ALTER on the cluster.
	sec, err := newHTTPSecurity(cfg, "listeners.schema_registry", cfg.Listeners.SchemaRegistry, api, logger) // security.go
	if err != nil {
		_ = ln.Close()
		return "", err
	}
	h := sec.guard.Authenticate(sec.guard.RequireCluster("", auth.OpAlter, reg.Handler()))
	sup.start(ctx, "schema registry", func(ctx context.Context) error {
		return runBeside(ctx, sec.refresh, func(ctx context.Context) error { return gwhttp.ServeHandler(ctx, ln, h, logger) })
	})
	return listenerAddr(ln), nil
}
