package kafka_test

import (
	"testing"

	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/kafka/clustertest"
)

// TestMemClusterConformance holds the gateway tests' fake to the same
// contract as the real Cluster (kmeta), so that what the gateway tests
// show holds over the controller too.
func TestMemClusterConformance(t *testing.T) {
	clustertest.Run(t, kafka.NewMemClusterForTest(t))
}
