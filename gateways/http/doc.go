// Package http is AeroStream's HTTP ingress: one server on listeners.http
// that several APIs are mounted on, each under its own path prefix. Today
// those are the tier catalog API behind `aerostream tier` (TierAPI, under
// /v1/tier), Prometheus's /metrics and, when admin.pprof is set, Go's
// profiles (Pprof, under /debug/pprof). The console, the schema registry
// and the Iceberg REST catalog are meant to mount beside them rather than
// open listeners of their own, so that one port, one shutdown and (later)
// one authentication hook cover every HTTP API.
//
// Server owns the listener, the mux and the graceful stop; an API is an
// http.Handler that sees paths relative to its prefix, so it does not know
// where it is mounted. The one exception is the root mount, "/", where the
// web console (package console) sees whole paths and gets whatever no
// other prefix claims. Long operations stream NDJSON progress lines and end
// with one result or error line, so a CLI can draw a progress bar without
// polling.
//
// Nothing authenticates a caller yet, and some operations are destructive
// (tier gc deletes objects), which is why listeners.http defaults to
// loopback.
//
// Imports: like every gateway, this package reaches no storage package
// directly. The tier API works through the TierOps interface it defines,
// which tools/cli implements over logstore, catalog and tierd. No other
// gateway imports it, and nothing outside tools/ does.
package http
