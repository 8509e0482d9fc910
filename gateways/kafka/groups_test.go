package kafka

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func produceN(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		cl.Produce(testCtx(t), &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("v")}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// consumeGroup consumes with a group member until it has n records or the
// context ends, committing as it goes, and returns the keys.
func consumeGroup(t *testing.T, addr, group, topic string, n int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
	}, opts...)...)
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(keys) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(keys), n)
		}
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close() // leaves the group
	return keys
}

// TestCommittedOffsetsSurviveRestart: a group consumes half, commits, the
// gateway restarts (losing all membership), and a new member resumes at
// the committed offsets: nothing missing, nothing twice.
func TestCommittedOffsetsSurviveRestart(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "durable", 4)
	produceN(t, cl, "durable", 0, 400)

	first := consumeGroup(t, e.addr, "g1", "durable", 200)
	cl.Close()

	e.stopGateway()
	e.start()

	cl = newClient(t, e.addr)
	produceN(t, cl, "durable", 400, 100)
	rest := consumeGroup(t, e.addr, "g1", "durable", 500-len(first))
	seen := map[string]int{}
	for _, k := range append(first, rest...) {
		seen[k]++
	}
	for i := 0; i < 500; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("key %d consumed %d times", i, c)
		}
	}

	// OffsetFetch sees the commits too.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "g1"
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			total += p.Offset
		}
	}
	if total != 500 {
		t.Errorf("committed offsets sum to %d, want 500", total)
	}
}

// TestGroupRebalance runs several members of eager and cooperative groups
// that come and go, and checks that every record is consumed exactly once.
func TestGroupRebalance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
		static   bool
	}{
		{"range", kgo.RangeBalancer(), false},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer(), false},
		{"cooperative-sticky-static", kgo.CooperativeStickyBalancer(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cl := newClient(t, e.addr)
			topic := "rb-" + tc.name
			createTopic(t, cl, topic, 6)
			const total = 3000
			produceN(t, cl, topic, 0, total)

			var mu sync.Mutex
			seen := map[string]int{}
			count := 0
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			member := func(i int, quitAfter int) {
				defer wg.Done()
				opts := []kgo.Opt{
					kgo.SeedBrokers(e.addr), kgo.ConsumerGroup("g-" + tc.name), kgo.ConsumeTopics(topic),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Balancers(tc.balancer),
					kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.SessionTimeout(10 * time.Second),
					kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
						if err := cl.CommitUncommittedOffsets(ctx); err != nil {
							t.Errorf("member %d: commit on revoke: %v", i, err)
						}
					}),
				}
				if tc.static {
					opts = append(opts, kgo.InstanceID(fmt.Sprintf("static-%d", i)))
				}
				m, err := kgo.NewClient(opts...)
				if err != nil {
					t.Error(err)
					return
				}
				defer m.Close()
				polls := 0
				for ctx.Err() == nil {
					pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
					fs := m.PollRecords(pctx, 50)
					pcancel()
					mu.Lock()
					fs.EachRecord(func(r *kgo.Record) {
						seen[string(r.Key)]++
						count++
					})
					done := count >= total
					mu.Unlock()
					if err := m.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
						t.Errorf("member %d: commit: %v", i, err)
					}
					m.AllowRebalance()
					polls++
					if done || (quitAfter > 0 && polls >= quitAfter) {
						if tc.static && !done {
							// A static member that goes away without
							// leaving keeps its place until its session
							// ends; leave explicitly so the others take
							// over at once.
							leave := kmsg.NewPtrLeaveGroupRequest()
							leave.Group = "g-" + tc.name
							lm := kmsg.NewLeaveGroupRequestMember()
							lm.InstanceID = kmsg.StringPtr(fmt.Sprintf("static-%d", i))
							leave.Members = append(leave.Members, lm)
							_, _ = leave.RequestWith(ctx, m)
						}
						return
					}
				}
			}
			for i := 0; i < 3; i++ {
				wg.Add(1)
				go member(i, 0)
			}
			wg.Add(1)
			left := make(chan struct{})
			go func() {
				defer close(left)
				member(3, 5) // leaves early, forcing a rebalance
			}()
			<-left
			wg.Add(1)
			go member(4, 0) // joins late, forcing another
			wg.Wait()
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d before the deadline", count, total)
			}
			for i := 0; i < total; i++ {
				if c := seen[strconv.Itoa(i)]; c != 1 {
					t.Errorf("key %d consumed %d times", i, c)
				}
			}
		})
	}
}

// TestGroupErrors checks the coordinator's answers to requests out of turn.
func TestGroupErrors(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "ge", 1)
	ctx := testCtx(t)

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "nope", "m", 1
	resp, err := hb.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat to an unknown group: %v %v", resp, err)
	}

	// A join without a member id gets MEMBER_ID_REQUIRED and an id.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "ge", 10000, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	join.Protocols = append(join.Protocols, p)
	jr, err := join.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code || jr.MemberID == "" {
		t.Fatalf("first join: %+v %v", jr, err)
	}
	join.MemberID = jr.MemberID
	jr, err = join.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != 0 || jr.Generation != 1 || jr.LeaderID != jr.MemberID || len(jr.Members) != 1 {
		t.Fatalf("second join: %+v %v", jr, err)
	}
	// Heartbeat with the wrong generation.
	hb.Group, hb.MemberID, hb.Generation = "ge", jr.MemberID, 7
	if resp, err = hb.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat, wrong generation: %+v %v", resp, err)
	}
	// Before the leader syncs, a heartbeat is fine, a commit is not.
	hb.Generation = 1
	if resp, err = hb.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("heartbeat awaiting sync: %+v %v", resp, err)
	}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.MemberID, commit.Generation = "ge", jr.MemberID, 1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "ge"
	topic, err := e.cluster.Topic(ctx, "ge")
	if err != nil {
		t.Fatal(err)
	}
	ct.TopicID = topic.ID // v10 names topics by id
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 5
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr, err := commit.RequestWith(ctx, cl)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit awaiting sync: %+v %v", cr, err)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "ge", jr.MemberID, 1
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %+v %v", sr, err)
	}
	if cr, err = commit.RequestWith(ctx, cl); err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit when stable: %+v %v", cr, err)
	}
	// A group with a member cannot be deleted.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"ge"}
	dr, err := del.RequestWith(ctx, cl)
	if err != nil || dr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty group: %+v %v", dr, err)
	}
	// Leave, then delete.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "ge"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = jr.MemberID
	leave.Members = append(leave.Members, lm)
	if lr, err := leave.RequestWith(ctx, cl); err != nil || lr.ErrorCode != 0 || lr.Members[0].ErrorCode != 0 {
		t.Fatalf("leave: %+v %v", lr, err)
	}
	if dr, err = del.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete empty group: %+v %v", dr, err)
	}
	if dr, err = del.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete deleted group: %+v %v", dr, err)
	}
}

// TestSessionTimeout: a member that stops heartbeating is removed after
// its session timeout, and the group becomes empty.
func TestSessionTimeout(t *testing.T) {
	e := newTestEnv(t, func(o *Options) { o.GroupMinSessionTimeout = 100 * time.Millisecond })
	// Kafka 2.1 speaks JoinGroup v3: no MEMBER_ID_REQUIRED round.
	cl := newClient(t, e.addr, kgo.MaxVersions(kversion.V2_1_0()))
	ctx := testCtx(t)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = "st", 500, 500, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	join.Protocols = append(join.Protocols, p)
	jr, err := join.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != 0 {
		t.Fatalf("join: %+v %v", jr, err)
	}
	describe := func() string {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"st"}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].State
	}
	if s := describe(); s != "CompletingRebalance" {
		t.Fatalf("state %s after join", s)
	}
	// No sync and no heartbeat: the sync deadline (the rebalance timeout)
	// and then the session end the member.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := describe()
		if s == "Empty" || s == "Dead" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member never expired; state %s", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEmptyGroupKeepsProtocolType: once its last member leaves and the
// group retires to dormant, ListGroups and DescribeGroups still report the
// protocol type members joined with, as Kafka does; clients take "" for a
// simple (offsets-only) group. The type survives a gateway restart, read
// back from the group metadata record, and DeleteGroups survives one too.
func TestEmptyGroupKeepsProtocolType(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	ctx := testCtx(t)
	joinAndLeave(t, e, cl, "pt")
	checkEmptyConsumerGroup(t, cl, "pt")

	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	checkEmptyConsumerGroup(t, cl, "pt")

	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"pt"}
	if dr, err := dg.RequestWith(ctx, cl); err != nil || dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("DeleteGroups: %+v %v", dr, err)
	}
	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	for _, g := range listGroups(t, cl) {
		if g.Group == "pt" {
			t.Errorf("a deleted group is listed after a restart: %+v", g)
		}
	}
}

// listGroups asks ListGroups, retrying while the coordinator loads.
func listGroups(t *testing.T, cl *kgo.Client) []kmsg.ListGroupsResponseGroup {
	t.Helper()
	ctx := testCtx(t)
	for {
		lg, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if lg.ErrorCode == 0 {
			return lg.Groups
		}
		if lg.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("ListGroups: %v", kerr.ErrorForCode(lg.ErrorCode))
		}
		select {
		case <-ctx.Done():
			t.Fatal("the coordinator never loaded")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkEmptyConsumerGroup: ListGroups and DescribeGroups show id as an
// empty group of protocol type consumer.
func checkEmptyConsumerGroup(t *testing.T, cl *kgo.Client, id string) {
	t.Helper()
	found := false
	for _, g := range listGroups(t, cl) {
		if g.Group == id {
			found = true
			if g.ProtocolType != "consumer" || g.GroupState != "Empty" {
				t.Errorf("ListGroups: protocol type %q state %q, want consumer Empty", g.ProtocolType, g.GroupState)
			}
		}
	}
	if !found {
		t.Fatalf("ListGroups does not list the empty group %s", id)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{id}
	dr, err := dg.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.ProtocolType != "consumer" || g.State != "Empty" {
		t.Errorf("DescribeGroups: error %d protocol type %q state %q, want consumer Empty", g.ErrorCode, g.ProtocolType, g.State)
	}
}

// joinAndLeave has one member join group id as a consumer and leave, and
// waits for the empty group to retire, so that answers come from the
// dormant state rather than the live group.
func joinAndLeave(t *testing.T, e *testEnv, cl *kgo.Client, id string) {
	t.Helper()
	ctx := testCtx(t)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = id, 10000, 10000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	join.Protocols = append(join.Protocols, p)
	jr, err := join.RequestWith(ctx, cl)
	if err != nil || jr.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %+v %v", jr, err)
	}
	join.MemberID = jr.MemberID
	if jr, err = join.RequestWith(ctx, cl); err != nil || jr.ErrorCode != 0 {
		t.Fatalf("second join: %+v %v", jr, err)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = id
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = jr.MemberID
	leave.Members = append(leave.Members, lm)
	if lr, err := leave.RequestWith(ctx, cl); err != nil || lr.ErrorCode != 0 {
		t.Fatalf("leave: %+v %v", lr, err)
	}
	for retired := false; !retired; {
		c := e.gw.groups
		c.mu.Lock()
		_, active := c.mu.active[id]
		_, dormant := c.mu.dormant[id]
		c.mu.Unlock()
		retired = !active && dormant
		if !retired {
			select {
			case <-ctx.Done():
				t.Fatal("the empty group never retired")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// TestForgottenEmptyGroupStaysForgotten: the cleanup of an empty group
// with no offsets tombstones its metadata, so a restart does not bring it
// back.
func TestForgottenEmptyGroupStaysForgotten(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	joinAndLeave(t, e, cl, "gone")
	e.gw.groups.forgetEmpty(testCtx(t), time.Now().Add(emptyGroupRetention+time.Minute))
	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	for _, g := range listGroups(t, cl) {
		if g.Group == "gone" {
			t.Errorf("a forgotten group is listed after a restart: %+v", g)
		}
	}
}
