// Package crashtest holds the crash tests: they build the real aerostream
// binary, run it as a separate process, kill it with SIGKILL at random
// moments while producers write, restart it and check what survived. They
// are behind the `crash` build tag (make test-crash) because they take
// minutes and spawn processes.
//
// It is a test-only package: nothing imports it.
package crashtest
