package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"strings"
)

// maxRequestBytes bounds a client API request body.
const maxRequestBytes = 16 << 20

// Client API paths. Every request and response body is one JSON object of
// the types in api.go.
const (
	pathCreateTopics     = "/v1/topics/create"
	pathDeleteTopics     = "/v1/topics/delete"
	pathCreatePartitions = "/v1/topics/partitions"
	pathAlterConfigs     = "/v1/configs/alter"
	pathDescribeConfigs  = "/v1/configs/describe"
	pathMetadata         = "/v1/metadata"
	pathRegisterNode     = "/v1/nodes/register"
	pathHeartbeat        = "/v1/nodes/heartbeat"
	pathNodes            = "/v1/nodes"
	pathCluster          = "/v1/cluster"
	pathAddVoter         = "/v1/voters/add"
	pathRemoveVoter      = "/v1/voters/remove"
	pathAlterPartition   = "/v1/partitions/alter"
	pathReassign         = "/v1/reassignments/alter"
	pathListReassign     = "/v1/reassignments/list"
	pathDrainStore       = "/v1/stores/drain"
)

// handler serves the client API over api.
//
// Reads (GET or POST) are answered from this node's state. A read with the
// query parameter leader=1, which Client always sends, is answered only by
// the leader, so that a client reads what it wrote; ClusterInfo is always
// this node's own view.
func (c *Controller) handler() http.Handler {
	api, log := API(c), c.log
	m := http.NewServeMux()
	route := func(path string, read bool, fn func(ctx context.Context, body []byte) (any, error)) {
		m.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost && !(read && r.Method == http.MethodGet) {
				w.Header().Set("Allow", "POST")
				writeError(w, fmt.Errorf("%w: %s %s: use POST", ErrInvalidRequest, r.Method, path))
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
			if err != nil {
				writeError(w, fmt.Errorf("%w: reading the body: %v", ErrInvalidRequest, err))
				return
			}
			if len(body) > maxRequestBytes {
				writeError(w, fmt.Errorf("%w: body larger than %d bytes", ErrInvalidRequest, maxRequestBytes))
				return
			}
			p, err := c.clusterAuth.verifyRequest(r, body)
			if err != nil {
				c.clusterAuth.refused(r.RemoteAddr, path, err)
				writeError(w, err)
				return
			}
			if p != nil {
				w = provingWriter{ResponseWriter: w, p: p}
			}
			if read && path != pathCluster && r.URL.Query().Get("leader") == "1" && !c.IsLeader() {
				writeError(w, c.notLeader())
				return
			}
			out, err := fn(r.Context(), body)
			if err != nil {
				if !errors.Is(err, ErrNotLeader) {
					log.Debug("client API request failed", "path", path, "err", err)
				}
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	// decode parses a request body; an empty body is the zero request.
	decode := func(body []byte, v any) error {
		if len(strings.TrimSpace(string(body))) == 0 {
			return nil
		}
		if err := strictJSON(body, v); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
		return nil
	}
	route(pathCreateTopics, false, decoded(decode, api.CreateTopics))
	route(pathDeleteTopics, false, decoded(decode, api.DeleteTopics))
	route(pathCreatePartitions, false, decoded(decode, api.CreatePartitions))
	route(pathAlterConfigs, false, decoded(decode, api.AlterConfigs))
	route(pathDescribeConfigs, true, decoded(decode, api.DescribeConfigs))
	route(pathMetadata, true, decoded(decode, api.Metadata))
	route(pathRegisterNode, false, decoded(decode, api.RegisterNode))
	route(pathHeartbeat, false, decoded(decode, api.Heartbeat))
	route(pathNodes, true, func(ctx context.Context, b []byte) (any, error) {
		if err := decode(b, &struct{}{}); err != nil {
			return nil, err
		}
		return api.ListNodes(ctx)
	})
	route(pathCluster, true, func(ctx context.Context, b []byte) (any, error) {
		if err := decode(b, &struct{}{}); err != nil {
			return nil, err
		}
		return api.ClusterInfo(ctx)
	})
	route(pathAddVoter, false, func(ctx context.Context, b []byte) (any, error) {
		var req AddVoterRequest
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return struct{}{}, api.AddVoter(ctx, req)
	})
	route(pathRemoveVoter, false, func(ctx context.Context, b []byte) (any, error) {
		var req RemoveVoterRequest
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return struct{}{}, api.RemoveVoter(ctx, req)
	})
	route(pathAlterPartition, false, decoded(decode, api.AlterPartition))
	route(pathReassign, false, decoded(decode, api.AlterPartitionReassignments))
	route(pathListReassign, true, decoded(decode, api.ListPartitionReassignments))
	route(pathDrainStore, false, decoded(decode, api.DrainStore))
	c.schemaRoutes(route, decode)
	c.securityRoutes(route, decode)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no client API at %s", ErrInvalidRequest, r.URL.Path))
	})
	return m
}

// decoded adapts an API method to a route's handler: it decodes the body
// into the method's request type, so each route is one line.
func decoded[Req, Resp any](decode func([]byte, any) error, fn func(context.Context, Req) (Resp, error)) func(context.Context, []byte) (any, error) {
	return func(ctx context.Context, b []byte) (any, error) {
		var req Req
		if err := decode(b, &req); err != nil {
			return nil, err
		}
		return fn(ctx, req)
	}
}

// statusFor picks the HTTP status of an error answer. Clients go by the
// body's code; the status is for people with curl.
func statusFor(err error) int {
	switch {
	case errors.Is(err, ErrNotLeader):
		return http.StatusMisdirectedRequest
	case errors.Is(err, ErrTimeout), errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrUnknownNode), errors.Is(err, ErrUnknownTopic), errors.Is(err, ErrUnknownTopicID):
		return http.StatusNotFound
	case errors.Is(err, ErrTopicExists), errors.Is(err, ErrStaleRequest):
		return http.StatusConflict
	case errors.Is(err, ErrUnauthenticated):
		return http.StatusUnauthorized
	case wireCode(err) != "UNKNOWN":
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeError(w http.ResponseWriter, err error) {
	body := notLeaderBody{Error: toError(err), LeaderID: -1}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		body.LeaderID, body.LeaderAddr = nl.LeaderID, nl.LeaderAddr
	}
	writeJSON(w, statusFor(err), body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var body bytes.Buffer
	_ = json.NewEncoder(&body).Encode(v)
	w.Header().Set("Content-Type", "application/json")
	if pw, ok := w.(provingWriter); ok {
		pw.p.prove(w.Header(), status, body.Bytes())
	}
	w.WriteHeader(status)
	_, _ = w.Write(body.Bytes())
}

// provingWriter is the ResponseWriter of a verified request, whose
// answer writeJSON proves (clusterauth.go).
type provingWriter struct {
	http.ResponseWriter
	p *prover
}

// slogStd adapts slog for http.Server's ErrorLog (bad requests, TLS
// probes): one debug line each.
func slogStd(l *slog.Logger) *log.Logger {
	return log.New(writerFunc(func(p []byte) (int, error) {
		l.Debug("client API connection", "detail", strings.TrimSpace(string(p)))
		return len(p), nil
	}), "", 0)
}
