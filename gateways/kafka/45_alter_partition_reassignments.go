package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments: v0-v1.
//
// Starts, replaces or cancels (null replicas) partition reassignments,
// which the controller carries out as Kafka's does: the new replicas are
// added and catch up, then the old ones leave. Replica ids are STORE node
// ids, not the gateway ids Metadata shows as brokers: the stores hold the
// data, and any gateway serves any partition (see doc.go), so moving a
// partition means moving it between stores. `aerostream topic describe`
// lists the stores of each partition.
//
// Checked here, per partition: the topic and partition exist, and (v1)
// with AllowReplicationFactorChange false the target keeps the topic's
// replication factor (INVALID_REPLICATION_FACTOR otherwise, as KIP-860).
// The controller checks the rest (replica ids are live stores, distinct,
// no more than 3; NO_REASSIGNMENT_IN_PROGRESS for a cancel with nothing to
// cancel). A failure of the request as a whole (no controller) is the
// top-level error.
//
// Version notes: v1 AllowReplicationFactorChange.

func init() { regKey(45, 0, 1, (*Gateway).handleAlterPartitionReassignments) }

func (g *Gateway) handleAlterPartitionReassignments(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	lk := g.lookup(ctx)

	var (
		send []Reassignment
		dst  []*kmsg.AlterPartitionAssignmentsResponseTopicPartition
	)
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.AlterPartitionAssignmentsResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
	}
	for ti, rt := range req.Topics {
		for pi, rp := range rt.Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			*sp = kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			t, err := lk.partition(rt.Topic, rp.Partition, -1)
			if err == nil && rp.Replicas != nil && req.Version >= 1 && !req.AllowReplicationFactorChange &&
				len(rp.Replicas) != int(max(t.ReplicationFactor, 1)) {
				err = fmt.Errorf("%w: %s/%d has replication factor %d; the target names %d stores and AllowReplicationFactorChange is false",
					kerr.InvalidReplicationFactor, rt.Topic, rp.Partition, max(t.ReplicationFactor, 1), len(rp.Replicas))
			}
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
				continue
			}
			send = append(send, Reassignment{Topic: rt.Topic, Partition: rp.Partition, Replicas: rp.Replicas})
			dst = append(dst, sp)
		}
	}
	if len(send) == 0 {
		return resp, nil
	}
	errs, err := g.cluster.AlterPartitionReassignments(ctx, send)
	if err == nil && len(errs) != len(send) {
		err = fmt.Errorf("%w: %d answers for %d reassignments", ErrUnavailable, len(errs), len(send))
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	for i, e := range errs {
		dst[i].ErrorCode, dst[i].ErrorMessage = errorCode(e), errorMessage(e)
	}
	return resp, nil
}
