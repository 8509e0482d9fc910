// Package controllertest is the conformance suite of controller.API: one set
// of expectations that every implementation must meet, so that the
// in-process controller, the network client and any fake a caller's tests
// use answer alike, errors included (errors.Is on the package's sentinels).
//
// It imports only controller and the standard library, and is imported by
// tests alone.
package controllertest
