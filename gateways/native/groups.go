package native

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Offsets and groups: OffsetCommit (0x0A) and OffsetFetch (0x0B) keep a
// group's offsets where the Kafka gateway keeps them (__consumer_offsets,
// in Kafka's record format), through Offsets, which tools/ wires to the
// Kafka gateways' group coordinators. So a group a native consumer
// committed continues in a Kafka client from there, and the other way
// round.
//
// JoinGroup (0x0C), Heartbeat (0x0D) and LeaveGroup (0x0E) are a native
// group's membership: the gateway assigns the topic's partitions over the
// members in ranges, by member id order, at once (no rebalance barrier):
// a join or a member's departure (leave, or no heartbeat within its
// session timeout) moves the generation on, and the other members learn it
// from their next heartbeat (REBALANCE_IN_PROGRESS) and join again for
// their new share. For that moment two members may read a partition;
// commits stay at least once. Membership lives in this gateway's memory:
// native members of a group must use the same gateway, and they do not
// coordinate with Kafka members of a group of the same name (offsets are
// shared, membership is not).

// Offsets is the group offset store the native gateway shares with the
// Kafka gateway.
type Offsets interface {
	// CommitOffsets stores offsets (partition -> next offset to read) of
	// topic for group.
	CommitOffsets(ctx context.Context, group, topic string, offsets map[int32]int64) error
	// FetchOffsets returns group's committed offsets of topic; a partition
	// without a commit is absent.
	FetchOffsets(ctx context.Context, group, topic string) (map[int32]int64, error)
}

// ErrNoOffsets: the gateway was started without an offset store.
var ErrNoOffsets = errors.New("no offset store: committed offsets need the Kafka gateway's group coordinator")

// groups is the gateway's native group membership.
type groups struct {
	mu struct {
		sync.Mutex
		m map[string]*group
	}
}

type group struct {
	topic      [16]byte
	partitions int32
	generation int32
	members    map[string]*member
}

type member struct {
	timeout time.Duration
	seen    time.Time
}

func (g *groups) init() { g.mu.m = map[string]*group{} }

// expireLocked drops members whose session ran out, moving the generation
// on when one did.
func (gr *group) expireLocked(now time.Time) {
	for id, m := range gr.members {
		if now.Sub(m.seen) > m.timeout {
			delete(gr.members, id)
			gr.generation++
		}
	}
}

// assignmentLocked is member id's share: ranges of partitions over the
// members in id order.
func (gr *group) assignmentLocked(id string) []int32 {
	ids := make([]string, 0, len(gr.members))
	for k := range gr.members {
		ids = append(ids, k)
	}
	sort.Strings(ids)
	i := slices.Index(ids, id)
	n, k := int(gr.partitions), len(ids)
	per, extra := n/k, n%k
	start := i*per + min(i, extra)
	count := per
	if i < extra {
		count++
	}
	out := make([]int32, 0, count)
	for p := start; p < start+count; p++ {
		out = append(out, int32(p))
	}
	return out
}

func newMemberID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "native-" + hex.EncodeToString(b[:])
}

func (s *session) joinGroup(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.JoinGroup
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if err := s.groupErr(auth.OpRead, m.Group); err != nil { // authz.go
		return s.fail(wire.OpJoinGroup, corr, err, -1), nil
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil {
		err = s.topicErr(t, opDescribe)
	}
	if err != nil {
		return s.fail(wire.OpJoinGroup, corr, err, -1), nil
	}
	if m.Group == "" {
		return s.fail(wire.OpJoinGroup, corr, fmt.Errorf("%w: empty group id", kerr.InvalidGroupID), -1), nil
	}
	timeout := time.Duration(m.SessionTimeoutMs) * time.Millisecond
	if timeout < time.Second || timeout > 5*time.Minute {
		return s.fail(wire.OpJoinGroup, corr, fmt.Errorf("%w: session timeout %v, want 1s to 5m", kerr.InvalidSessionTimeout, timeout), -1), nil
	}
	gs := &s.g.groups
	gs.mu.Lock()
	defer gs.mu.Unlock()
	now := time.Now()
	gr := gs.mu.m[m.Group]
	if gr != nil {
		gr.expireLocked(now)
		if len(gr.members) == 0 {
			gr = nil
		}
	}
	if gr == nil {
		gr = &group{topic: t.ID, partitions: t.Partitions, members: map[string]*member{}}
		if old := gs.mu.m[m.Group]; old != nil {
			gr.generation = old.generation
		}
		gs.mu.m[m.Group] = gr
	}
	if gr.topic != t.ID {
		return s.fail(wire.OpJoinGroup, corr, fmt.Errorf("%w: group %s reads another topic", kerr.InconsistentGroupProtocol, m.Group), -1), nil
	}
	gr.partitions = t.Partitions
	id := m.MemberID
	if mb, ok := gr.members[id]; ok && id != "" {
		mb.seen, mb.timeout = now, timeout
	} else {
		if id == "" {
			id = newMemberID()
		}
		gr.members[id] = &member{timeout: timeout, seen: now}
		gr.generation++
	}
	out := wire.Assignment{MemberID: id, Generation: gr.generation, Partitions: gr.assignmentLocked(id)}
	return s.respond(wire.OpJoinGroup, ok(corr), out.Append), nil
}

func (s *session) heartbeat(corr uint32, r *wire.Reader, leave bool) (*gateways.Response, error) {
	var m wire.GroupMember
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	op := wire.OpHeartbeat
	if leave {
		op = wire.OpLeaveGroup
	}
	if err := s.groupErr(auth.OpRead, m.Group); err != nil { // authz.go
		return s.fail(op, corr, err, -1), nil
	}
	gs := &s.g.groups
	gs.mu.Lock()
	defer gs.mu.Unlock()
	gr := gs.mu.m[m.Group]
	var mb *member
	if gr != nil {
		gr.expireLocked(time.Now())
		mb = gr.members[m.MemberID]
	}
	switch {
	case mb == nil:
		return s.fail(op, corr, fmt.Errorf("%w: %q in group %s", kerr.UnknownMemberID, m.MemberID, m.Group), -1), nil
	case leave:
		delete(gr.members, m.MemberID)
		gr.generation++
		return s.respond(op, ok(corr), nil), nil
	case m.Generation != gr.generation:
		mb.seen = time.Now()
		return s.fail(op, corr, fmt.Errorf("%w: group %s is at generation %d", kerr.RebalanceInProgress, m.Group, gr.generation), -1), nil
	}
	mb.seen = time.Now()
	return s.respond(op, ok(corr), nil), nil
}

func (s *session) offsetCommit(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.OffsetCommit
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if err := s.groupErr(auth.OpRead, m.Group); err != nil { // authz.go
		return s.fail(wire.OpOffsetCommit, corr, err, -1), nil
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil {
		err = s.topicErr(t, opRead)
	}
	if err != nil {
		return s.fail(wire.OpOffsetCommit, corr, err, -1), nil
	}
	if err := s.checkMember(m.Group, m.MemberID, m.Generation); err != nil {
		return s.fail(wire.OpOffsetCommit, corr, err, -1), nil
	}
	if err := s.commit(ctx, m.Group, t, m.Offsets); err != nil {
		return s.fail(wire.OpOffsetCommit, corr, err, -1), nil
	}
	return s.respond(wire.OpOffsetCommit, ok(corr), nil), nil
}

func (s *session) offsetFetch(ctx context.Context, corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.OffsetFetch
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if err := s.groupErr(auth.OpDescribe, m.Group); err != nil { // authz.go
		return s.fail(wire.OpOffsetFetch, corr, err, -1), nil
	}
	t, err := s.topicByID(ctx, m.TopicID)
	if err == nil {
		err = s.topicErr(t, opDescribe)
	}
	if err != nil {
		return s.fail(wire.OpOffsetFetch, corr, err, -1), nil
	}
	if s.g.opts.Offsets == nil {
		return s.fail(wire.OpOffsetFetch, corr, fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, ErrNoOffsets), -1), nil
	}
	offs, err := s.g.opts.Offsets.FetchOffsets(ctx, m.Group, t.Name)
	if err != nil {
		return s.fail(wire.OpOffsetFetch, corr, err, -1), nil
	}
	out := wire.Offsets{}
	for p, o := range offs {
		out.Offsets = append(out.Offsets, wire.PartitionOffset{Partition: p, Offset: o})
	}
	sort.Slice(out.Offsets, func(i, j int) bool { return out.Offsets[i].Partition < out.Offsets[j].Partition })
	return s.respond(wire.OpOffsetFetch, ok(corr), out.Append), nil
}
