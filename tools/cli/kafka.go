package cli

import (
	"log/slog"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka/kmeta"
	"github.com/aerostream/aerostream/logstore/ring"
)

// newKafkaCluster wires the Kafka gateway's metadata to the controller and
// the ring (backend nil: a router over every store, Cluster.Backend);
// partitions it creates get the store's view of the topic's configs.
func newKafkaCluster(api controller.API, backend ring.Backend, dial kmeta.DialFunc, nodeID int32, addr string, log *slog.Logger) *kmeta.Cluster {
	return kmeta.New(kmeta.Options{
		API: api, Backend: backend, Dial: dial, NodeID: nodeID, Addr: addr, Logger: log, PartitionConfig: partitionConfig,
	})
}
