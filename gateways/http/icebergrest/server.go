package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// RefusedMessage is the message of every refused write.
const RefusedMessage = "tables are maintained by AeroStream; writes through this catalog are refused"

// nsSep separates namespace levels in a path segment and in the parent
// query parameter (the spec's default, sent as %1F).
const nsSep = "\x1f"

var (
	// ErrBadRequest marks a request whose path or query cannot be
	// decoded: a bad escape, an empty namespace level, a bad page token.
	ErrBadRequest = errors.New("bad request")
	// ErrRefused marks a write: only AeroStream commits to its tables.
	ErrRefused = errors.New(RefusedMessage)
	// ErrForbidden marks a read the ACLs do not allow.
	ErrForbidden = errors.New("forbidden")
)

// Authorizer decides what an HTTP request's principal may do by the ACLs;
// gateways/http's Guard is one, knowing the principal it authenticated.
type Authorizer interface {
	// Authorize decides op on the resource for r's principal, and
	// audits a refusal.
	Authorize(r *http.Request, op, resourceType, name string) bool
	// Allowed decides without auditing, for listings that hide what
	// the principal may not see.
	Allowed(r *http.Request, op, resourceType, name string) bool
}

// Operations and the resource type the catalog asks about, as the ACLs
// (auth) name them.
const (
	opDescribe    = "DESCRIBE"
	opRead        = "READ"
	resourceTopic = "TOPIC"
)

// Options configure the catalog server.
type Options struct {
	// Catalog is what the server reads; it is never written through.
	Catalog catalog.Catalog
	// IOProps are the FileIO properties every LoadTableResult carries in
	// its config (s3.endpoint, s3.access-key-id, ...); nil for a local
	// warehouse.
	IOProps map[string]string
	// Prefix, when set, is handed to clients in v1/config overrides, so
	// they send /v1/<Prefix>/namespaces/...; paths without it are served
	// too.
	Prefix string
	// Authorizer, when set, guards every table by the ACLs of the topic
	// it materializes: a listing shows the tables whose topic the
	// principal may DESCRIBE, and loading one needs READ on it. Nil
	// allows all.
	Authorizer Authorizer
	// Topic names the topic a table materializes; nil takes the table's
	// name, the topic's own.
	Topic  func(table.Identifier) string
	Logger *slog.Logger
}

// Server is the REST catalog as an http.Handler that sees paths relative
// to where it is mounted ("/v1/config").
type Server struct {
	cat     catalog.Catalog
	ioProps map[string]string
	prefix  string
	authz   Authorizer
	topic   func(table.Identifier) string
	logger  *slog.Logger
}

var _ http.Handler = (*Server)(nil)

// New returns the catalog server.
func New(opts Options) *Server {
	s := &Server{cat: opts.Catalog, ioProps: maps.Clone(opts.IOProps), prefix: opts.Prefix, authz: opts.Authorizer,
		topic: opts.Topic, logger: opts.Logger}
	if s.topic == nil {
		s.topic = func(id table.Identifier) string { return id[len(id)-1] }
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.ioProps == nil {
		s.ioProps = map[string]string{}
	}
	return s
}

// advertised lists the endpoints v1/config names. The writes are in it on
// purpose (see doc.go): clients then ask, and read AeroStream's refusal.
var advertised = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/register",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/transactions/commit",
}

// ServeHTTP routes one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs, err := s.route(r.URL.EscapedPath())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	write := false
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		write = true
	default:
		writeError(w, r, http.StatusMethodNotAllowed, "MethodNotAllowedException",
			fmt.Sprintf("method %s is not served", r.Method))
		return
	}
	ctx := r.Context()
	switch {
	case write && r.Method == http.MethodPost && len(segs) == 5 && segs[0] == "namespaces" && segs[2] == "tables" && segs[4] == "metrics":
		// A scan report changes nothing; Java clients send one after
		// every scan and would log a warning on a refusal.
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
		w.WriteHeader(http.StatusNoContent)
	case write:
		s.logger.Info("iceberg rest: write refused", "method", r.Method, "path", r.URL.Path)
		s.fail(w, r, fmt.Errorf("%w: %s %s", ErrRefused, r.Method, r.URL.Path))
	case len(segs) == 1 && segs[0] == "config":
		s.config(w, r)
	case len(segs) == 1 && segs[0] == "namespaces":
		s.listNamespaces(ctx, w, r)
	case len(segs) == 2 && segs[0] == "namespaces":
		s.loadNamespace(ctx, w, r, segs[1])
	case len(segs) == 3 && segs[0] == "namespaces" && segs[2] == "tables":
		s.listTables(ctx, w, r, segs[1])
	case len(segs) == 4 && segs[0] == "namespaces" && segs[2] == "tables":
		s.loadTable(ctx, w, r, segs[1], segs[3])
	default:
		writeError(w, r, http.StatusNotFound, "NotFoundException",
			fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
	}
}

// route splits an escaped path below /v1 into unescaped segments, with
// the configured prefix removed. Segments are unescaped one by one so
// that an escaped "/" inside a table name stays inside it.
func (s *Server) route(escaped string) ([]string, error) {
	rest, ok := strings.CutPrefix(escaped, "/v1/")
	if !ok {
		return nil, nil // no route: a 404 below
	}
	raw := strings.Split(rest, "/")
	segs := make([]string, len(raw))
	for i, e := range raw {
		u, err := url.PathUnescape(e)
		if err != nil {
			return nil, fmt.Errorf("%w: path segment %q: %v", ErrBadRequest, e, err)
		}
		segs[i] = u
	}
	if s.prefix != "" && len(segs) > 1 && segs[0] == s.prefix {
		segs = segs[1:]
	}
	return segs, nil
}

type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	overrides := map[string]string{}
	if s.prefix != "" {
		overrides["prefix"] = s.prefix
	}
	writeJSON(w, r, http.StatusOK, configResponse{Defaults: map[string]string{}, Overrides: overrides, Endpoints: advertised})
}

// parseNamespace turns a path segment or the parent parameter into levels.
func parseNamespace(v string) ([]string, error) {
	levels := strings.Split(v, nsSep)
	for _, l := range levels {
		if l == "" {
			return nil, fmt.Errorf("%w: namespace %q has an empty level", ErrBadRequest, v)
		}
	}
	return levels, nil
}

// page cuts one page out of n sorted items from the pageToken and
// pageSize parameters; the token is the index of the page's first item.
func page(q url.Values, n int) (from, to int, next string, err error) {
	if tok := q.Get("pageToken"); tok != "" {
		from, err = strconv.Atoi(tok)
		if err != nil || from < 0 || from > n {
			return 0, 0, "", fmt.Errorf("%w: pageToken %q is not one this server handed out", ErrBadRequest, tok)
		}
	}
	to = n
	if sz := q.Get("pageSize"); sz != "" {
		size, err := strconv.Atoi(sz)
		if err != nil || size < 1 {
			return 0, 0, "", fmt.Errorf("%w: pageSize %q is not a positive integer", ErrBadRequest, sz)
		}
		if size < n-from {
			to = from + size
			next = strconv.Itoa(to)
		}
	}
	return from, to, next, nil
}

type listNamespacesResponse struct {
	Namespaces    [][]string `json:"namespaces"`
	NextPageToken string     `json:"next-page-token,omitempty"`
}

func (s *Server) listNamespaces(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		var err error
		if parent, err = parseNamespace(p); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	nss, err := s.cat.ListNamespaces(ctx, parent)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([][]string, 0, len(nss))
	for _, ns := range nss {
		out = append(out, []string(ns))
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	from, to, next, err := page(r.URL.Query(), len(out))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, listNamespacesResponse{Namespaces: out[from:to], NextPageToken: next})
}

type namespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

func (s *Server) loadNamespace(ctx context.Context, w http.ResponseWriter, r *http.Request, seg string) {
	ns, err := parseNamespace(seg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	props, err := s.cat.LoadNamespaceProperties(ctx, ns)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if props == nil {
		props = map[string]string{}
	}
	writeJSON(w, r, http.StatusOK, namespaceResponse{Namespace: ns, Properties: props})
}

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type listTablesResponse struct {
	Identifiers   []identifier `json:"identifiers"`
	NextPageToken string       `json:"next-page-token,omitempty"`
}

func (s *Server) listTables(ctx context.Context, w http.ResponseWriter, r *http.Request, seg string) {
	ns, err := parseNamespace(seg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ids := []identifier{}
	for id, err := range s.cat.ListTables(ctx, ns) {
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if len(id) == 0 {
			continue
		}
		if s.authz != nil && !s.authz.Allowed(r, opDescribe, resourceTopic, s.topic(id)) {
			continue // hidden, as Kafka's Metadata hides undescribable topics
		}
		ids = append(ids, identifier{Namespace: id[:len(id)-1], Name: id[len(id)-1]})
	}
	slices.SortFunc(ids, func(a, b identifier) int {
		if c := slices.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	from, to, next, err := page(r.URL.Query(), len(ids))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, r, http.StatusOK, listTablesResponse{Identifiers: ids[from:to], NextPageToken: next})
}

type loadTableResponse struct {
	MetadataLocation string            `json:"metadata-location"`
	Metadata         json.RawMessage   `json:"metadata"`
	Config           map[string]string `json:"config"`
}

func (s *Server) loadTable(ctx context.Context, w http.ResponseWriter, r *http.Request, nsSeg, name string) {
	ns, err := parseNamespace(nsSeg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if name == "" {
		s.fail(w, r, fmt.Errorf("%w: empty table name", ErrBadRequest))
		return
	}
	ident := append(slices.Clone(ns), name)
	// Decided before the table is looked up, so that a principal that may
	// not read it cannot tell whether it exists.
	if topic := s.topic(ident); s.authz != nil && !s.authz.Authorize(r, opRead, resourceTopic, topic) {
		s.fail(w, r, fmt.Errorf("%w: the principal may not READ topic %q, which table %s materializes", ErrForbidden, topic, strings.Join(ident, ".")))
		return
	}
	tbl, err := s.cat.LoadTable(ctx, ident)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	meta, err := json.Marshal(tbl.Metadata())
	if err != nil {
		s.fail(w, r, fmt.Errorf("encode metadata of %s: %w", strings.Join(ident, "."), err))
		return
	}
	writeJSON(w, r, http.StatusOK, loadTableResponse{
		MetadataLocation: tbl.MetadataLocation(),
		Metadata:         meta,
		Config:           s.ioProps,
	})
}

// fail answers err in the spec's ErrorModel, choosing the status and type
// from what it wraps.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrRefused):
		writeError(w, r, http.StatusForbidden, "ForbiddenException", RefusedMessage)
	case errors.Is(err, ErrForbidden):
		writeError(w, r, http.StatusForbidden, "ForbiddenException", err.Error())
	case errors.Is(err, ErrBadRequest):
		writeError(w, r, http.StatusBadRequest, "BadRequestException", err.Error())
	case errors.Is(err, catalog.ErrNoSuchTable):
		writeError(w, r, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		writeError(w, r, http.StatusNotFound, "NoSuchNamespaceException", err.Error())
	case errors.Is(err, catalog.ErrInvalidIdentifier):
		writeError(w, r, http.StatusBadRequest, "BadRequestException", err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
	default:
		s.logger.Warn("iceberg rest: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, r, http.StatusInternalServerError, "InternalServerError", err.Error())
	}
}

type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, r *http.Request, code int, typ, msg string) {
	writeJSON(w, r, code, struct {
		Error errorModel `json:"error"`
	}{errorModel{Message: msg, Type: typ, Code: code}})
}

// writeJSON answers v; a HEAD gets the status alone, because the spec's
// existence checks have no body.
func writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	if r.Method == http.MethodHead {
		w.WriteHeader(code)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
