package kmeta

import (
	"context"
	"fmt"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/gateways/kafka"
)

// AlterPartitionReassignments hands the reassignments to the controller,
// which carries them out; replica ids are store node ids on both sides.
func (c *Cluster) AlterPartitionReassignments(ctx context.Context, rs []kafka.Reassignment) ([]error, error) {
	req := controller.ReassignRequest{Reassignments: make([]controller.Reassignment, len(rs))}
	for i, r := range rs {
		req.Reassignments[i] = controller.Reassignment{Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas}
	}
	resp, err := c.opts.API.AlterPartitionReassignments(ctx, req)
	if err != nil {
		return nil, clusterErr(err)
	}
	if len(resp.Errors) != len(rs) {
		return nil, fmt.Errorf("%w: the controller answered %d of %d reassignments", kafka.ErrUnavailable, len(resp.Errors), len(rs))
	}
	errs := make([]error, len(rs))
	for i, e := range resp.Errors {
		if e != nil {
			errs[i] = clusterErr(e)
		}
	}
	return errs, nil
}

// ListPartitionReassignments asks the controller.
func (c *Cluster) ListPartitionReassignments(ctx context.Context, parts []kafka.TopicPartitions) ([]kafka.OngoingReassignment, error) {
	var req controller.ListReassignmentsRequest
	for _, p := range parts {
		req.Topics = append(req.Topics, controller.TopicPartitions{Topic: p.Topic, Partitions: p.Partitions})
	}
	resp, err := c.opts.API.ListPartitionReassignments(ctx, req)
	if err != nil {
		return nil, clusterErr(err)
	}
	out := make([]kafka.OngoingReassignment, len(resp.Reassignments))
	for i, o := range resp.Reassignments {
		out[i] = kafka.OngoingReassignment{Topic: o.Topic, Partition: o.Partition, Replicas: o.Replicas, Adding: o.Adding, Removing: o.Removing}
	}
	return out, nil
}
