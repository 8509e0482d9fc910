// Package ratelog limits repeated log lines: one line per key per
// interval, the rest counted. A failing disk fails the same operation on
// every request, and pebble retries a failed flush at once and reports each
// failure; a line for each once filled a disk with gigabytes of the same
// message. It is a leaf: it imports only the standard library, so that
// catalog and logstore can share it.
package ratelog
