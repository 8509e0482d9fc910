package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A read-only view of the groups this gateway coordinates, for the REST
// admin API, and the two changes it makes: an offset reset and a delete.
// Both run on the group's goroutine through the same code as
// OffsetCommit and DeleteGroups (durable in __consumer_offsets, refused
// while the group has members), so the API cannot race a consumer.
// Errors are kerr's: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR.

// GroupView is a group as the admin API shows it.
type GroupView struct {
	ID    string
	Type  string // classic, consumer or share
	State string
	// ProtocolType is the classic protocol type ("consumer" for Kafka
	// consumers), Protocol the chosen assignor.
	ProtocolType, Protocol string
	Members                []GroupMemberView
	// Offsets are the committed offsets; for a share group, the share
	// partitions' start offsets.
	Offsets []GroupOffset
}

// GroupMemberView is one member and what it is assigned.
type GroupMemberView struct {
	ID, ClientID, Host string
	Assigned           map[string][]int32 // topic -> partitions
}

// GroupOffset is a committed offset.
type GroupOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// AdminListGroups lists every group this gateway coordinates, without
// members or offsets.
func (g *Gateway) AdminListGroups(ctx context.Context) ([]GroupView, error) {
	list, err := g.groups.list(ctx)
	if err != nil {
		return nil, err
	}
	// A share group with state but no group record (its members never
	// came back since a restart) is a group too.
	seen := map[string]bool{}
	out := make([]GroupView, 0, len(list))
	for _, gs := range list {
		seen[gs.id] = true
		out = append(out, GroupView{ID: gs.id, Type: gs.typ, State: gs.state, ProtocolType: gs.protocolType})
	}
	for _, id := range g.shares.groups() {
		if !seen[id] {
			out = append(out, GroupView{ID: id, Type: "share", State: "Empty", ProtocolType: "share"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// AdminDescribeGroup describes one group with its members, assignments
// and committed offsets.
func (g *Gateway) AdminDescribeGroup(ctx context.Context, id string) (GroupView, error) {
	v, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- GroupView) {
		reply <- gr.view()
	})
	if groupGone(err) {
		if len(g.shares.topicsOf(id)) == 0 {
			return GroupView{}, fmt.Errorf("%w: group %s", kerr.GroupIDNotFound, id)
		}
		v, err = GroupView{ID: id, Type: "share", State: "Empty", ProtocolType: "share"}, nil
	}
	if err != nil {
		return GroupView{}, err
	}
	if v.Type == "share" {
		for topic, parts := range g.shares.topicsOf(id) {
			for _, p := range parts {
				if start, ok := g.shares.startOffset(shareKey{id, topic, p}); ok {
					v.Offsets = append(v.Offsets, GroupOffset{topic, p, start})
				}
			}
		}
	}
	return v, nil
}

// view is the group's GroupView, on its goroutine.
func (gr *group) view() GroupView {
	s := gr.summary()
	v := GroupView{ID: gr.id, Type: s.typ, State: s.state, ProtocolType: s.protocolType, Protocol: gr.protocol}
	if gr.state == groupDead {
		v.State = groupDead.String()
	}
	switch {
	case gr.cg != nil:
		v.Protocol = gr.cg.Assignor
		for _, m := range gr.cg.Members {
			v.Members = append(v.Members, GroupMemberView{ID: m.ID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: copyParts(m.Assigned)})
		}
	case gr.sg != nil:
		v.Protocol = "simple"
		for _, m := range gr.sg.members {
			v.Members = append(v.Members, GroupMemberView{ID: m.id, ClientID: m.clientID, Host: m.clientHost, Assigned: copyParts(m.assigned)})
		}
	default:
		for _, m := range gr.sortedMembers() {
			mv := GroupMemberView{ID: m.id, ClientID: m.clientID, Host: m.clientHost}
			if gr.protocolType == "consumer" && len(m.assignment) > 0 {
				var a kmsg.ConsumerMemberAssignment
				if a.ReadFrom(m.assignment) == nil {
					mv.Assigned = map[string][]int32{}
					for _, t := range a.Topics {
						mv.Assigned[t.Topic] = append(mv.Assigned[t.Topic], t.Partitions...)
					}
				}
			}
			v.Members = append(v.Members, mv)
		}
	}
	sort.Slice(v.Members, func(i, j int) bool { return v.Members[i].ID < v.Members[j].ID })
	if !gr.isShare() {
		for k, c := range gr.offsets {
			v.Offsets = append(v.Offsets, GroupOffset{k.topic, k.partition, c.offset})
		}
	}
	return v
}

func copyParts(tp topicParts) map[string][]int32 {
	out := make(map[string][]int32, len(tp))
	for t, ps := range tp {
		out[t] = slices.Clone(ps)
	}
	return out
}

// AdminCommitOffsets sets a group's committed offsets (a share group's
// start offsets) while it has no members: what kafka-consumer-groups
// --reset-offsets does through OffsetCommit with generation -1.
func (g *Gateway) AdminCommitOffsets(ctx context.Context, id string, offs []GroupOffset) error {
	now := time.Now().UnixMilli()
	staged := make(map[tp]committed, len(offs))
	for _, o := range offs {
		staged[tp{o.Topic, o.Partition}] = committed{offset: o.Offset, leaderEpoch: -1, commitTs: now}
	}
	isShare, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- shareOrErr) {
		if gr.isShare() {
			reply <- shareOrErr{share: true, err: gr.ensureEmptyShare()}
			return
		}
		if (gr.cg != nil && len(gr.cg.Members) > 0) || gr.state != groupEmpty {
			reply <- shareOrErr{err: fmt.Errorf("%w: group %s has members", kerr.NonEmptyGroup, id)}
			return
		}
		reply <- shareOrErr{err: gr.commit("", staged)}
	})
	if groupGone(err) {
		if len(g.shares.topicsOf(id)) == 0 {
			return fmt.Errorf("%w: group %s", kerr.GroupIDNotFound, id)
		}
		if err = g.emptyShareGroup(ctx, id); err != nil {
			return err
		}
		isShare.share = true
	} else if err == nil {
		err = isShare.err
	}
	if err != nil || !isShare.share {
		return err
	}
	for _, o := range offs {
		if err := g.shares.reset(ctx, shareKey{id, o.Topic, o.Partition}, o.Offset); err != nil {
			return err
		}
	}
	return nil
}

type shareOrErr struct {
	share bool
	err   error
}

// AdminDeleteGroup deletes a group with no members, as DeleteGroups does.
func (g *Gateway) AdminDeleteGroup(ctx context.Context, id string) error {
	res, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- error) {
		reply <- gr.deleteIfEmpty()
	})
	if groupGone(err) {
		if len(g.shares.topicsOf(id)) == 0 {
			return fmt.Errorf("%w: group %s", kerr.GroupIDNotFound, id)
		}
		// Share state without a group record: the group is empty.
		return g.shares.deleteGroup(ctx, id)
	}
	if err == nil {
		err = res
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("%w: group %s", kerr.GroupIDNotFound, id)
	}
	return err
}

// groups lists the groups that have share state.
func (s *shares) groups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for k := range s.mu.parts {
		seen[k.group] = true
	}
	for k := range s.mu.persisted {
		seen[k.group] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	return out
}
