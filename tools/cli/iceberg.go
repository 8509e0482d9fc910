package cli

import (
	"context"
	"path"
	"strings"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/aerostream/aerostream/iceberg"
	"github.com/aerostream/aerostream/tools/config"
)

// icebergConfig resolves the [iceberg] keys: the warehouse becomes a full
// location, and an s3:// one is reached with tiered_storage.s3's endpoint
// and keys.
func icebergConfig(cfg config.Config) iceberg.Config {
	ic := cfg.Iceberg
	out := iceberg.Config{
		Catalog: ic.Catalog, DataDir: cfg.DataDir,
		RestURI: ic.RestURI, RestCredential: ic.RestCredential, RestToken: ic.RestToken,
		Warehouse: ic.Warehouse, Namespace: ic.Namespace,
		CommitInterval: time.Duration(ic.CommitIntervalMs) * time.Millisecond, CommitBytes: ic.CommitBytes,
	}
	s3 := cfg.TieredStorage.S3
	if ic.Warehouse == "tiered" {
		out.Warehouse = "s3://" + s3.Bucket + "/" + strings.TrimPrefix(path.Join(s3.Prefix, "iceberg"), "/")
	}
	if strings.HasPrefix(out.Warehouse, "s3://") {
		out.S3 = iceberg.S3{Endpoint: s3.EndpointURL, Region: s3.Region, AccessKeyID: s3.AccessKeyID,
			SecretAccessKey: s3.SecretAccessKey, PathStyle: s3.ForcePathStyle}
	}
	return out
}

// openIceberg opens the Iceberg catalog (daemon.icebergCat, with the
// FileIO properties readers need in daemon.icebergIO). A REST catalog
// that cannot be reached leaves Iceberg off on this node, with a warning,
// rather than stop the store.
func (d *daemon) openIceberg(ctx context.Context) error {
	ic := icebergConfig(d.cfg)
	cat, err := iceberg.OpenCatalog(ctx, ic)
	if err != nil {
		if ic.Catalog == "rest" {
			d.logger.Warn("iceberg catalog unreachable; Iceberg topics are not translated on this node", "rest_uri", ic.RestURI, "err", err)
			return nil
		}
		return err
	}
	d.icebergCat, d.icebergIO = cat, iceberg.IOProps(ic)
	d.onClose("iceberg catalog", func() error { return iceberg.CloseCatalog(cat) })
	return nil
}

// icebergCatalog is iceberg-go's catalog interface, named here because
// daemon.go's "catalog" is the segment catalog.
type icebergCatalog = icecatalog.Catalog
