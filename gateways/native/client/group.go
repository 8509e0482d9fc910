package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// CommitOffsets stores group's offsets (partition -> next offset to read)
// of topic in __consumer_offsets, where Kafka consumers of the group find
// them too. Outside a native group membership.
func (cl *Client) CommitOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	return cl.commit(ctx, cl.c, group, topic, "", -1, offsets)
}

func (cl *Client) commit(ctx context.Context, c *conn, group, topic, member string, gen int32, offsets map[int32]int64) error {
	t, err := cl.Topic(ctx, topic)
	if err != nil {
		return err
	}
	req := wire.OffsetCommit{Group: group, TopicID: t.ID, MemberID: member, Generation: gen}
	for p, o := range offsets {
		req.Offsets = append(req.Offsets, wire.PartitionOffset{Partition: p, Offset: o})
	}
	_, err = c.roundTrip(ctx, wire.OpOffsetCommit, req.Append)
	return err
}

// FetchOffsets returns group's committed offsets of topic, from either
// protocol's consumers; partitions without a commit are absent.
func (cl *Client) FetchOffsets(ctx context.Context, group, topic string) (map[int32]int64, error) {
	t, err := cl.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	req := wire.OffsetFetch{Group: group, TopicID: t.ID}
	r, err := cl.c.roundTrip(ctx, wire.OpOffsetFetch, req.Append)
	if err != nil {
		return nil, err
	}
	var out wire.Offsets
	if err := out.Decode(&r); err != nil {
		return nil, err
	}
	m := make(map[int32]int64, len(out.Offsets))
	for _, o := range out.Offsets {
		m[o.Partition] = o.Offset
	}
	return m, nil
}

// GroupOptions configure a GroupConsumer.
type GroupOptions struct {
	Group string
	Topic string
	// Start is where a partition without a committed offset starts:
	// StartEarliest (the default) or StartLatest.
	Start int64
	// SessionTimeout: a member not heard from for this long leaves the
	// group; default 10s. Poll heartbeats at a third of it.
	SessionTimeout time.Duration
	// MaxWait bounds one poll; default and cap a quarter of SessionTimeout.
	MaxWait time.Duration
}

// GroupConsumer is a member of a native consumer group: the gateway
// assigns it partitions of the topic, it starts each at the group's
// committed offset, and Commit stores its positions where Kafka consumers
// of the same group find them. Not safe for concurrent use.
type GroupConsumer struct {
	cl       *Client
	opts     GroupOptions
	co       *Consumer
	member   string
	gen      int32
	parts    []int32
	lastBeat time.Time
}

// JoinGroup joins a group and returns its consumer.
func JoinGroup(ctx context.Context, cl *Client, opts GroupOptions) (*GroupConsumer, error) {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 10 * time.Second
	}
	if opts.MaxWait <= 0 || opts.MaxWait > opts.SessionTimeout/4 {
		opts.MaxWait = opts.SessionTimeout / 4
	}
	if opts.Start == 0 {
		opts.Start = StartEarliest
	}
	// The consumer's own connection carries the membership too, so a
	// long poll never delays a heartbeat past the session timeout.
	co, err := NewConsumer(ctx, cl, ConsumerOptions{Topic: opts.Topic, Partitions: []int32{}, MaxWait: opts.MaxWait})
	if err != nil {
		return nil, err
	}
	g := &GroupConsumer{cl: cl, opts: opts, co: co}
	if err := g.join(ctx); err != nil {
		_ = co.Close()
		return nil, err
	}
	return g, nil
}

func (g *GroupConsumer) join(ctx context.Context) error {
	t, err := g.cl.Topic(ctx, g.opts.Topic)
	if err != nil {
		return err
	}
	req := wire.JoinGroup{Group: g.opts.Group, TopicID: t.ID, MemberID: g.member, SessionTimeoutMs: int32(g.opts.SessionTimeout / time.Millisecond)}
	r, err := g.co.c.roundTrip(ctx, wire.OpJoinGroup, req.Append)
	if err != nil {
		return fmt.Errorf("join group %s: %w", g.opts.Group, err)
	}
	var a wire.Assignment
	if err := a.Decode(&r); err != nil {
		return err
	}
	g.member, g.gen, g.parts = a.MemberID, a.Generation, a.Partitions
	g.lastBeat = time.Now()
	if fc := g.co.commit; fc != nil {
		// A commit queued for the next fetch keeps the partitions this
		// member still reads, under its new generation.
		fc.MemberID, fc.Generation = g.member, g.gen
		fc.Offsets = slices.DeleteFunc(fc.Offsets, func(o wire.TopicOffset) bool { return !slices.Contains(a.Partitions, o.Partition) })
		if len(fc.Offsets) == 0 {
			g.co.commit = nil
		}
	}
	committed, err := g.cl.FetchOffsets(ctx, g.opts.Group, g.opts.Topic)
	if err != nil {
		return err
	}
	pos := map[int32]int64{}
	for _, p := range a.Partitions {
		if o, ok := committed[p]; ok {
			pos[p] = o
		} else if old, ok := g.co.pos[p]; ok {
			pos[p] = old // kept through a rejoin, though not committed yet
		} else {
			o, err := g.cl.ListOffset(ctx, g.opts.Topic, p, g.opts.Start)
			if err != nil {
				return err
			}
			pos[p] = o
		}
	}
	g.co.pos, g.co.hw, g.co.order = pos, map[int32]int64{}, a.Partitions
	return nil
}

// Member is the member id and generation the gateway gave this consumer.
func (g *GroupConsumer) Member() (string, int32) { return g.member, g.gen }

// Assigned is the partitions this member reads now.
func (g *GroupConsumer) Assigned() []int32 { return g.parts }

// Poll heartbeats when due (joining again when the group moved on), then
// fetches once from the assigned partitions. What it returns is valid
// until the next Poll, as Consumer.Poll's is.
func (g *GroupConsumer) Poll(ctx context.Context) ([]Message, error) {
	if time.Since(g.lastBeat) >= g.opts.SessionTimeout/3 {
		req := wire.GroupMember{Group: g.opts.Group, MemberID: g.member, Generation: g.gen}
		_, err := g.co.c.roundTrip(ctx, wire.OpHeartbeat, req.Append)
		switch {
		case err == nil:
			g.lastBeat = time.Now()
		case errors.Is(err, kerr.RebalanceInProgress):
			// The group moved on: join again for this member's new
			// share. Positions not committed yet are kept for the
			// partitions it keeps.
			if err := g.join(ctx); err != nil {
				return nil, err
			}
		case errors.Is(err, kerr.UnknownMemberID):
			g.member = ""
			if err := g.join(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	if len(g.parts) == 0 {
		// Nothing assigned (more members than partitions): wait as a poll
		// would, then heartbeat again.
		select {
		case <-time.After(g.opts.MaxWait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, nil
	}
	return g.co.Poll(ctx)
}

// CaughtUp is Consumer.CaughtUp over the assigned partitions.
func (g *GroupConsumer) CaughtUp() bool { return g.co.CaughtUp() }

// Commit stores offsets (partition -> next offset to read) for the group,
// as this member of this generation.
func (g *GroupConsumer) Commit(ctx context.Context, offsets map[int32]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	g.co.commit = nil // superseded
	return g.cl.commit(ctx, g.co.c, g.opts.Group, g.opts.Topic, g.member, g.gen, offsets)
}

// CommitOnNextPoll queues offsets (partition -> next offset to read) to be
// committed inside the next Poll's fetch, as this member of this
// generation: a follower's commits then cost no round trip of their own.
// That Poll returns the commit's failure, if any. Against a gateway
// without FeatureFetchCommit it commits at once instead.
func (g *GroupConsumer) CommitOnNextPoll(ctx context.Context, offsets map[int32]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	if g.cl.hs.Features&wire.FeatureFetchCommit == 0 {
		return g.Commit(ctx, offsets)
	}
	fc := &wire.FetchCommit{Group: g.opts.Group, MemberID: g.member, Generation: g.gen}
	t := g.co.topic.ID
	for p, o := range offsets {
		fc.Offsets = append(fc.Offsets, wire.TopicOffset{TopicID: t, Partition: p, Offset: o})
	}
	g.co.commit = fc
	return nil
}

// CommitPositions commits the position of every assigned partition.
func (g *GroupConsumer) CommitPositions(ctx context.Context) error {
	offs := make(map[int32]int64, len(g.parts))
	for _, p := range g.parts {
		offs[p] = g.co.pos[p]
	}
	return g.Commit(ctx, offs)
}

// Close leaves the group, so its partitions move to the other members at
// once, and closes the connection. Commit first what should be kept.
func (g *GroupConsumer) Close(ctx context.Context) error {
	req := wire.GroupMember{Group: g.opts.Group, MemberID: g.member, Generation: g.gen}
	_, err := g.co.c.roundTrip(ctx, wire.OpLeaveGroup, req.Append)
	if cerr := g.co.Close(); err == nil {
		err = cerr
	}
	return err
}
