package controller

import (
	"context"
	"fmt"
	"time"
)

// The replication part of the client API on the node itself.

// maxReassignments bounds one AlterPartitionReassignments request.
const maxReassignments = 100000

// AlterPartition sets a partition's ISR at the request of its leader
// store; see AlterPartitionRequest. It answers the partition as it now
// stands.
func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error) {
	if !c.IsLeader() {
		return PartitionInfo{}, c.notLeader()
	}
	if len(req.ISR) > MaxReplicationFactor*2 {
		return PartitionInfo{}, fmt.Errorf("%w: an ISR of %d stores", ErrInvalidRequest, len(req.ISR))
	}
	// A store in a controlled shutdown left the ISRs and does not join
	// them again (KIP-841), or acks=all producers would wait for it. Checked
	// here rather than in Apply, so that logged commands replay unchanged.
	var err error
	c.fsm.read(func(st *state) {
		_, p, perr := st.partition(req.Topic, req.Partition)
		if perr != nil {
			return // Apply says so
		}
		for _, r := range minus(req.ISR, p.ISR) {
			if n := st.nodes[r]; n != nil && n.ShuttingDown {
				err = fmt.Errorf("%w: %s/%d: store %d cannot join the ISR: it is shutting down", ErrIneligibleReplica, req.Topic, req.Partition, r)
				return
			}
		}
	})
	if err != nil {
		return PartitionInfo{}, err
	}
	r, err := c.propose(ctx, &cmdAlterPartition{
		Topic: req.Topic, Partition: req.Partition, LeaderID: req.LeaderID,
		LeaderEpoch: req.LeaderEpoch, PartitionEpoch: req.PartitionEpoch, ISR: req.ISR,
	})
	if err != nil {
		return PartitionInfo{}, err
	}
	if r.partition == nil {
		return PartitionInfo{}, fmt.Errorf("%w: no partition in the result", ErrTimeout)
	}
	return *r.partition, nil
}

// AlterPartitionReassignments starts, replaces or cancels reassignments;
// one error per reassignment, nil where it was accepted.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req ReassignRequest) (ReassignResponse, error) {
	if !c.IsLeader() {
		return ReassignResponse{}, c.notLeader()
	}
	if len(req.Reassignments) > maxReassignments {
		return ReassignResponse{}, fmt.Errorf("%w: %d reassignments in one request, at most %d", ErrInvalidRequest, len(req.Reassignments), maxReassignments)
	}
	resp := ReassignResponse{Errors: make([]*Error, len(req.Reassignments))}
	if len(req.Reassignments) == 0 {
		return resp, nil
	}
	r, err := c.propose(ctx, &cmdReassign{Reassignments: req.Reassignments})
	if err != nil {
		return ReassignResponse{}, err
	}
	for i, e := range r.items {
		resp.Errors[i] = toError(e)
	}
	return resp, nil
}

// ListPartitionReassignments lists the reassignments in progress.
func (c *Controller) ListPartitionReassignments(_ context.Context, req ListReassignmentsRequest) (ListReassignmentsResponse, error) {
	var resp ListReassignmentsResponse
	c.fsm.read(func(st *state) { resp.Reassignments = st.reassignments(req) })
	return resp, nil
}

// DrainStore marks a store draining and reassigns what it holds; once it
// has, a call only reports progress. With LeadershipOnly it starts the
// store's controlled shutdown instead (leadership moves, replicas stay).
func (c *Controller) DrainStore(ctx context.Context, req DrainRequest) (DrainStatus, error) {
	if !c.IsLeader() {
		return DrainStatus{}, c.notLeader()
	}
	var pending bool
	var err error
	c.fsm.read(func(st *state) {
		if n, ok := st.nodes[req.ID]; !ok || n.Kind != KindStore {
			err = fmt.Errorf("%w: %d is not a registered store", ErrUnknownNode, req.ID)
			return
		}
		if req.LeadershipOnly {
			pending = st.shutdownPending(req.ID)
		} else {
			pending = st.drainPending(req.ID)
		}
	})
	if err != nil {
		return DrainStatus{}, err
	}
	if pending && req.LeadershipOnly {
		if _, err := c.propose(ctx, &cmdShutdownStore{ID: req.ID, ShrinkISR: true}); err != nil {
			return DrainStatus{}, err
		}
		c.log.Info("moving leadership off a store that is shutting down", "store", req.ID)
	} else if pending {
		if _, err := c.propose(ctx, &cmdDrainStore{ID: req.ID}); err != nil {
			return DrainStatus{}, err
		}
		c.log.Info("draining store", "store", req.ID)
	}
	var s DrainStatus
	c.fsm.read(func(st *state) { s = st.drainStatus(req.ID) })
	return s, nil
}

// rebalanceLeaders hands leadership back to preferred replicas every
// interval while this node leads, as Kafka's auto.leader.rebalance.enable
// does, so that a store that came back and caught up leads its share
// again.
func (c *Controller) rebalanceLeaders(ctx context.Context) {
	if c.opts.LeaderRebalanceInterval < 0 {
		return
	}
	tick := time.NewTicker(c.opts.LeaderRebalanceInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var n int
		c.fsm.read(func(st *state) { n = st.preferredPending() })
		if n == 0 {
			continue
		}
		c.log.Info("moving leadership back to preferred replicas", "partitions", n)
		if _, err := c.propose(ctx, &cmdElectPreferred{}); err != nil && ctx.Err() == nil {
			c.log.Warn("preferred leader election", "err", err)
		}
	}
}
