package http

import (
	"net/http"
	"net/http/pprof"
)

// Pprof serves Go's runtime profiles (net/http/pprof), for profiling the
// hot paths under `aerostream bench`. Mount it at /debug/pprof, where
// `go tool pprof` looks by default. It is not mounted unless the operator
// asks (admin.pprof): a caller can read the program's internals and make
// the node spend CPU on a profile.
func Pprof() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", pprof.Index)
	mux.HandleFunc("GET /cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /profile", pprof.Profile)
	mux.HandleFunc("GET /symbol", pprof.Symbol)
	mux.HandleFunc("POST /symbol", pprof.Symbol)
	mux.HandleFunc("GET /trace", pprof.Trace)
	// heap, goroutine, allocs, block, mutex, threadcreate.
	mux.HandleFunc("GET /{profile}", func(w http.ResponseWriter, r *http.Request) {
		pprof.Handler(r.PathValue("profile")).ServeHTTP(w, r)
	})
	return mux
}
