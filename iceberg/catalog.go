package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"

	// FileIO for s3:// warehouses (MinIO included); local paths need none.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// Config is the node's [iceberg] configuration, resolved by tools/cli
// (the warehouse is a full location by then).
type Config struct {
	// Catalog is "sql" (the embedded SQLite catalog at
	// <DataDir>/iceberg/catalog.db) or "rest" (an external REST catalog at
	// RestURI).
	Catalog string
	DataDir string
	// RestURI, RestCredential (OAuth2 client_id:client_secret) and
	// RestToken (a bearer token) reach an external REST catalog.
	RestURI, RestCredential, RestToken string
	// Warehouse is where tables live: file:///abs/dir or s3://bucket/prefix.
	Warehouse string
	// Namespace holds the topics' tables; default "aerostream".
	Namespace string
	// CommitInterval is how often a committer commits; it also commits
	// early once CommitBytes of record data are pending.
	CommitInterval time.Duration
	CommitBytes    int64
	// MaintainInterval is how often a committer runs table maintenance
	// (compaction, snapshot expiry) between its commits; default ten
	// commit intervals.
	MaintainInterval time.Duration
	// Maintain tunes that maintenance (target file size, small files,
	// snapshots kept); zero values take maintain.go's defaults, and its
	// Logger and Budget are the committer's. No server setting exposes
	// it: the file-size measurement scales it with the commit interval.
	Maintain MaintainOptions
	// S3 reaches an s3:// warehouse.
	S3 S3
}

// S3 is how readers and the writer reach an s3:// warehouse.
type S3 struct {
	Endpoint        string // e.g. http://127.0.0.1:9000 for MinIO; empty = AWS
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	PathStyle       bool
}

// Default commit settings.
const (
	DefaultNamespace      = "aerostream"
	DefaultCommitInterval = time.Minute
	DefaultCommitBytes    = 64 << 20
)

func (c *Config) withDefaults() Config {
	out := *c
	if out.Namespace == "" {
		out.Namespace = DefaultNamespace
	}
	if out.CommitInterval <= 0 {
		out.CommitInterval = DefaultCommitInterval
	}
	if out.CommitBytes <= 0 {
		out.CommitBytes = DefaultCommitBytes
	}
	if out.MaintainInterval <= 0 {
		out.MaintainInterval = 10 * out.CommitInterval
	}
	if out.Catalog == "" {
		out.Catalog = "sql"
	}
	if out.Warehouse == "" && out.DataDir != "" {
		out.Warehouse = LocalWarehouse(out.DataDir)
	}
	return out
}

// LocalWarehouse is the default warehouse of a node: <dataDir>/iceberg/warehouse.
func LocalWarehouse(dataDir string) string {
	abs, err := filepath.Abs(filepath.Join(dataDir, "iceberg", "warehouse"))
	if err != nil {
		abs = filepath.Join(dataDir, "iceberg", "warehouse")
	}
	return (&url.URL{Scheme: "file", Path: abs}).String()
}

// CatalogPath is the embedded SQL catalog's database file.
func CatalogPath(dataDir string) string { return filepath.Join(dataDir, "iceberg", "catalog.db") }

// IOProps are the FileIO properties a reader (or the writer) needs to
// reach the warehouse: the S3 endpoint, keys, region and addressing for an
// s3:// warehouse, none for a local one. The REST catalog hands them to
// pyiceberg and Spark.
func IOProps(cfg Config) map[string]string {
	cfg = cfg.withDefaults()
	props := map[string]string{}
	if !strings.HasPrefix(cfg.Warehouse, "s3://") && !strings.HasPrefix(cfg.Warehouse, "s3a://") {
		return props
	}
	set := func(k, v string) {
		if v != "" {
			props[k] = v
		}
	}
	set(iceio.S3EndpointURL, cfg.S3.Endpoint)
	set(iceio.S3AccessKeyID, cfg.S3.AccessKeyID)
	set(iceio.S3SecretAccessKey, cfg.S3.SecretAccessKey)
	region := cfg.S3.Region
	if region == "" {
		// MinIO and most S3 look-alikes take any region; the AWS SDK
		// refuses to sign without one.
		region = "us-east-1"
	}
	set(iceio.S3Region, region)
	// pyiceberg and Spark read s3.path-style-access; iceberg-go reads
	// s3.force-virtual-addressing.
	props["s3.path-style-access"] = strconv.FormatBool(cfg.S3.PathStyle)
	props[iceio.S3ForceVirtualAddressing] = strconv.FormatBool(!cfg.S3.PathStyle)
	return props
}

// sqliteDSN opens the catalog database in WAL mode with a busy timeout,
// and takes the write lock when a transaction begins, so that two writers
// wait for each other instead of failing on a lock upgrade.
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate"
}

// OpenCatalog opens the catalog cfg names: the embedded SQLite one
// (created on first use) or an external REST catalog, which is reached
// on first use and again after a failure (restCatalog). The catalog's
// properties carry the warehouse and IOProps, so tables it loads can
// write to the warehouse.
func OpenCatalog(ctx context.Context, cfg Config) (catalog.Catalog, error) {
	cfg = cfg.withDefaults()
	props := iceberg.Properties{"warehouse": cfg.Warehouse}
	for k, v := range IOProps(cfg) {
		props[k] = v
	}
	switch cfg.Catalog {
	case "sql":
		if cfg.DataDir == "" {
			return nil, fmt.Errorf("%w: the sql catalog needs a data dir", ErrConfig)
		}
		path := CatalogPath(cfg.DataDir)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("iceberg catalog: %w", err)
		}
		if strings.HasPrefix(cfg.Warehouse, "file://") {
			if err := os.MkdirAll(strings.TrimPrefix(cfg.Warehouse, "file://"), 0o755); err != nil {
				return nil, fmt.Errorf("iceberg warehouse: %w", err)
			}
		}
		db, err := sql.Open("sqlite", sqliteDSN(path))
		if err != nil {
			return nil, fmt.Errorf("iceberg catalog %s: %w", path, err)
		}
		cat, err := sqlcat.NewCatalog("aerostream", db, sqlcat.SQLite, props)
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("iceberg catalog %s: %w", path, err)
		}
		return &sqlCatalog{Catalog: cat, db: db}, nil
	case "rest":
		if cfg.RestURI == "" {
			return nil, fmt.Errorf("%w: catalog = \"rest\" needs rest_uri", ErrConfig)
		}
		opts := []rest.Option{rest.WithAdditionalProps(props)}
		if cfg.RestCredential != "" {
			opts = append(opts, rest.WithCredential(cfg.RestCredential))
		}
		if cfg.RestToken != "" {
			opts = append(opts, rest.WithOAuthToken(cfg.RestToken))
		}
		if cfg.Warehouse != "" {
			opts = append(opts, rest.WithWarehouseLocation(cfg.Warehouse))
		}
		return newRESTCatalog(cfg.RestURI, opts), nil // catalog_rest.go: connects on first use
	}
	return nil, fmt.Errorf("%w: catalog %q is not sql or rest", ErrConfig, cfg.Catalog)
}

// sqlCatalog is the SQL catalog with the database handle it owns, closed
// with it.
type sqlCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

// Close closes the catalog and its database.
func (c *sqlCatalog) Close() error {
	err := c.Catalog.Close()
	if cerr := c.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// CloseCatalog releases cat when it holds resources (the SQL catalog's
// database).
func CloseCatalog(cat catalog.Catalog) error {
	if c, ok := cat.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}
