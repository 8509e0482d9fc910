package native

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// DescribeGroup (0x0F), ListGroups (0x10) and GroupLag (0x17) answer from
// the server what a client would otherwise piece together: a group's
// native members and their partitions, every group the cluster knows (the
// native ones on this gateway and those with committed offsets in
// __consumer_offsets, Kafka clients' included), and a group's lag per
// partition. InitProducerID (0x15) hands out idempotent producer ids from
// the allocator Kafka's InitProducerId uses, so ids never collide across
// the two protocols. A Fetch may carry a commit (its trailer, see
// PROTOCOL.md), committed before the fetch is served.

// GroupLister is what ListGroups needs of Options.Offsets beyond Offsets:
// the groups that have committed offsets. Without it, ListGroups lists
// the native groups alone.
type GroupLister interface {
	ListGroups(ctx context.Context) ([]string, error)
}

// ProducerIDs allocates idempotent producer ids; tools/ wires it to the
// Kafka gateways' InitProducerId, whose allocator is the cluster's.
type ProducerIDs interface {
	// InitProducerID returns a fresh producer id (epoch 0).
	InitProducerID(ctx context.Context) (int64, error)
}

func (s *session) initProducerID(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.Empty
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if !s.mayInitProducerID() { // authz.go
		return s.fail(wire.OpInitProducerID, corr, s.denied(auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName), -1), nil
	}
	if s.g.opts.ProducerIDs == nil {
		return s.fail(wire.OpInitProducerID, corr, fmt.Errorf("%w: no producer id allocator", kerr.CoordinatorNotAvailable), -1), nil
	}
	id, err := s.g.opts.ProducerIDs.InitProducerID(ctx)
	if err != nil {
		return s.fail(wire.OpInitProducerID, corr, err, -1), nil
	}
	out := wire.ProducerID{ID: id}
	return s.respond(wire.OpInitProducerID, ok(corr), out.Append), nil
}

func (s *session) describeGroup(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.GroupName
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if m.Group == "" {
		return s.fail(wire.OpDescribeGroup, corr, fmt.Errorf("%w: empty group id", kerr.InvalidGroupID), -1), nil
	}
	if err := s.groupErr(auth.OpDescribe, m.Group); err != nil { // authz.go
		return s.fail(wire.OpDescribeGroup, corr, err, -1), nil
	}
	out := wire.GroupDescription{Group: m.Group, State: "Dead", Generation: -1}
	gs := &s.g.groups
	gs.mu.Lock()
	if gr := gs.mu.m[m.Group]; gr != nil {
		gr.expireLocked(time.Now())
		out.Generation = gr.generation
		if len(gr.members) > 0 {
			out.State, out.TopicID = "Stable", gr.topic
			for id, mb := range gr.members {
				out.Members = append(out.Members, wire.GroupMemberInfo{MemberID: id,
					SessionTimeoutMs: int32(mb.timeout.Milliseconds()), Partitions: gr.assignmentLocked(id)})
			}
			sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].MemberID < out.Members[j].MemberID })
		}
	}
	gs.mu.Unlock()
	if out.State == "Dead" {
		names, err := s.committedGroups(ctx)
		if err != nil {
			return s.fail(wire.OpDescribeGroup, corr, err, -1), nil
		}
		if slices.Contains(names, m.Group) {
			out.State = "Empty"
		}
	}
	return s.respond(wire.OpDescribeGroup, ok(corr), out.Append), nil
}

// committedGroups lists the groups with committed offsets, or none when
// the offset store cannot list them.
func (s *session) committedGroups(ctx context.Context) ([]string, error) {
	gl, _ := s.g.opts.Offsets.(GroupLister)
	if gl == nil {
		return nil, nil
	}
	return gl.ListGroups(ctx)
}

func (s *session) listGroups(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.Empty
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	names, err := s.committedGroups(ctx)
	if err != nil {
		return s.fail(wire.OpListGroups, corr, err, -1), nil
	}
	members := map[string]int32{}
	for _, n := range names {
		members[n] = 0
	}
	gs := &s.g.groups
	gs.mu.Lock()
	now := time.Now()
	for name, gr := range gs.mu.m {
		gr.expireLocked(now)
		if len(gr.members) > 0 {
			members[name] = int32(len(gr.members))
		}
	}
	gs.mu.Unlock()
	var out wire.Groups
	// As Kafka: DESCRIBE on the cluster lists all; else the groups the
	// principal may describe, the others hidden.
	all := s.quiet(auth.OpDescribe, auth.ResourceCluster, auth.ClusterName)
	for name, n := range members {
		if all || s.quiet(auth.OpDescribe, auth.ResourceGroup, name) {
			out.Groups = append(out.Groups, wire.GroupListing{Group: name, Members: n})
		}
	}
	sort.Slice(out.Groups, func(i, j int) bool { return out.Groups[i].Group < out.Groups[j].Group })
	return s.respond(wire.OpListGroups, ok(corr), out.Append), nil
}

func (s *session) groupLag(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.GroupLag
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if err := s.groupErr(auth.OpDescribe, m.Group); err != nil { // authz.go
		return s.fail(wire.OpGroupLag, corr, err, -1), nil
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil {
		err = s.topicErr(t, opDescribe)
	}
	if err != nil {
		return s.fail(wire.OpGroupLag, corr, err, -1), nil
	}
	if s.g.opts.Offsets == nil {
		return s.fail(wire.OpGroupLag, corr, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, ErrNoOffsets), -1), nil
	}
	committed, err := s.g.opts.Offsets.FetchOffsets(ctx, m.Group, t.Name)
	if err != nil {
		return s.fail(wire.OpGroupLag, corr, err, -1), nil
	}
	var out wire.LagResponse
	for p := range t.Partitions {
		pl := wire.PartitionLag{Partition: p, Committed: -1, LogStartOffset: -1, HighWatermark: -1, Lag: -1}
		if c, ok := committed[p]; ok {
			pl.Committed = c
		}
		pi, err := s.g.opts.Backend.DescribePartition(ctx, t.Name, p)
		if err != nil {
			pl.Code = codeFor(err)
		} else {
			pl.LogStartOffset, pl.HighWatermark = pi.LogStartOffset, pi.HighWatermark
			from := pl.Committed
			if from < 0 {
				from = pi.LogStartOffset
			}
			pl.Lag = max(pi.HighWatermark-from, 0)
		}
		out.Partitions = append(out.Partitions, pl)
	}
	return s.respond(wire.OpGroupLag, ok(corr), out.Append), nil
}

// checkMember refuses a commit by a native member that is not of the
// group's current generation; member "" commits outside a membership.
func (s *session) checkMember(group, memberID string, generation int32) error {
	if memberID == "" {
		return nil
	}
	gs := &s.g.groups
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gr := gs.mu.m[group]
	if gr == nil || gr.members[memberID] == nil {
		return fmt.Errorf("%w: %q", kerr.UnknownMemberID, memberID)
	}
	if generation != gr.generation {
		return fmt.Errorf("%w: generation %d, group at %d", kerr.IllegalGeneration, generation, gr.generation)
	}
	return nil
}

// commit stores offsets of one topic for group after checking them.
func (s *session) commit(ctx context.Context, group string, t *Topic, offsets []wire.PartitionOffset) error {
	if s.g.opts.Offsets == nil {
		return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, ErrNoOffsets)
	}
	offs := make(map[int32]int64, len(offsets))
	for _, o := range offsets {
		if o.Partition < 0 || o.Partition >= t.Partitions || o.Offset < 0 {
			return fmt.Errorf("%w: partition %d offset %d", ErrBadRequest, o.Partition, o.Offset)
		}
		offs[o.Partition] = o.Offset
	}
	return s.g.opts.Offsets.CommitOffsets(ctx, group, t.Name, offs)
}

// fetchCommit commits a Fetch's trailer, topic by topic, and returns the
// first failure.
func (s *session) fetchCommit(ctx context.Context, c *wire.FetchCommit) error {
	if c.Group == "" {
		return fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	}
	if err := s.groupErr(auth.OpRead, c.Group); err != nil { // authz.go
		return err
	}
	if err := s.checkMember(c.Group, c.MemberID, c.Generation); err != nil {
		return err
	}
	var order [][16]byte
	byTopic := map[[16]byte][]wire.PartitionOffset{}
	for _, o := range c.Offsets {
		if _, seen := byTopic[o.TopicID]; !seen {
			order = append(order, o.TopicID)
		}
		byTopic[o.TopicID] = append(byTopic[o.TopicID], wire.PartitionOffset{Partition: o.Partition, Offset: o.Offset})
	}
	for _, id := range order {
		t, err := s.topicByID(ctx, id)
		if err == nil {
			err = s.topicErr(t, opRead)
		}
		if err != nil {
			return err
		}
		if err := s.commit(ctx, c.Group, t, byTopic[id]); err != nil {
			return err
		}
	}
	return nil
}
