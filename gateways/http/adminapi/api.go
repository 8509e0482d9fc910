package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sentinels. A source wraps them (%w) so that the API picks the status
// and error code with errors.Is alone.
var (
	// ErrUnknownTopic: no such topic (404 unknown_topic).
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrUnknownGroup: no such group (404 unknown_group).
	ErrUnknownGroup = errors.New("unknown group")
	// ErrGroupNotEmpty: the group has members (409 group_not_empty).
	ErrGroupNotEmpty = errors.New("group has members")
	// ErrNotDynamic: the config cannot change on an existing topic (400
	// not_dynamic).
	ErrNotDynamic = errors.New("config is not dynamic")
	// ErrBadConfig: the config name or value is invalid (400
	// bad_parameter).
	ErrBadConfig = errors.New("invalid config")
	// ErrOffsetOutOfRange: the offset is outside the partition's log (416
	// offset_out_of_range).
	ErrOffsetOutOfRange = errors.New("offset out of range")
	// ErrUnavailable: the data is not reachable from this node, or not
	// yet (503 unavailable).
	ErrUnavailable = errors.New("unavailable on this node")
	// ErrUnauthenticated: the caller did not authenticate (401
	// unauthorized). An Authorizer wraps it.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrForbidden: the caller may not do this (403 forbidden). An
	// Authorizer wraps it; any other error it returns is taken as a
	// denial too.
	ErrForbidden = errors.New("forbidden")
)

// Operation is an ACL operation, as Kafka names them.
type Operation string

// The operations the API asks an Authorizer about.
const (
	OpDescribe     Operation = "DESCRIBE"
	OpRead         Operation = "READ"
	OpAlterConfigs Operation = "ALTER_CONFIGS"
	OpDelete       Operation = "DELETE"
)

// Resource types.
const (
	ResourceTopic   = "topic"
	ResourceGroup   = "group"
	ResourceCluster = "cluster"
)

// Resource names what an operation is on; Name is empty for the cluster.
type Resource struct {
	Type string
	Name string
}

// Authorizer decides whether the caller of r (its principal is in the
// request's context, put there by the listener's authentication) may do
// op on res. nil means allow.
type Authorizer interface {
	Authorize(r *http.Request, op Operation, res Resource) error
}

// ClusterSource describes the cluster.
type ClusterSource interface {
	Cluster(ctx context.Context) (Cluster, error)
}

// TopicSource is the topics' metadata and configs (the controller).
type TopicSource interface {
	Topics(ctx context.Context) ([]TopicMeta, error)
	// Topic returns ErrUnknownTopic for a topic that does not exist.
	Topic(ctx context.Context, name string) (TopicMeta, error)
	Configs(ctx context.Context, name string) ([]Config, error)
	// AlterConfigs sets the named configs, leaving the others; it
	// returns ErrNotDynamic or ErrBadConfig for a refused change.
	AlterConfigs(ctx context.Context, name string, set map[string]string) error
}

// LogSource reads partitions: the same backend Fetch and ListOffsets the
// Kafka gateway uses, so hot and cold data are read alike.
type LogSource interface {
	PartitionStats(ctx context.Context, topic string, partition int32) (PartitionStats, error)
	// Fetch reads RecordBatch v2 bytes from offset, at most about
	// maxBytes (a first batch larger than that still comes whole).
	Fetch(ctx context.Context, topic string, partition int32, offset int64, maxBytes int32) (Fetched, error)
	// OffsetForTimestamp is the first offset with a timestamp at or after
	// ts (Unix ms), or -1 when there is none.
	OffsetForTimestamp(ctx context.Context, topic string, partition int32, ts int64) (int64, error)
}

// GroupSource is the Kafka gateway's group coordinator. Committing and
// deleting go through the same code paths as OffsetCommit and
// DeleteGroups, so they are durable and refused while the group has
// members (ErrGroupNotEmpty).
type GroupSource interface {
	ListGroups(ctx context.Context) ([]GroupSummary, error)
	// DescribeGroup returns ErrUnknownGroup for a group that does not
	// exist.
	DescribeGroup(ctx context.Context, group string) (Group, error)
	CommitOffsets(ctx context.Context, group string, offsets []CommittedOffset) error
	DeleteGroup(ctx context.Context, group string) error
}

// SchemaSource is the schema registry.
type SchemaSource interface {
	// Schema returns the schema registered under id; an error for an id
	// that is not registered.
	Schema(ctx context.Context, id int32) (Schema, error)
}

// IcebergSource is the Iceberg materializer's status.
type IcebergSource interface {
	Tables(ctx context.Context) ([]IcebergTable, error)
}

// Health says whether the node is ready.
type Health struct {
	Status  string   `json:"status"` // ready, starting or failed
	Reasons []string `json:"reasons,omitempty"`
}

// Options configure an API. A nil source makes its routes answer 503
// unavailable (Iceberg: an empty list).
type Options struct {
	Cluster ClusterSource
	Topics  TopicSource
	Log     LogSource
	Groups  GroupSource
	Schemas SchemaSource
	Iceberg IcebergSource
	// Health is asked by /healthz; nil: always ready.
	Health func(ctx context.Context) Health
	// Metrics is the node's Prometheus registry, sampled for
	// /api/metrics/throughput while Run runs.
	Metrics prometheus.Gatherer
	// SampleEvery is the sampling period (default 5s); Samples how many
	// are kept (default 60, five minutes at the default period).
	SampleEvery time.Duration
	Samples     int
	// Authorizer checks ACLs; nil allows everything.
	Authorizer Authorizer
	Logger     *slog.Logger
}

// Limits of the message inspector.
const (
	DefaultLimit = 20
	MaxLimit     = 500
	// fetchMaxBytes is what one backend fetch asks for, and
	// maxBytesPerRequest the most one inspector request reads in all (hot
	// or cold), whatever the limit.
	fetchMaxBytes      = 1 << 20
	maxBytesPerRequest = 4 << 20
)

// API serves the admin routes.
type API struct {
	opts    Options
	log     *slog.Logger
	mux     *http.ServeMux
	routes  []Route
	decoder *decoder
	samples *sampler
}

// Route is one method and path the API serves, as documented in
// docs/openapi.yaml (with the /api prefix).
type Route struct {
	Method, Path string
}

// New returns the API.
func New(opts Options) *API {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SampleEvery <= 0 {
		opts.SampleEvery = 5 * time.Second
	}
	if opts.Samples <= 0 {
		opts.Samples = 60
	}
	a := &API{opts: opts, log: opts.Logger.With("part", "admin-api"), mux: http.NewServeMux()}
	a.decoder = newDecoder(opts.Schemas)
	a.samples = newSampler(opts.Metrics, opts.Samples)
	a.handle("GET", "/cluster", a.getCluster)
	a.handle("GET", "/topics", a.listTopics)
	a.handle("GET", "/topics/{t}", a.getTopic)
	a.handle("PATCH", "/topics/{t}/configs", a.patchConfigs)
	a.handle("GET", "/topics/{t}/messages", a.getMessages)
	a.handle("GET", "/groups", a.listGroups)
	a.handle("GET", "/groups/{g}", a.getGroup)
	a.handle("POST", "/groups/{g}/reset", a.resetGroup)
	a.handle("DELETE", "/groups/{g}", a.deleteGroup)
	a.handle("GET", "/lag", a.getLag)
	a.handle("GET", "/iceberg", a.getIceberg)
	a.handle("GET", "/metrics/throughput", a.getThroughput)
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s /api%s", r.Method, r.URL.Path))
	})
	return a
}

// Handler serves the routes; mount it at /api.
func (a *API) Handler() http.Handler { return a.mux }

// Routes lists the routes served, with the /api prefix, plus /healthz.
func (a *API) Routes() []Route {
	return append(append([]Route(nil), a.routes...), Route{"GET", "/healthz"})
}

// Run samples the throughput until ctx ends.
func (a *API) Run(ctx context.Context) error {
	a.samples.run(ctx, a.opts.SampleEvery, a.log)
	return nil
}

// Healthz is the readiness probe: 200 {"status":"ready"}, else 503 with
// the reasons. It is open to everyone, as /metrics is.
func (a *API) Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "only GET and HEAD")
			return
		}
		h := Health{Status: "ready"}
		if a.opts.Health != nil {
			h = a.opts.Health(r.Context())
		}
		code := http.StatusOK
		if h.Status != "ready" {
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, h)
	})
}

// handlerFunc answers a request with a value to encode or an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

func (a *API) handle(method, path string, fn handlerFunc) {
	a.routes = append(a.routes, Route{method, "/api" + path})
	a.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(w, r)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if v == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

// apiError is an error with the status and code it answers with.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badParam(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "bad_parameter", fmt.Sprintf(format, args...)}
}

// fail writes err as the contract's JSON error.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		writeError(w, ae.status, ae.code, ae.msg)
	case errors.Is(err, ErrUnknownTopic):
		writeError(w, http.StatusNotFound, "unknown_topic", err.Error())
	case errors.Is(err, ErrUnknownGroup):
		writeError(w, http.StatusNotFound, "unknown_group", err.Error())
	case errors.Is(err, ErrGroupNotEmpty):
		writeError(w, http.StatusConflict, "group_not_empty", err.Error())
	case errors.Is(err, ErrNotDynamic):
		writeError(w, http.StatusBadRequest, "not_dynamic", err.Error())
	case errors.Is(err, ErrBadConfig):
		writeError(w, http.StatusBadRequest, "bad_parameter", err.Error())
	case errors.Is(err, ErrOffsetOutOfRange):
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "offset_out_of_range", err.Error())
	case errors.Is(err, ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", `Basic realm="aerostream"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", err.Error())
	case errors.Is(err, ErrForbidden):
		writeError(w, http.StatusForbidden, "forbidden", err.Error())
	case errors.Is(err, ErrUnavailable):
		writeError(w, http.StatusServiceUnavailable, "unavailable", err.Error())
	case r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		writeError(w, http.StatusServiceUnavailable, "unavailable", r.Context().Err().Error())
	default:
		a.log.Warn("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", err.Error())
	}
}

// authorize asks the Authorizer; a refusal that names neither sentinel is
// a denial.
func (a *API) authorize(r *http.Request, op Operation, res Resource) error {
	if a.opts.Authorizer == nil {
		return nil
	}
	err := a.opts.Authorizer.Authorize(r, op, res)
	if err == nil || errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrForbidden) {
		return err
	}
	return fmt.Errorf("%w: %s on %s %q: %v", ErrForbidden, op, res.Type, res.Name, err)
}

// allowed is authorize for filtering a list: a denial hides the item, while
// a missing authentication fails the request.
func (a *API) allowed(r *http.Request, op Operation, res Resource) (bool, error) {
	err := a.authorize(r, op, res)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrUnauthenticated):
		return false, err
	}
	return false, nil
}

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away: nothing to do
}

// unavailable is the error of a route whose source this node lacks.
func unavailable(what string) error {
	return fmt.Errorf("%w: %s is not reachable from this node", ErrUnavailable, what)
}
