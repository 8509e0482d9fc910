package kafka

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments: v0.
//
// Lists the reassignments in progress, of the named partitions or (null
// topics) of all of them, from the controller: each partition's replicas
// now (old and target together) and the stores being added and removed.
// As in AlterPartitionReassignments, replica ids are STORE node ids.
// Partitions named but not being moved are left out, as Kafka does; a
// failure to reach the controller is the top-level error.

func init() { regKey(46, 0, 0, (*Gateway).handleListPartitionReassignments) }

func (g *Gateway) handleListPartitionReassignments(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var parts []TopicPartitions
	for _, rt := range req.Topics {
		parts = append(parts, TopicPartitions{Topic: rt.Topic, Partitions: rt.Partitions})
	}
	if req.Topics != nil && len(parts) == 0 {
		return resp, nil // an empty list names nothing
	}
	ongoing, err := g.cluster.ListPartitionReassignments(ctx, parts)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	slices.SortFunc(ongoing, func(a, b OngoingReassignment) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, o := range ongoing {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != o.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = o.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = o.Partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = nonNil(o.Replicas), nonNil(o.Adding), nonNil(o.Removing)
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp, nil
}

// nonNil gives an empty list for nil: these arrays are not nullable.
func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
