package kafka

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicGroupUpgradeOnline: Kafka 4's online upgrade. A franz-go
// consumer of a classic group (cooperative-sticky, client-side
// assignment) is consuming when a KIP-848 consumer joins the same group:
// the group becomes a consumer group with a classic member, the two share
// the partitions (each owns some, none both), and between them they
// consume every record exactly once, those produced after the split
// coming through both.
func TestClassicGroupUpgradeOnline(t *testing.T) {
	e := newTestEnv(t)
	admin := newClient(t, e.addr)
	const topic, group, total = "upgrade", "upgrade-group", 600
	createTopic(t, admin, topic, 6)
	produceN(t, admin, topic, 0, total/2)
	ctx := testCtx(t)
	p := newGroupPoller(t, total/2)

	classic := groupMember(t, e.addr, group, topic, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	for got := 0; got < 50; {
		got += p.poll(ctx, classic, 0)
	}
	if lg := listGroups(t, admin); !hasGroup(lg, group, "classic") {
		t.Fatalf("before the upgrade ListGroups shows %v", lg)
	}

	modern := groupMember(t, e.addr, group, topic, kgo.ServerSideBalancer())
	// Both poll while the group converts and rebalances: a member that
	// does not poll holds up its own revocation (BlockRebalanceOnPoll).
	pctx, stop := context.WithCancel(ctx)
	p.run(pctx, classic, 0)
	p.run(pctx, modern, 1)
	deadline := time.Now().Add(30 * time.Second)
	for !splitBetweenProtocols(describeConsumerGroup(t, ctx, admin, group), 6) {
		if time.Now().After(deadline) {
			stop()
			p.wait()
			t.Fatalf("the group never split its partitions between a classic and a consumer member: %+v", describeConsumerGroup(t, ctx, admin, group))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lg := listGroups(t, admin); !hasGroup(lg, group, "consumer") {
		t.Errorf("after the upgrade ListGroups shows %v", lg)
	}
	produceN(t, admin, topic, total/2, total/2)
	for p.count() < total && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	p.wait()
	p.checkOnce(total)
	if p.late[0] == 0 || p.late[1] == 0 {
		t.Errorf("records produced after the split: classic member consumed %d, consumer-protocol member %d", p.late[0], p.late[1])
	}
	t.Logf("records produced after the split: classic member consumed %d, consumer-protocol member %d", p.late[0], p.late[1])
}

// TestClassicGroupDowngradeOnline: Kafka 4's online downgrade, classic ->
// mixed -> classic. A franz-go classic consumer is consuming when a
// KIP-848 consumer joins (the upgrade), then the KIP-848 consumer leaves:
// the group is a classic group again, its classic member rebalances and
// takes every partition, and consumes on. A gateway restart keeps the
// group classic with its committed offsets, and the classic consumer,
// left running, rejoins and consumes what comes next. Every record is
// consumed exactly once.
func TestClassicGroupDowngradeOnline(t *testing.T) {
	e := newTestEnv(t)
	e.keepAddr = true
	admin := newClient(t, e.addr)
	const topic, group = "downgrade", "downgrade-group"
	createTopic(t, admin, topic, 6)
	produceN(t, admin, topic, 0, 200)
	ctx := testCtx(t)
	p := newGroupPoller(t, 200)

	classic := groupMember(t, e.addr, group, topic, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	for got := 0; got < 50; {
		got += p.poll(ctx, classic, 0)
	}
	cctx, stopClassic := context.WithCancel(ctx)
	p.run(cctx, classic, 0)
	modern := groupMember(t, e.addr, group, topic, kgo.ServerSideBalancer())
	mctx, stopModern := context.WithCancel(ctx)
	modernDone := p.run(mctx, modern, 1)
	waitFor(t, "the group to split its partitions between a classic and a consumer member", func() bool {
		return splitBetweenProtocols(describeConsumerGroup(t, ctx, admin, group), 6)
	})

	// The last consumer-protocol member leaves (a heartbeat at epoch -1).
	stopModern()
	modernDone()
	modern.Close()
	waitFor(t, "the group to be classic, its classic member owning every partition", func() bool {
		return hasGroup(listGroups(t, admin), group, "classic") && classicOwns(t, ctx, admin, group, topic) == 6
	})
	produceN(t, admin, topic, 200, 200)
	waitFor(t, "400 records consumed", func() bool { return p.count() == 400 })
	stopClassic()
	p.wait()
	adm := kadm.NewClient(admin)
	committed := func() int64 {
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		offs.Each(func(o kadm.OffsetResponse) { n += o.At })
		return n
	}
	if n := committed(); n != 400 {
		t.Fatalf("before the restart the group committed %d records, want 400", n)
	}

	// A restart finds a classic group and its offsets; the classic
	// consumer, still running, joins it again.
	p.restarted.Store(true)
	e.stopGateway()
	e.start()
	if lg := listGroups(t, admin); !hasGroup(lg, group, "classic") {
		t.Fatalf("after the restart ListGroups shows %v", lg)
	}
	if n := committed(); n != 400 {
		t.Fatalf("after the restart the group has %d records committed, want 400", n)
	}
	if g := describeConsumerGroup(t, ctx, admin, group); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupDescribe of the classic group after the restart: %v", kerr.ErrorForCode(g.ErrorCode))
	}
	cctx, stopClassic = context.WithCancel(ctx)
	defer stopClassic()
	p.run(cctx, classic, 0)
	waitFor(t, "the classic member to own every partition again", func() bool {
		return classicOwns(t, ctx, admin, group, topic) == 6
	})
	produceN(t, admin, topic, 400, 100)
	waitFor(t, "500 records consumed", func() bool { return p.count() == 500 })
	stopClassic()
	p.wait()
	p.checkOnce(500)
	if p.late[0] != 300 || p.late[1] != 0 {
		t.Errorf("records produced after the downgrade: classic member consumed %d, consumer-protocol member %d; want 300 and 0", p.late[0], p.late[1])
	}
	if n := committed(); n != 500 {
		t.Errorf("the group committed %d records, want 500", n)
	}
}

// groupPoller counts what franz-go members of one group consume. Each
// poll's records are committed before a rebalance may move their
// partitions (BlockRebalanceOnPoll), so none is consumed twice.
type groupPoller struct {
	t      *testing.T
	from   int // keys from here on are counted per member in late
	wg     sync.WaitGroup
	ctx    context.Context // ends every poll at the end of the test
	cancel context.CancelFunc
	// restarted: the gateway was restarted, and a member's first join
	// with its old id is refused.
	restarted atomic.Bool

	mu   sync.Mutex
	seen map[string]int
	late map[int]int
}

func newGroupPoller(t *testing.T, from int) *groupPoller {
	p := &groupPoller{t: t, from: from, seen: map[string]int{}, late: map[int]int{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	t.Cleanup(func() { // no poll outlives the test, even when it fails
		p.cancel()
		p.wait()
	})
	return p
}

// groupMember is a franz-go consumer of group for groupPoller.
func groupMember(t *testing.T, addr, group, topic string, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.FetchMaxPartitionBytes(512), kgo.HeartbeatInterval(200 * time.Millisecond),
	}, opts...)...)
}

// poll takes one poll's records (waiting up to 200ms), counts them for
// member who, and commits them.
func (p *groupPoller) poll(ctx context.Context, cl *kgo.Client, who int) int {
	pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	fs := cl.PollFetches(pctx)
	cancel()
	defer cl.AllowRebalance()
	fs.EachError(func(_ string, _ int32, err error) {
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		case p.restarted.Load() && errors.Is(err, kerr.UnknownMemberID):
			// Membership is not kept across a gateway restart: a
			// member's join with its old id is refused once, and it
			// joins anew.
			p.t.Logf("poll after the restart: %v", err)
		default:
			p.t.Errorf("poll: %v", err)
		}
	})
	n := 0
	p.mu.Lock()
	fs.EachRecord(func(r *kgo.Record) {
		p.seen[string(r.Key)]++
		n++
		if k, _ := strconv.Atoi(string(r.Key)); k >= p.from {
			p.late[who]++
		}
	})
	p.mu.Unlock()
	if n > 0 {
		// Not ctx: records counted are committed, even as the poll ends.
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cl.CommitUncommittedOffsets(cctx); err != nil {
			p.t.Errorf("commit: %v", err)
		}
	}
	return n
}

// run polls with cl until ctx ends; the returned func waits for it.
func (p *groupPoller) run(ctx context.Context, cl *kgo.Client, who int) func() {
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	context.AfterFunc(p.ctx, cancel)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(done)
		defer cancel()
		for ctx.Err() == nil {
			p.poll(ctx, cl, who)
		}
	}()
	return func() { <-done }
}

func (p *groupPoller) wait() { p.wg.Wait() }

func (p *groupPoller) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// checkOnce checks that keys 0..total-1 were each consumed once.
func (p *groupPoller) checkOnce(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; i < total; i++ {
		if n := p.seen[strconv.Itoa(i)]; n != 1 {
			p.t.Errorf("key %d consumed %d times", i, n)
		}
	}
}

func describeConsumerGroup(t *testing.T, ctx context.Context, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Groups[0]
}

// splitBetweenProtocols: a stable consumer group of two members, one
// classic and one of the consumer protocol, each owning partitions, none
// both, all parts of them between them.
func splitBetweenProtocols(g kmsg.ConsumerGroupDescribeResponseGroup, parts int32) bool {
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 2 {
		return false
	}
	owned := map[int32]int{}
	types := map[int8]bool{}
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				owned[p]++
				n++
			}
		}
		if n == 0 {
			return false
		}
		types[m.MemberType] = true
	}
	for p := int32(0); p < parts; p++ {
		if owned[p] != 1 {
			return false
		}
	}
	return types[0] && types[1]
}

// classicOwns is how many partitions of topic the one member of a stable
// classic group owns, or -1 when the group is not that.
func classicOwns(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string) int {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.ProtocolType != "consumer" || len(g.Members) != 1 {
		return -1
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(g.Members[0].MemberAssignment); err != nil {
		t.Fatalf("member assignment: %v", err)
	}
	n := 0
	for _, at := range asg.Topics {
		if at.Topic == topic {
			n += len(at.Partitions)
		}
	}
	return n
}

func hasGroup(lg []kmsg.ListGroupsResponseGroup, group, typ string) bool {
	for _, g := range lg {
		if g.Group == group {
			return g.GroupType == typ
		}
	}
	return false
}

// TestClassicUpgradeRefusedByPolicy: with group.consumer.migration.policy
// "downgrade" a consumer-protocol member may not join a classic group
// that has members (GROUP_ID_NOT_FOUND), and the group stays classic.
func TestClassicUpgradeRefusedByPolicy(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.GroupConsumerMigrationPolicy = "DOWNGRADE" })
	admin := newClient(t, e.addr)
	createTopic(t, admin, "upgrade-policy", 1)
	produceN(t, admin, "upgrade-policy", 0, 10)
	consumeGroupOpen(t, e.addr, "policy-group", "upgrade-policy")

	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "policy-group", "m-1", 0
	req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 30000, []string{"upgrade-policy"}
	resp, err := req.RequestWith(testCtx(t), admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != kerr.GroupIDNotFound {
		t.Fatalf("consumer-protocol join of a classic group under the downgrade policy: %v", err)
	}
	if lg := listGroups(t, admin); !hasGroup(lg, "policy-group", "classic") {
		t.Fatalf("ListGroups shows %v", lg)
	}
}

// consumeGroupOpen starts a classic consumer in group and waits until it
// has consumed a record, leaving it in the group.
func consumeGroupOpen(t *testing.T, addr, group, topic string) {
	t.Helper()
	cl := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got == 0; {
		fs := cl.PollFetches(testCtx(t))
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got = fs.NumRecords()
	}
}

// FuzzClassicSubscription: a classic member's JoinGroup metadata, as
// the upgrade reads it, never panics, and what it owns comes out as the
// sorted, duplicate-free sets the assignment code needs.
func FuzzClassicSubscription(f *testing.F) {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version, md.Topics = 1, []string{"b", "a", "b"}
	op := kmsg.NewConsumerMemberMetadataOwnedPartition()
	op.Topic, op.Partitions = "a", []int32{3, 1, 3}
	md.OwnedPartitions = append(md.OwnedPartitions, op)
	f.Add(md.AppendTo(nil))
	f.Add([]byte{0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		topics, owned, err := classicSubscription(b)
		if err != nil {
			return
		}
		for i := 1; i < len(topics); i++ {
			if topics[i-1] >= topics[i] {
				t.Fatalf("topics %q not sorted and unique", topics)
			}
		}
		for tp, ps := range owned {
			for i := 1; i < len(ps); i++ {
				if ps[i-1] >= ps[i] {
					t.Fatalf("owned %s %v not sorted and unique", tp, ps)
				}
			}
		}
	})
}

// TestConsumerGroupDowngradePolicy: in a group with a classic member and
// a consumer-protocol member, the latter's leaving turns the group back
// into a classic group under the bidirectional policy, where the classic
// member, at its generation, is told to rebalance and becomes the leader
// of the next; under upgrade the group stays a consumer group.
func TestConsumerGroupDowngradePolicy(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{{"bidirectional", "classic"}, {"upgrade", "consumer"}} {
		t.Run(tc.policy, func(t *testing.T) {
			e := newTestEnv(t, func(o *Options) { o.GroupConsumerMigrationPolicy = tc.policy })
			cl := newClient(t, e.addr)
			const group, topic = "dg-group", "dg"
			createTopic(t, cl, topic, 2)
			c := &rawClassic{t: t, ctx: testCtx(t), cl: cl, group: group, topic: topic}
			c.join()
			c.sync()
			if len(c.owned) != 2 {
				t.Fatalf("the classic leader owns %v, want both partitions", c.owned)
			}

			hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch = group, "modern", 0
			hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 30000, []string{topic}
			if resp, err := hb.RequestWith(c.ctx, cl); err != nil || resp.ErrorCode != 0 {
				t.Fatalf("consumer-protocol join: %v %v", err, resp)
			}
			c.settle()
			if len(c.owned) != 1 {
				t.Fatalf("in the mixed group the classic member owns %v, want one partition", c.owned)
			}
			hb.MemberEpoch = -1
			if resp, err := hb.RequestWith(c.ctx, cl); err != nil || resp.ErrorCode != 0 {
				t.Fatalf("consumer-protocol leave: %v %v", err, resp)
			}
			if lg := listGroups(t, cl); !hasGroup(lg, group, tc.want) {
				t.Fatalf("after the consumer-protocol member left ListGroups shows %v, want a %s group", lg, tc.want)
			}
			if tc.want == "consumer" {
				c.settle()
				if len(c.owned) != 2 {
					t.Errorf("the classic member of the consumer group owns %v, want both partitions", c.owned)
				}
				return
			}
			if err := c.heartbeat(); err != kerr.RebalanceInProgress {
				t.Fatalf("heartbeat of the classic member at generation %d after the downgrade: %v, want REBALANCE_IN_PROGRESS", c.gen, err)
			}
			gen := c.gen
			c.join()
			if c.leader != c.id || c.gen != gen+1 {
				t.Fatalf("join after the downgrade: leader %q generation %d, want itself and %d", c.leader, c.gen, gen+1)
			}
			c.sync()
			if err := c.heartbeat(); err != nil || len(c.owned) != 2 {
				t.Fatalf("after the rebalance: heartbeat %v, owns %v", err, c.owned)
			}
		})
	}
}

// rawClassic is a classic consumer-protocol member driven by hand: it
// joins with the partitions it owns, and as leader assigns them all to
// itself.
type rawClassic struct {
	t            *testing.T
	ctx          context.Context
	cl           *kgo.Client
	group, topic string

	id, leader string
	gen        int32
	owned      []int32
}

func (c *rawClassic) join() {
	c.t.Helper()
	md := kmsg.NewConsumerMemberMetadata()
	md.Version, md.Topics = 1, []string{c.topic}
	if len(c.owned) > 0 {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = c.topic, c.owned
		md.OwnedPartitions = append(md.OwnedPartitions, op)
	}
	for range 2 { // the first join of a new member gets its id
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = c.group, c.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
		resp, err := req.RequestWith(c.ctx, c.cl)
		if err != nil {
			c.t.Fatal(err)
		}
		c.id = resp.MemberID
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			continue
		}
		if resp.ErrorCode != 0 {
			c.t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		c.gen, c.leader = resp.Generation, resp.LeaderID
		return
	}
	c.t.Fatal("join: member id required twice")
}

func (c *rawClassic) sync() {
	c.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = c.group, c.id, c.gen
	req.ProtocolType, req.Protocol = ptr("consumer"), ptr("range")
	if c.leader == c.id {
		asg := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = c.topic, []int32{0, 1}
		asg.Topics = append(asg.Topics, at)
		sa := kmsg.NewSyncGroupRequestGroupAssignment()
		sa.MemberID, sa.MemberAssignment = c.id, asg.AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, sa)
	}
	resp, err := req.RequestWith(c.ctx, c.cl)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		c.t.Fatalf("sync at generation %d: %v", c.gen, kerr.ErrorForCode(resp.ErrorCode))
	}
	var asg kmsg.ConsumerMemberAssignment
	if err := asg.ReadFrom(resp.MemberAssignment); err != nil {
		c.t.Fatalf("sync: assignment: %v", err)
	}
	c.owned = nil
	for _, at := range asg.Topics {
		c.owned = append(c.owned, at.Partitions...)
	}
}

func (c *rawClassic) heartbeat() error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = c.group, c.id, c.gen
	resp, err := req.RequestWith(c.ctx, c.cl)
	if err != nil {
		c.t.Fatal(err)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// settle joins and syncs again while the heartbeat asks for a rebalance.
func (c *rawClassic) settle() {
	c.t.Helper()
	for range 10 {
		switch err := c.heartbeat(); err {
		case nil:
			return
		case kerr.RebalanceInProgress:
			c.join()
			c.sync()
		default:
			c.t.Fatalf("heartbeat at generation %d: %v", c.gen, err)
		}
	}
	c.t.Fatal("the classic member did not settle in 10 rebalances")
}
