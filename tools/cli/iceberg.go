package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/spf13/cobra"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/iceberg"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/ring"
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
// FileIO properties readers need in daemon.icebergIO). A REST catalog is
// reached on first use, so one that is down while the node starts only
// delays translation: the committers retry, and retention holds the
// records meanwhile.
func (d *daemon) openIceberg(ctx context.Context, opts *logstore.Options) error {
	ic := icebergConfig(d.cfg)
	cat, err := iceberg.OpenCatalog(ctx, ic)
	if err != nil {
		return err
	}
	d.icebergCat, d.icebergIO = cat, iceberg.IOProps(ic)
	d.onClose("iceberg catalog", func() error { return iceberg.CloseCatalog(cat) })
	d.iceberg = iceberg.NewManager(iceberg.ManagerOptions{Config: ic, Catalog: cat, Logger: d.logger,
		Registry: &icebergSchemas{d: d}, NodeID: d.cfg.Controller.NodeID}) // iceberg_schemas.go
	d.reg.MustRegister(d.iceberg.Collectors()...)
	opts.RetentionFloor = d.iceberg.Floor
	return nil
}

// icebergPoll is how often a node re-reads which topics are Iceberg
// topics and who leads their partition 0.
const icebergPoll = 2 * time.Second

// startIceberg runs the node's Iceberg committers under the supervisor:
// serve reads through its in-process ring; a store through a router to
// each partition's leader store, since its committer reads partitions
// other stores lead. It reports whether it started.
func (d *daemon) startIceberg(ctx context.Context) bool {
	if d.iceberg == nil {
		return false
	}
	api, ok := d.members.(controller.API)
	if !ok {
		// No controller: no topic is an Iceberg topic here.
		d.iceberg.Update(nil)
		return false
	}
	backend, single := d.backend, d.backend != nil
	var router *kmeta.Router
	if backend == nil {
		router = kmeta.NewRouter(kmeta.RouterOptions{Logger: d.logger, Dial: d.links.ringDial(0, d.logger)})
		backend = router
	}
	m, localID, logger := d.iceberg, d.cfg.Controller.NodeID, d.logger
	d.sup.start(ctx, "iceberg", func(ctx context.Context) error {
		if router != nil {
			defer router.Close()
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			pollIcebergTopics(ctx, api, localID, single, m, router, logger)
		}()
		err := m.Run(ctx, backend)
		wg.Wait()
		return err
	})
	return true
}

// pollIcebergTopics hands m the topics and, in a cluster, the router the
// partitions' leaders, until ctx ends. The store leading a topic's
// partition 0 commits it (serve commits every topic).
func pollIcebergTopics(ctx context.Context, api controller.API, localID int32, single bool, m *iceberg.Manager, router *kmeta.Router, logger *slog.Logger) {
	for {
		md, err := api.Metadata(ctx, controller.MetadataRequest{})
		if err == nil {
			states := make([]iceberg.TopicState, 0, len(md.Topics))
			kts := make([]*kafka.Topic, 0, len(md.Topics))
			for _, ti := range md.Topics {
				ts := iceberg.TopicState{Name: ti.Name, Partitions: int32(len(ti.Partitions)), Configs: ti.Configs, TopicID: ti.ID.String()}
				if len(ti.Partitions) > 0 {
					ts.Commit = single || ti.Partitions[0].Leader == localID
					ts.LeaderEpoch = ti.Partitions[0].LeaderEpoch
				}
				states = append(states, ts)
				if router != nil {
					kt := &kafka.Topic{Name: ti.Name, ID: ti.ID, Partitions: ts.Partitions, Configs: ti.Configs}
					for _, p := range ti.Partitions {
						kt.Parts = append(kt.Parts, kafka.PartitionMeta{Leader: p.Leader, LeaderEpoch: max(p.LeaderEpoch, 0), Replicas: p.Replicas})
					}
					kts = append(kts, kt)
				}
			}
			if router != nil {
				var stores []kmeta.StoreRing
				for _, n := range md.Nodes {
					addr := n.Ring.Address
					if addr == "" {
						addr = n.Addresses["ring"]
					}
					if n.Kind == controller.KindStore && n.Live && addr != "" {
						stores = append(stores, kmeta.StoreRing{ID: n.ID, Addr: addr, Version: n.Ring.Version})
					}
				}
				router.Update(kafka.NewMetadata(kafka.MetadataSource{Version: md.Version, ClusterID: md.ClusterID, Topics: kts}), stores)
			}
			m.Update(states)
		} else if ctx.Err() == nil {
			logger.Debug("iceberg: controller metadata", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(icebergPoll):
		}
	}
}

var _ ring.Backend = (*kmeta.Router)(nil)

// icebergCatalog is iceberg-go's catalog interface, named here because
// daemon.go's "catalog" is the segment catalog.
type icebergCatalog = icecatalog.Catalog

// icebergManager is named here so daemon.go needs no import for it.
type icebergManager = iceberg.Manager

// icebergStatusAPI serves GET /v1/iceberg (every Iceberg topic this node
// knows) and GET /v1/iceberg/<topic>, as JSON lists of
// iceberg.TopicStatus; m nil (no catalog) has none.
func icebergStatusAPI(m *iceberg.Manager) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "only GET is served"})
			return
		}
		topic := strings.Trim(strings.TrimPrefix(r.URL.Path, "/v1/iceberg"), "/")
		out := []iceberg.TopicStatus{}
		if m != nil {
			out = m.Status(topic)
		}
		if topic != "" && len(out) == 0 {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf("topic %q is not an Iceberg topic on this node (iceberg.enabled=true?)", topic)})
			return
		}
		_ = json.NewEncoder(w).Encode(out)
	})
}

func newIcebergCmd(env Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "iceberg",
		Short: "Inspect the Iceberg tables of Iceberg topics",
	}
	requireSubcommand(cmd)
	var admin string
	var asJSON bool
	status := &cobra.Command{
		Use:   "status [TOPIC]",
		Short: "Translation status of Iceberg topics: lag in records and time, last commit, files, bytes",
		Long: `Print each Iceberg topic's translation status, from the node that runs
its committer (in a cluster, the store leading the topic's partition 0):
the lag in records and in time, the last commit, and the table's data
files, bytes and rows.`,
		Args: cobra.MaximumNArgs(1),
	}
	status.Flags().StringVar(&admin, "admin", "127.0.0.1:9001", "the node's HTTP admin address (listeners.http)")
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	status.RunE = func(cmd *cobra.Command, args []string) error {
		u := "http://" + strings.TrimPrefix(admin, "http://") + "/v1/iceberg"
		if len(args) == 1 {
			u += "/" + url.PathEscape(args[0])
		}
		req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("admin API at %s: %w", admin, err)
		}
		defer resp.Body.Close()
		var sts []iceberg.TopicStatus
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&e)
			return fmt.Errorf("admin API: %s: %s", resp.Status, e.Error)
		}
		if err := json.NewDecoder(resp.Body).Decode(&sts); err != nil {
			return fmt.Errorf("admin API: %w", err)
		}
		if asJSON {
			enc := json.NewEncoder(env.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(sts)
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tTABLE\tLAG_RECORDS\tLAG\tLAST_COMMIT\tFILES\tBYTES\tROWS\tDLQ_ROWS\tERROR")
		for _, s := range sts {
			last := "never"
			if s.LastCommit != nil {
				last = s.LastCommit.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", s.Topic, s.Table, s.LagRecords,
				(time.Duration(s.LagSeconds * float64(time.Second))).Round(time.Millisecond), last,
				s.DataFiles, s.DataBytes, s.Rows, s.DLQRows, orNone(s.LastError))
		}
		return tw.Flush()
	}
	cmd.AddCommand(status)
	return cmd
}
