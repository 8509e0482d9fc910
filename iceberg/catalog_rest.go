package iceberg

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// restCatalog is an external REST catalog that connects on first use and
// again after a failed connect. iceberg-go's client asks the catalog for
// its config (and a token) when it is made, so a catalog down while a
// store starts would otherwise leave that store without Iceberg for good:
// not committing the topics it leads, and not holding back retention
// for records not yet in their tables. Instead every call fails, with the
// reason, until the catalog answers; the committer retries with backoff
// and the retention guard holds everything meanwhile.
type restCatalog struct {
	uri  string
	opts []rest.Option

	mu  sync.Mutex
	cat *rest.Catalog
}

func newRESTCatalog(uri string, opts []rest.Option) *restCatalog {
	return &restCatalog{uri: uri, opts: opts}
}

// get returns the connected catalog, connecting if it is not yet.
func (r *restCatalog) get(ctx context.Context) (*rest.Catalog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat != nil {
		return r.cat, nil
	}
	cat, err := rest.NewCatalog(ctx, "aerostream", r.uri, r.opts...)
	if err != nil {
		return nil, fmt.Errorf("iceberg rest catalog %s: %w", r.uri, err)
	}
	r.cat = cat
	return cat, nil
}

// Close releases the connected catalog, if any.
func (r *restCatalog) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat == nil {
		return nil
	}
	return CloseCatalog(r.cat)
}

func (r *restCatalog) CatalogType() catalog.Type { return catalog.REST }

func (r *restCatalog) CreateTable(ctx context.Context, id table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.CreateTable(ctx, id, sc, opts...)
}

func (r *restCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, "", err
	}
	return c.CommitTable(ctx, id, reqs, updates)
}

func (r *restCatalog) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	c, err := r.get(ctx)
	if err != nil {
		return func(yield func(table.Identifier, error) bool) { yield(nil, err) }
	}
	return c.ListTables(ctx, ns)
}

func (r *restCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.LoadTable(ctx, id)
}

func (r *restCatalog) DropTable(ctx context.Context, id table.Identifier) error {
	c, err := r.get(ctx)
	if err != nil {
		return err
	}
	return c.DropTable(ctx, id)
}

func (r *restCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.RenameTable(ctx, from, to)
}

func (r *restCatalog) CheckTableExists(ctx context.Context, id table.Identifier) (bool, error) {
	c, err := r.get(ctx)
	if err != nil {
		return false, err
	}
	return c.CheckTableExists(ctx, id)
}

func (r *restCatalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.ListNamespaces(ctx, parent)
}

func (r *restCatalog) CreateNamespace(ctx context.Context, ns table.Identifier, props iceberg.Properties) error {
	c, err := r.get(ctx)
	if err != nil {
		return err
	}
	return c.CreateNamespace(ctx, ns, props)
}

func (r *restCatalog) DropNamespace(ctx context.Context, ns table.Identifier) error {
	c, err := r.get(ctx)
	if err != nil {
		return err
	}
	return c.DropNamespace(ctx, ns)
}

func (r *restCatalog) CheckNamespaceExists(ctx context.Context, ns table.Identifier) (bool, error) {
	c, err := r.get(ctx)
	if err != nil {
		return false, err
	}
	return c.CheckNamespaceExists(ctx, ns)
}

func (r *restCatalog) LoadNamespaceProperties(ctx context.Context, ns table.Identifier) (iceberg.Properties, error) {
	c, err := r.get(ctx)
	if err != nil {
		return nil, err
	}
	return c.LoadNamespaceProperties(ctx, ns)
}

func (r *restCatalog) UpdateNamespaceProperties(ctx context.Context, ns table.Identifier, removals []string, updates iceberg.Properties) (catalog.PropertiesUpdateSummary, error) {
	c, err := r.get(ctx)
	if err != nil {
		return catalog.PropertiesUpdateSummary{}, err
	}
	return c.UpdateNamespaceProperties(ctx, ns, removals, updates)
}

var _ catalog.Catalog = (*restCatalog)(nil)
