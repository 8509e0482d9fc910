package controller

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/hashicorp/raft"
)

// The client API on the node itself. Writes and heartbeats need the leader
// and answer *NotLeaderError elsewhere; reads are served from the local
// state, which on a follower may trail the leader by the commit pipeline
// (Client sends everything to the leader, so its reads see its writes).

// CreateTopics creates topics; see CreateTopicsRequest.
func (c *Controller) CreateTopics(ctx context.Context, req CreateTopicsRequest) (CreateTopicsResponse, error) {
	if !c.IsLeader() {
		return CreateTopicsResponse{}, c.notLeader()
	}
	if len(req.RequestID) > MaxRequestIDLen {
		return CreateTopicsResponse{}, fmt.Errorf("%w: request id longer than %d bytes", ErrInvalidRequest, MaxRequestIDLen)
	}
	resp := CreateTopicsResponse{Topics: make([]CreateTopicResult, len(req.Topics))}
	seen := map[string]int{}
	for _, t := range req.Topics {
		seen[t.Name]++
	}
	cmd := &cmdCreateTopics{RequestID: req.RequestID}
	var idx []int // request index of each proposed topic
	leaders := make([]map[int32]bool, len(req.Topics))
	c.fsm.read(func(st *state) {
		for i, t := range req.Topics {
			resp.Topics[i].Name = t.Name
			if seen[t.Name] > 1 {
				resp.Topics[i].Error = toError(fmt.Errorf("%w: topic %q appears more than once in the request", ErrInvalidRequest, t.Name))
				continue
			}
			if own, ok := st.ownTopic(t.Name, req.RequestID); ok && !req.ValidateOnly {
				resp.Topics[i].ID, resp.Topics[i].Partitions, resp.Topics[i].ReplicationFactor = own.ID, own.Partitions, own.ReplicationFactor
				leaders[i] = leadersOf(own.Partitions)
				continue
			}
			nt, err := checkNewTopic(st, cmdNewTopic{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor, Configs: t.Configs})
			if err != nil {
				resp.Topics[i].Error = toError(err)
				continue
			}
			if req.ValidateOnly {
				resp.Topics[i].ReplicationFactor = nt.ReplicationFactor
				resp.Topics[i].Partitions = make([]PartitionInfo, nt.Partitions)
				for p := range resp.Topics[i].Partitions {
					resp.Topics[i].Partitions[p] = PartitionInfo{Partition: int32(p), Leader: NoLeader, LeaderEpoch: -1}
				}
				continue
			}
			nt.ID = newTopicID()
			cmd.Topics = append(cmd.Topics, nt)
			idx = append(idx, i)
		}
	})
	version := c.fsm.Version()
	if len(cmd.Topics) > 0 {
		r, err := c.propose(ctx, cmd)
		if err != nil {
			return CreateTopicsResponse{}, err
		}
		version = r.version
		c.createResults(&resp, r, idx, leaders)
	}
	c.waitStores(ctx, req.WaitMs, version, leaders, func(i int, err error) { resp.Topics[i].Error = toError(err) })
	return resp, nil
}

// createResults fills in the outcome of the proposed topics (request
// indexes idx) and the stores each new topic waits for.
func (c *Controller) createResults(resp *CreateTopicsResponse, r *applyResult, idx []int, leaders []map[int32]bool) {
	for j, i := range idx {
		if err := r.items[j]; err != nil {
			resp.Topics[i].Error = toError(err)
			continue
		}
		t := r.topics[j]
		resp.Topics[i].ID = t.ID
		resp.Topics[i].Partitions = t.Partitions
		resp.Topics[i].ReplicationFactor = t.ReplicationFactor
		leaders[i] = leadersOf(t.Partitions)
	}
}

// leadersOf lists the stores holding a copy of any of ps (leaders and
// followers alike), which a write with WaitMs waits for.
func leadersOf(ps []PartitionInfo) map[int32]bool {
	m := map[int32]bool{}
	for _, p := range ps {
		if p.Leader != NoLeader {
			m[p.Leader] = true
		}
		for _, r := range p.Replicas {
			m[r] = true
		}
	}
	return m
}

// waitStores waits (at most waitMs) until the stores of each item have
// applied version, and reports each item whose stores have not through
// fail. A nil set is an item that failed already.
func (c *Controller) waitStores(ctx context.Context, waitMs int64, version uint64, sets []map[int32]bool, fail func(int, error)) {
	if waitMs <= 0 {
		return
	}
	all := map[int32]bool{}
	for _, s := range sets {
		for id := range s {
			all[id] = true
		}
	}
	missing := c.waitApplied(ctx, all, version, time.Duration(waitMs)*time.Millisecond)
	if len(missing) == 0 {
		return
	}
	for i, s := range sets {
		var late []int32
		for _, id := range missing {
			if s[id] {
				late = append(late, id)
			}
		}
		if len(late) > 0 {
			fail(i, fmt.Errorf("%w: committed, but stores %v did not apply it within %d ms", ErrTimeout, late, waitMs))
		}
	}
}

// DeleteTopics deletes topics by name or id.
func (c *Controller) DeleteTopics(ctx context.Context, req DeleteTopicsRequest) (TopicsResponse, error) {
	if !c.IsLeader() {
		return TopicsResponse{}, c.notLeader()
	}
	resp := TopicsResponse{Topics: make([]TopicResult, len(req.Topics))}
	leaders := make([]map[int32]bool, len(req.Topics))
	cmd := &cmdDeleteTopics{}
	var idx []int
	c.fsm.read(func(st *state) {
		for i, ref := range req.Topics {
			resp.Topics[i] = TopicResult{Name: ref.Name, ID: ref.ID}
			t, err := st.lookup(ref)
			if err != nil {
				resp.Topics[i].Error = toError(err)
				continue
			}
			resp.Topics[i].Name, resp.Topics[i].ID = t.Name, t.ID
			cmd.Topics = append(cmd.Topics, TopicRef{Name: t.Name, ID: t.ID})
			idx = append(idx, i)
			leaders[i] = leadersOf(t.Partitions)
		}
	})
	if len(cmd.Topics) == 0 {
		return resp, nil
	}
	r, err := c.propose(ctx, cmd)
	if err != nil {
		return TopicsResponse{}, err
	}
	for j, i := range idx {
		if r.items[j] != nil {
			resp.Topics[i].Error = toError(r.items[j])
			leaders[i] = nil
		}
	}
	c.waitStores(ctx, req.WaitMs, r.version, leaders, func(i int, err error) { resp.Topics[i].Error = toError(err) })
	return resp, nil
}

// CreatePartitions grows topics.
func (c *Controller) CreatePartitions(ctx context.Context, req CreatePartitionsRequest) (TopicsResponse, error) {
	if !c.IsLeader() {
		return TopicsResponse{}, c.notLeader()
	}
	resp := TopicsResponse{Topics: make([]TopicResult, len(req.Topics))}
	cmd := &cmdCreatePartitions{}
	var idx []int
	c.fsm.read(func(st *state) {
		for i, pc := range req.Topics {
			resp.Topics[i].Name = pc.Name
			t, err := checkPartitionCount(st, pc)
			if err != nil {
				resp.Topics[i].Error = toError(err)
				continue
			}
			resp.Topics[i].ID = t.ID
			if !req.ValidateOnly {
				cmd.Topics = append(cmd.Topics, pc)
				idx = append(idx, i)
			}
		}
	})
	if len(cmd.Topics) == 0 {
		return resp, nil
	}
	r, err := c.propose(ctx, cmd)
	if err != nil {
		return TopicsResponse{}, err
	}
	leaders := make([]map[int32]bool, len(req.Topics))
	for j, i := range idx {
		if r.items[j] != nil {
			resp.Topics[i].Error = toError(r.items[j])
			continue
		}
		if t, err := c.fsm.Topic(TopicRef{Name: req.Topics[i].Name}); err == nil {
			leaders[i] = leadersOf(t.Partitions)
		}
	}
	c.waitStores(ctx, req.WaitMs, r.version, leaders, func(i int, err error) { resp.Topics[i].Error = toError(err) })
	return resp, nil
}

// AlterConfigs changes configs of topics or of the cluster defaults.
func (c *Controller) AlterConfigs(ctx context.Context, req AlterConfigsRequest) (AlterConfigsResponse, error) {
	if !c.IsLeader() {
		return AlterConfigsResponse{}, c.notLeader()
	}
	resp := AlterConfigsResponse{Resources: make([]ResourceResult, len(req.Resources))}
	cmd := &cmdAlterConfigs{}
	var idx []int
	c.fsm.read(func(st *state) {
		for i, res := range req.Resources {
			resp.Resources[i] = ResourceResult{Type: res.Type, Name: res.Name}
			if _, err := newConfigs(st, res); err != nil {
				resp.Resources[i].Error = toError(err)
				continue
			}
			if !req.ValidateOnly {
				cmd.Resources = append(cmd.Resources, res)
				idx = append(idx, i)
			}
		}
	})
	if len(cmd.Resources) == 0 {
		return resp, nil
	}
	r, err := c.propose(ctx, cmd)
	if err != nil {
		return AlterConfigsResponse{}, err
	}
	for j, i := range idx {
		resp.Resources[i].Error = toError(r.items[j])
	}
	return resp, nil
}

// DescribeConfigs lists every config of each resource with its effective
// value and source.
func (c *Controller) DescribeConfigs(_ context.Context, req DescribeConfigsRequest) (DescribeConfigsResponse, error) {
	resp := DescribeConfigsResponse{Resources: make([]DescribedConfigs, len(req.Resources))}
	c.fsm.read(func(st *state) {
		for i, r := range req.Resources {
			out := &resp.Resources[i]
			out.Type, out.Name = r.Type, r.Name
			switch r.Type {
			case ResourceTopic:
				t, ok := st.topics[r.Name]
				if !ok {
					out.Error = toError(fmt.Errorf("%w: %q", ErrUnknownTopic, r.Name))
					continue
				}
				out.Configs = describeTopicConfigs(t.Configs, st.broker, c.opts.TopicDefaults)
			case ResourceBroker:
				out.Configs = describeBrokerConfigs(st.broker, c.opts.TopicDefaults)
			default:
				out.Error = toError(fmt.Errorf("%w: resource type %q (want topic or broker)", ErrInvalidRequest, r.Type))
			}
		}
	})
	return resp, nil
}

// Metadata describes topics (all of them when none are named) and nodes.
func (c *Controller) Metadata(_ context.Context, req MetadataRequest) (MetadataResponse, error) {
	id, _ := c.leader()
	resp := MetadataResponse{LeaderID: id}
	c.fsm.read(func(st *state) {
		resp.ClusterID, resp.Version = st.clusterID, st.version
	})
	resp.Topics, resp.Missing = c.fsm.Topics(req.Topics)
	if resp.Topics == nil {
		resp.Topics = []TopicInfo{}
	}
	resp.Nodes = c.nodes()
	return resp, nil
}

// nodes lists the registered nodes; on the leader, with the heartbeat times
// it has seen.
func (c *Controller) nodes() []NodeInfo {
	nodes := c.fsm.Nodes()
	if c.IsLeader() {
		for i := range nodes {
			if t, ok := c.lastSeen(nodes[i].ID); ok && t.UnixMilli() > nodes[i].LastHeartbeatMs {
				nodes[i].LastHeartbeatMs = t.UnixMilli()
			}
			nodes[i].Stats = c.storeStats(nodes[i].ID)
		}
	}
	return nodes
}

// storeStats is the last stats store id reported to this leader, or nil.
func (c *Controller) storeStats(id int32) *StoreStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.mu.stats[id]; ok {
		return &st
	}
	return nil
}

// leaderStatsTimeout bounds a follower's asking the leader for the
// stores' stats.
const leaderStatsTimeout = 2 * time.Second

// ListNodes lists registered stores and gateways. A follower asks the
// leader for the stores' stats, which only the leader holds; when it
// cannot, it lists the nodes without them.
func (c *Controller) ListNodes(ctx context.Context) (NodesResponse, error) {
	nodes := c.nodes()
	if !c.IsLeader() && c.opts.Raft == nil {
		if _, addr := c.leader(); addr != "" {
			ctx, cancel := context.WithTimeout(ctx, leaderStatsTimeout)
			defer cancel()
			var lr NodesResponse
			if err := c.peers.roundTrip(ctx, addr, pathNodes, false, []byte("{}"), &lr); err != nil {
				c.log.Debug("asking the leader for the stores' stats", "leader", addr, "err", err)
			} else {
				stats := map[int32]*StoreStats{}
				for _, n := range lr.Nodes {
					stats[n.ID] = n.Stats
				}
				for i := range nodes {
					nodes[i].Stats = stats[nodes[i].ID]
				}
			}
		}
	}
	return NodesResponse{Nodes: nodes}, nil
}

func (c *Controller) heartbeatResponse(known uint64) HeartbeatResponse {
	return HeartbeatResponse{
		Delta:               c.fsm.DeltaSince(known),
		HeartbeatIntervalMs: c.opts.HeartbeatInterval.Milliseconds(),
		SessionTimeoutMs:    c.opts.SessionTimeout.Milliseconds(),
	}
}

// RegisterNode registers a store or gateway and starts its session.
func (c *Controller) RegisterNode(ctx context.Context, req RegisterNodeRequest) (HeartbeatResponse, error) {
	if !c.IsLeader() {
		return HeartbeatResponse{}, c.notLeader()
	}
	cmd := &cmdRegisterNode{ID: req.ID, Kind: req.Kind, Addresses: req.Addresses, Shards: req.Shards, RingAddr: req.RingAddr,
		MaxPartitions: req.MaxPartitions, NowMs: time.Now().UnixMilli()}
	if err := checkRegistration(cmd); err != nil {
		return HeartbeatResponse{}, err
	}
	if err := c.checkClash(cmd); err != nil {
		return HeartbeatResponse{}, err
	}
	if _, err := c.propose(ctx, cmd); err != nil {
		return HeartbeatResponse{}, err
	}
	c.touch(req.ID)
	c.setApplied(req.ID, req.AppliedVersion)
	c.log.Info("node registered", "node", req.ID, "kind", req.Kind, "shards", req.Shards, "ring", req.RingAddr)
	return c.heartbeatResponse(req.KnownVersion), nil
}

// checkClash refuses a registration that would take over the id of a live
// node of the same kind at other addresses: two nodes configured with one
// id. The same node back at other addresses after a restart gets in once
// its old session has expired. (A clash of kinds is refused by Apply.)
func (c *Controller) checkClash(cmd *cmdRegisterNode) error {
	old, ok := c.fsm.Node(cmd.ID)
	if !ok || old.Kind != cmd.Kind || old.Ring.Address == cmd.RingAddr && maps.Equal(old.Addresses, cmd.Addresses) {
		return nil
	}
	heard, ok := c.lastHeard(cmd.ID)
	if !ok || !old.Live || time.Since(heard) > c.opts.SessionTimeout {
		return nil
	}
	return fmt.Errorf("%w: node id %d is held by a live %s at %s (heard %v ago), not at %s; give this %s an id of its own, or stop the other (its id is free %v after its last heartbeat)",
		ErrNodeIDInUse, cmd.ID, old.Kind, nodeAddrs(old.Kind, old.Ring.Address, old.Addresses), time.Since(heard).Round(time.Millisecond),
		nodeAddrs(cmd.Kind, cmd.RingAddr, cmd.Addresses), cmd.Kind, c.opts.SessionTimeout)
}

// Heartbeat renews a node's session and answers with the metadata changes
// since its known version.
func (c *Controller) Heartbeat(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error) {
	if !c.IsLeader() {
		return HeartbeatResponse{}, c.notLeader()
	}
	n, ok := c.fsm.Node(req.ID)
	if !ok {
		return HeartbeatResponse{}, fmt.Errorf("%w: node %d", ErrUnknownNode, req.ID)
	}
	first := c.touch(req.ID)
	c.setApplied(req.ID, req.AppliedVersion)
	if req.Stats != nil && n.Kind == KindStore {
		c.mu.Lock()
		c.mu.stats[req.ID] = *req.Stats
		c.mu.Unlock()
	}
	if !n.Live {
		c.log.Info("node is back", "node", req.ID)
		if _, err := c.propose(ctx, &cmdSetLiveness{Up: []int32{req.ID}, NowMs: time.Now().UnixMilli()}); err != nil {
			return HeartbeatResponse{}, err
		}
	}
	if req.WaitMs > 0 {
		wait := min(time.Duration(req.WaitMs)*time.Millisecond, c.opts.HeartbeatInterval)
		t := time.NewTimer(wait)
		select {
		case <-c.fsm.changedSince(req.KnownVersion):
		case <-t.C:
		case <-ctx.Done():
		case <-c.ctx.Done():
		}
		t.Stop()
		if !c.IsLeader() {
			return HeartbeatResponse{}, c.notLeader()
		}
		resp := c.heartbeatResponse(req.KnownVersion)
		resp.HeldMs = c.touch(req.ID).Sub(first).Milliseconds()
		return resp, nil
	}
	return c.heartbeatResponse(req.KnownVersion), nil
}

// ClusterInfo describes the controller cluster from this node's view.
func (c *Controller) ClusterInfo(context.Context) (ClusterInfo, error) {
	id, addr := c.leader()
	info := ClusterInfo{
		ClusterID:    c.fsm.ClusterID(),
		NodeID:       c.opts.NodeID,
		State:        c.raft.State().String(),
		LeaderID:     id,
		LeaderAddr:   addr,
		Version:      c.fsm.Version(),
		AppliedIndex: c.raft.AppliedIndex(),
	}
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return info, fmt.Errorf("%w: raft configuration: %v", ErrTimeout, err)
	}
	for _, s := range f.Configuration().Servers {
		v := Voter{ID: parseServerID(s.ID), Address: string(s.Address), Suffrage: s.Suffrage.String()}
		if s.Suffrage == raft.Voter {
			info.Voters = append(info.Voters, v)
		} else {
			info.Joining = append(info.Joining, v)
		}
	}
	return info, nil
}
