// Package wire is the native protocol's codec (gateways/native/PROTOCOL.md):
// the 7-byte frame header and every message's layout, shared by the
// gateway and the Go SDK so the two cannot drift apart. Decoders never
// allocate for record bytes (they alias the frame) and fail with
// ErrMalformed on any length that runs past the end, so the gateway can
// answer a bad frame with a clear error instead of misreading it.
//
// It imports no AeroStream package: the SDK that uses it must stay
// importable without the server.
package wire
