// Package gateways is the plumbing every client-facing gateway shares: the
// listener and accept loop, the lifecycle of a connection, request size
// limits, the hook point for authentication, graceful drain and the
// isolation of one connection's failure from the others.
//
// A gateway supplies a Protocol: how to cut a byte stream into request
// frames and how to answer one. Server does the rest. Each connection gets
// exactly two goroutines (house style: one owner per piece of state):
//
//   - the read goroutine owns the socket's read side and the protocol
//     Session. It reads a frame, has the Session handle it, and queues the
//     response; frames are handled one at a time and in order, which is
//     what the Kafka protocol requires of a broker (responses in request
//     order, and a produce applied before the next one on that
//     connection);
//   - the write goroutine owns the socket's write side. It writes queued
//     responses in order: byte parts through a buffer, file parts with
//     sendfile(2) straight from the page cache to the socket (zero copy),
//     with a read-and-write fallback where sendfile is refused.
//
// A frame larger than Server.MaxFrameBytes, a frame the protocol cannot
// parse, or a panic while handling one closes that connection with a log
// line; the server and its other connections carry on. When the Serve
// context ends the listener closes, every connection stops reading after
// the request it is serving (long polls are cut short through their
// context), writes what it owes within DrainTimeout, and closes; Serve
// returns once all of them are gone.
//
// Authentication: every connection starts as the Anonymous principal. On
// a TLS listener the server first completes the handshake within
// HandshakeTimeout, and a verified client certificate sets the principal
// (its subject mapped by Server.Principals, Kafka's
// ssl.principal.mapping.rules). The hook point is Conn.SetPrincipal,
// which a protocol's authentication exchange calls once it has verified
// a client, replacing the certificate's principal: both gateways' SASL
// does.
//
// Imports: of AeroStream's packages, gateways imports logstore/ring,
// whose Backend every gateway consumes and whose SendRange is the one
// sendfile-or-copy path for segment ranges, auth for the certificate
// principal, and internal/ helpers. Gateways live in
// subpackages (gateways/kafka, gateways/native) and import this one; no
// gateway imports another, and nothing outside tools/ imports a gateway.
package gateways
