package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Membership changes. A controller joins as a Raft non-voter and is made a
// voter only once it has caught up: a voter that cannot be reached, or that
// is still far behind, counts towards the quorum without helping reach it,
// and with one voter already would stop every write.
const (
	// probeTimeout bounds the check that a new controller answers.
	probeTimeout = 2 * time.Second
	// promoteLag is how many Raft entries a non-voter may trail the leader
	// by and still be promoted: what the pipeline holds in flight.
	promoteLag = 64
	// promoteEvery is how often the leader looks for non-voters to promote.
	promoteEvery = 200 * time.Millisecond
	// promoteWait bounds how long AddVoter waits for the promotion when its
	// ctx has no deadline (curl): the leader's loop promotes the node later
	// all the same.
	promoteWait = 30 * time.Second
)

// peerInfo asks the controller at addr (only it, no redirects) for its
// ClusterInfo.
func (c *Controller) peerInfo(ctx context.Context, addr string) (ClusterInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if c.opts.Raft != nil {
		if c.opts.Raft.PeerInfo == nil {
			return ClusterInfo{}, fmt.Errorf("%w: no way to reach peers with injected Raft dependencies", ErrInvalidRequest)
		}
		return c.opts.Raft.PeerInfo(ctx, addr)
	}
	var info ClusterInfo
	// As a write: on a fresh connection, so no idle one outlives the probe.
	err := c.peers.roundTrip(ctx, addr, pathCluster, true, []byte("{}"), &info)
	return info, err
}

// server returns the Raft configuration's entry for id.
func (c *Controller) server(id int32) (raft.Server, bool, error) {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Server{}, false, fmt.Errorf("%w: raft configuration: %v", ErrTimeout, err)
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(id) {
			return s, true, nil
		}
	}
	return raft.Server{}, false, nil
}

// AddVoter adds a controller to the Raft configuration: as a non-voter
// first, promoted to voter once it has caught up. It answers once the node
// is a voter; if ctx ends before, the node stays a non-voter and the leader
// promotes it when it catches up. A controller that does not answer at the
// address, or answers as another node, is refused. Adding a voter that is
// already one at the same address is a no-op.
func (c *Controller) AddVoter(ctx context.Context, req AddVoterRequest) error {
	if !c.IsLeader() {
		return c.notLeader()
	}
	if req.ID < 0 || req.Address == "" {
		return fmt.Errorf("%w: a voter needs a non-negative id and an address", ErrInvalidRequest)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, promoteWait)
		defer cancel()
	}
	cur, found, err := c.server(req.ID)
	if err != nil {
		return err
	}
	if found && cur.Suffrage == raft.Voter && cur.Address == raft.ServerAddress(req.Address) {
		return nil
	}
	info, err := c.peerInfo(ctx, req.Address)
	if err != nil {
		return fmt.Errorf("%w: controller %d at %s does not answer (%v); start it before adding it", ErrInvalidRequest, req.ID, req.Address, err)
	}
	if info.NodeID != req.ID {
		return fmt.Errorf("%w: the controller at %s is node %d, not %d", ErrInvalidRequest, req.Address, info.NodeID, req.ID)
	}
	if found && cur.Suffrage == raft.Voter {
		// A voter that moved: Raft updates its address.
		return c.configChange(ctx, "move voter", func(timeout time.Duration) raft.IndexFuture {
			return c.raft.AddVoter(serverID(req.ID), raft.ServerAddress(req.Address), 0, timeout)
		})
	}
	if !found || cur.Address != raft.ServerAddress(req.Address) {
		err := c.configChange(ctx, "add non-voter", func(timeout time.Duration) raft.IndexFuture {
			return c.raft.AddNonvoter(serverID(req.ID), raft.ServerAddress(req.Address), 0, timeout)
		})
		if err != nil {
			return err
		}
	}
	for {
		promoted, lag, err := c.promote(ctx, req.ID)
		if err != nil || promoted {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: controller %d at %s was added as a non-voter and is %d entries behind; it becomes a voter once it catches up", ErrTimeout, req.ID, req.Address, lag)
		case <-c.ctx.Done():
			return ErrClosed
		case <-time.After(promoteEvery):
		}
	}
}

// promote makes non-voter id a voter if it has caught up; it reports
// whether id is a voter now and, if not, how far behind it is.
func (c *Controller) promote(ctx context.Context, id int32) (bool, uint64, error) {
	if !c.IsLeader() {
		return false, 0, c.notLeader()
	}
	s, found, err := c.server(id)
	switch {
	case err != nil:
		return false, 0, err
	case !found:
		return false, 0, fmt.Errorf("%w: controller %d was removed while joining", ErrInvalidRequest, id)
	case s.Suffrage == raft.Voter:
		return true, 0, nil
	}
	last := c.raft.LastIndex()
	info, err := c.peerInfo(ctx, string(s.Address))
	if err != nil || info.NodeID != id {
		return false, last, nil // not there yet; try again later
	}
	lag := uint64(0)
	if info.AppliedIndex < last {
		lag = last - info.AppliedIndex
	}
	// A node of another cluster may have a high index of its own; one of
	// ours has this cluster's id once it has caught up.
	if lag > promoteLag || info.ClusterID != c.fsm.ClusterID() {
		return false, lag, nil
	}
	err = c.configChange(ctx, "promote to voter", func(timeout time.Duration) raft.IndexFuture {
		return c.raft.AddVoter(s.ID, s.Address, 0, timeout)
	})
	if err != nil {
		return false, lag, err
	}
	c.log.Info("promoted a caught-up controller to voter", "node_id", id, "address", s.Address, "lag", lag)
	return true, 0, nil
}

// promoteLoop promotes non-voters as they catch up, for those whose
// AddVoter call gave up waiting; it runs while this node leads.
func (c *Controller) promoteLoop(ctx context.Context) {
	t := time.NewTicker(promoteEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f := c.raft.GetConfiguration()
		if f.Error() != nil {
			continue
		}
		var wg sync.WaitGroup
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				continue
			}
			wg.Add(1)
			go func(id int32) {
				defer wg.Done()
				if _, _, err := c.promote(ctx, id); err != nil && ctx.Err() == nil && !errors.Is(err, ErrNotLeader) {
					c.log.Warn("promoting a controller to voter", "node_id", id, "err", err)
				}
			}(parseServerID(s.ID))
		}
		wg.Wait()
	}
}

// RemoveVoter removes a controller from the Raft configuration.
func (c *Controller) RemoveVoter(ctx context.Context, req RemoveVoterRequest) error {
	if !c.IsLeader() {
		return c.notLeader()
	}
	_, found, err := c.server(req.ID)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: node %d is not a voter", ErrInvalidRequest, req.ID)
	}
	return c.configChange(ctx, "remove voter", func(timeout time.Duration) raft.IndexFuture {
		return c.raft.RemoveServer(serverID(req.ID), 0, timeout)
	})
}

func (c *Controller) configChange(ctx context.Context, what string, fn func(time.Duration) raft.IndexFuture) error {
	timeout := proposeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	if err := fn(timeout).Error(); err != nil {
		switch err {
		case raft.ErrNotLeader, raft.ErrLeadershipTransferInProgress:
			return c.notLeader()
		case raft.ErrRaftShutdown:
			return ErrClosed
		}
		return fmt.Errorf("%w: %s: %v", ErrTimeout, what, err)
	}
	c.log.Info("raft configuration changed", "change", what)
	return nil
}
