package client

import (
	"context"
	"fmt"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// InitProducerID asks the gateway for an idempotent producer id, from the
// cluster's allocator (the one Kafka clients' InitProducerId draws from),
// with epoch 0. A Producer calls it once; most callers need not.
func (cl *Client) InitProducerID(ctx context.Context) (int64, error) {
	r, err := cl.c.roundTrip(ctx, wire.OpInitProducerID, (&wire.Empty{}).Append)
	if err != nil {
		return 0, err
	}
	var out wire.ProducerID
	if err := out.Decode(&r); err != nil {
		return 0, err
	}
	return out.ID, nil
}

// GroupDescription is a group as DescribeGroup answers it.
type GroupDescription struct {
	Group string
	// State is "Stable" while the group has native members on the
	// gateway, "Empty" for a group known only by its committed offsets,
	// "Dead" for one the gateway knows nothing of.
	State      string
	Topic      [16]byte // the native members' topic; zero without members
	Generation int32
	Members    []GroupMember
}

// GroupMember is a native member of a group and its partitions.
type GroupMember struct {
	MemberID         string
	SessionTimeoutMs int32
	Partitions       []int32
}

// DescribeGroup describes a group on the gateway: its native members and
// their partitions.
func (cl *Client) DescribeGroup(ctx context.Context, group string) (GroupDescription, error) {
	req := wire.GroupName{Group: group}
	r, err := cl.c.roundTrip(ctx, wire.OpDescribeGroup, req.Append)
	if err != nil {
		return GroupDescription{}, err
	}
	var out wire.GroupDescription
	if err := out.Decode(&r); err != nil {
		return GroupDescription{}, err
	}
	d := GroupDescription{Group: out.Group, State: out.State, Topic: out.TopicID, Generation: out.Generation}
	for _, m := range out.Members {
		d.Members = append(d.Members, GroupMember(m))
	}
	return d, nil
}

// GroupListing is a group of ListGroups.
type GroupListing struct {
	Group   string
	Members int32 // native members on the gateway
}

// ListGroups lists the groups the cluster knows: those with native members
// and those with committed offsets (Kafka clients' too), by name.
func (cl *Client) ListGroups(ctx context.Context) ([]GroupListing, error) {
	r, err := cl.c.roundTrip(ctx, wire.OpListGroups, (&wire.Empty{}).Append)
	if err != nil {
		return nil, err
	}
	var out wire.Groups
	if err := out.Decode(&r); err != nil {
		return nil, err
	}
	ls := make([]GroupListing, 0, len(out.Groups))
	for _, g := range out.Groups {
		ls = append(ls, GroupListing(g))
	}
	return ls, nil
}

// PartitionLag is a partition of LagDetail.
type PartitionLag struct {
	Partition      int32
	Committed      int64 // -1: no commit
	LogStartOffset int64
	HighWatermark  int64
	Lag            int64
	Err            error
}

// LagDetail is how far group is behind on each partition of topic,
// computed by the gateway (GroupLag): the high watermark minus the
// committed offset, or minus the log start where the group has no commit.
func (cl *Client) LagDetail(ctx context.Context, group, topic string) ([]PartitionLag, error) {
	t, err := cl.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	req := wire.GroupLag{Group: group, TopicID: t.ID}
	r, err := cl.c.roundTrip(ctx, wire.OpGroupLag, req.Append)
	if err != nil {
		return nil, err
	}
	var out wire.LagResponse
	if err := out.Decode(&r); err != nil {
		return nil, err
	}
	ls := make([]PartitionLag, 0, len(out.Partitions))
	for _, p := range out.Partitions {
		pl := PartitionLag{Partition: p.Partition, Committed: p.Committed, LogStartOffset: p.LogStartOffset, HighWatermark: p.HighWatermark, Lag: p.Lag}
		if p.Code != 0 {
			pl.Err = &Error{Code: p.Code, LeaderHint: -1}
		}
		ls = append(ls, pl)
	}
	return ls, nil
}

// Lag is how far group is behind on each partition of topic (LagDetail's
// Lag by partition); it fails on the first partition the gateway could not
// describe.
func (cl *Client) Lag(ctx context.Context, group, topic string) (map[int32]int64, error) {
	ls, err := cl.LagDetail(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	lag := make(map[int32]int64, len(ls))
	for _, p := range ls {
		if p.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		lag[p.Partition] = p.Lag
	}
	return lag, nil
}
