package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

var (
	// ErrBadPrefix is returned by Mount for a prefix that is not "/" or
	// an absolute path without a trailing slash.
	ErrBadPrefix = errors.New("mount prefix must be / or start with / and not end with /")
	// ErrMounted is returned by Mount for a prefix already taken.
	ErrMounted = errors.New("prefix already mounted")

	// ErrTierDisabled is what a TierOps returns when the node does not
	// tier; the API answers 409.
	ErrTierDisabled = errors.New("tiered storage is disabled on this node (tiered_storage.enabled = false)")
	// ErrUnknownTopic, ErrUnknownPartition and ErrUnknownSegment are what
	// a TierOps returns for something this store does not hold; the API
	// answers 404.
	ErrUnknownTopic     = errors.New("unknown topic")
	ErrUnknownPartition = errors.New("unknown partition")
	ErrUnknownSegment   = errors.New("no such segment")
)

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	// Guard authenticates every request before the mux sees it (auth.go);
	// nil lets every request through as User:ANONYMOUS.
	Guard *Guard
}

// Server is the HTTP listener that every HTTP API of a node is mounted on.
type Server struct {
	logger *slog.Logger
	mux    *http.ServeMux
	// handler is mux behind the Guard, if any.
	handler http.Handler
	mu      struct {
		sync.Mutex
		prefixes map[string]bool
	}
}

// NewServer returns a server with nothing mounted.
func NewServer(opts Options) *Server {
	s := &Server{logger: opts.Logger, mux: http.NewServeMux()}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	s.handler = s.mux
	if opts.Guard != nil {
		s.handler = opts.Guard.Authenticate(s.mux)
	}
	s.mu.prefixes = map[string]bool{}
	return s
}

// Mount serves h at prefix and every path below it. h sees the path with
// the prefix removed ("/segments" for /v1/tier/segments, "/" for the
// prefix itself), so an API can be mounted anywhere. The longest matching
// prefix wins, so one API may be mounted inside another's space.
//
// "/" is the root mount (the console): its handler sees whole paths and
// gets every request that no other prefix claims.
func (s *Server) Mount(prefix string, h http.Handler) error {
	root := prefix == "/"
	if !root && (!strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/") || strings.ContainsAny(prefix, " {}")) {
		return fmt.Errorf("%w: %q", ErrBadPrefix, prefix)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.prefixes[prefix] {
		return fmt.Errorf("%w: %s", ErrMounted, prefix)
	}
	s.mu.prefixes[prefix] = true
	if root {
		s.mux.Handle("/", h)
		return nil
	}
	sh := stripPrefix(prefix, h)
	s.mux.Handle(prefix, sh)
	s.mux.Handle(prefix+"/", sh)
	return nil
}

// Handler is the server's handler, for tests and for serving it on a
// listener of one's own.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve answers on ln until ctx ends, then stops gracefully: it closes ln,
// lets requests in flight finish for a few seconds and returns nil. It
// returns an error only when serving fails on its own, which a daemon must
// treat as the death of the part.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return ServeHandler(ctx, ln, s.handler, s.logger)
}

// ServeHandler answers h on ln until ctx ends, stopping as Server.Serve
// does; it is for an API that has a listener of its own rather than a
// mount on the node's Server.
func ServeHandler(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			// Streams still running (a long tier offload): cut them.
			_ = srv.Close()
		}
		<-errc
		return nil
	}
}

// stripPrefix is http.StripPrefix, except that the prefix itself becomes
// "/" instead of "", which a mounted mux would redirect.
func stripPrefix(prefix string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, prefix)
		rp := strings.TrimPrefix(r.URL.RawPath, prefix)
		if p == "" {
			p = "/"
		}
		r2 := new(http.Request)
		*r2 = *r
		r2.URL = new(url.URL)
		*r2.URL = *r.URL
		r2.URL.Path = p
		if r.URL.RawPath != "" {
			if rp == "" {
				rp = "/"
			}
			r2.URL.RawPath = rp
		}
		h.ServeHTTP(w, r2)
	})
}
