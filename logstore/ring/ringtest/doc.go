// Package ringtest holds the conformance suite every ring.Backend passes:
// the in-process transport, the network transport over TCP and over a Unix
// socket, and any later one. It drives the Backend through its interface
// only, so a test elsewhere (tools/, a gateway) can run it over whatever
// wiring it builds.
//
// It is imported only by tests; it may import logstore, catalog and
// logstore/logtest to build a real store behind the backend under test.
package ringtest
