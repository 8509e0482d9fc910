package kafka

import "testing"

// NewMemClusterForTest returns the gateway tests' fake Cluster over a
// fresh store, for the conformance suite, which runs in package kafka_test
// (clustertest imports this package).
func NewMemClusterForTest(t *testing.T) Cluster {
	e := &testEnv{t: t, dir: t.TempDir()}
	e.openStore()
	t.Cleanup(func() {
		e.backend.Close()
		e.store.Close()
		e.cat.Close()
	})
	return newMemCluster(e.backend)
}
