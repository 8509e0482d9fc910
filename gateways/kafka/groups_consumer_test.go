package kafka

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func loads(out map[string]topicParts) map[string]int {
	l := map[string]int{}
	for id, a := range out {
		l[id] = a.size()
	}
	return l
}

// checkComplete: every partition of counts is assigned exactly once.
func checkComplete(t *testing.T, out map[string]topicParts, counts map[string]int32) {
	t.Helper()
	seen := map[partKey]string{}
	for id, a := range out {
		for topic, ps := range a {
			for _, p := range ps {
				k := partKey{topic, p}
				if o, dup := seen[k]; dup {
					t.Fatalf("%s/%d assigned to %s and %s", topic, p, o, id)
				}
				seen[k] = id
			}
		}
	}
	n := 0
	for _, c := range counts {
		n += int(c)
	}
	if len(seen) != n {
		t.Fatalf("%d partitions assigned, want %d: %v", len(seen), n, out)
	}
}

func TestAssignUniformBalancedAndSticky(t *testing.T) {
	counts := map[string]int32{"a": 7, "b": 3}
	ms := []assignMember{{id: "m1", topics: []string{"a", "b"}}, {id: "m2", topics: []string{"a", "b"}}, {id: "m3", topics: []string{"a", "b"}}}
	out := assignUniform(ms, counts)
	checkComplete(t, out, counts)
	for id, n := range loads(out) {
		if n < 3 || n > 4 {
			t.Errorf("%s has %d partitions, want 3 or 4: %v", id, n, out)
		}
	}
	// A fourth member: only what it takes moves.
	for i := range ms {
		ms[i].current = out[ms[i].id]
	}
	ms = append(ms, assignMember{id: "m4", topics: []string{"a", "b"}})
	next := assignUniform(ms, counts)
	checkComplete(t, next, counts)
	moved := 0
	for _, m := range ms[:3] {
		moved += m.current.minus(next[m.id]).size()
	}
	if got := next["m4"].size(); got != 2 && got != 3 {
		t.Errorf("new member got %d partitions, want 2 or 3", got)
	}
	if moved != next["m4"].size() {
		t.Errorf("%d partitions moved for a new member that took %d", moved, next["m4"].size())
	}
}

func TestAssignUniformHeterogeneous(t *testing.T) {
	counts := map[string]int32{"a": 4, "b": 4}
	ms := []assignMember{{id: "m1", topics: []string{"a"}}, {id: "m2", topics: []string{"a", "b"}}, {id: "m3", topics: []string{"b", "gone"}}}
	out := assignUniform(ms, counts)
	checkComplete(t, out, counts)
	if len(out["m1"]["b"]) != 0 || len(out["m3"]["a"]) != 0 {
		t.Fatalf("a member got a topic it does not subscribe to: %v", out)
	}
	for id, n := range loads(out) {
		if n < 2 || n > 3 {
			t.Errorf("%s has %d partitions: %v", id, n, out)
		}
	}
}

func TestAssignRange(t *testing.T) {
	counts := map[string]int32{"a": 5, "b": 5}
	ms := []assignMember{{id: "y", topics: []string{"a", "b"}}, {id: "x", topics: []string{"a", "b"}}}
	out := assignRange(ms, counts)
	checkComplete(t, out, counts)
	// Co-partitioned: x gets 0-2 of both, y 3-4 of both.
	if !slices.Equal(out["x"]["a"], []int32{0, 1, 2}) || !slices.Equal(out["x"]["b"], []int32{0, 1, 2}) || !slices.Equal(out["y"]["a"], []int32{3, 4}) {
		t.Fatalf("range assignment %v", out)
	}
}

// cgClient sends raw ConsumerGroupHeartbeats.
type cgClient struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	ids   map[string][16]byte
}

func (c *cgClient) beat(member string, epoch int32, subscribe []string, owned topicParts) *kmsg.ConsumerGroupHeartbeatResponse {
	c.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = c.group, member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	req.SubscribedTopicNames = subscribe
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for topic, ps := range owned {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = c.ids[topic], ps
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(testCtx(c.t), c.cl)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

func (c *cgClient) assigned(resp *kmsg.ConsumerGroupHeartbeatResponse) topicParts {
	c.t.Helper()
	if resp.ErrorCode != 0 {
		c.t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.Assignment == nil {
		return nil
	}
	out := topicParts{}
	for _, at := range resp.Assignment.Topics {
		for name, id := range c.ids {
			if id == at.TopicID {
				out[name] = at.Partitions
			}
		}
	}
	return out
}

// TestConsumerGroupReconciliation: a second member joins a one-member
// group; the first must revoke before the second gets anything, epochs
// move as Kafka's do, and the group survives a gateway restart.
func TestConsumerGroupReconciliation(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "cg", 4)
	topic, err := e.cluster.Topic(testCtx(t), "cg")
	if err != nil {
		t.Fatal(err)
	}
	c := &cgClient{t: t, cl: cl, group: "g848", ids: map[string][16]byte{"cg": topic.ID}}

	r := c.beat("A", 0, []string{"cg"}, nil)
	a := c.assigned(r)
	if r.MemberEpoch != 1 || a.size() != 4 {
		t.Fatalf("first member: epoch %d, assignment %v", r.MemberEpoch, a)
	}
	r = c.beat("B", 0, []string{"cg"}, nil)
	if b := c.assigned(r); r.MemberEpoch != 2 || b.size() != 0 {
		t.Fatalf("second member before the first revoked: epoch %d, assignment %v", r.MemberEpoch, b)
	}
	// A is told to give up two partitions at its old epoch.
	r = c.beat("A", 1, nil, nil)
	kept := c.assigned(r)
	if r.MemberEpoch != 1 || kept.size() != 2 {
		t.Fatalf("first member while revoking: epoch %d, assignment %v", r.MemberEpoch, kept)
	}
	// Until A says it revoked, B still gets nothing.
	if r = c.beat("B", 2, nil, nil); c.assigned(r).size() != 0 || r.MemberEpoch != 2 {
		t.Fatalf("second member got partitions still owned by the first: %v", c.assigned(r))
	}
	if r = c.beat("A", 1, nil, kept); r.MemberEpoch != 2 {
		t.Fatalf("first member after revoking: epoch %d, want 2", r.MemberEpoch)
	}
	r = c.beat("B", 2, nil, nil)
	b := c.assigned(r)
	if b.size() != 2 || b.intersect(kept).size() != 0 {
		t.Fatalf("second member after the revocation: %v (first kept %v)", b, kept)
	}

	// Bad input.
	if r = c.beat("A", 7, nil, nil); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("wrong epoch: %v, want FENCED_MEMBER_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	if r = c.beat("nobody", 3, nil, nil); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g848", "C", 1000
	req.ServerAssignor = ptr("sticky")
	req.SubscribedTopicNames = []string{"cg"}
	if resp, err := req.RequestWith(testCtx(t), cl); err != nil || resp.ErrorCode != kerr.UnsupportedAssignor.Code {
		t.Errorf("unknown assignor: %v %v", err, resp)
	}
	req.ServerAssignor, req.SubscribedTopicRegex = nil, ptr("cg[")
	if resp, err := req.RequestWith(testCtx(t), cl); err != nil || resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Errorf("bad regex: %v %v", err, resp)
	}
	// A classic member cannot join a consumer group with members.
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Group, jr.ProtocolType, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = "g848", "consumer", 10000, 10000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if resp, err := jr.RequestWith(testCtx(t), cl); err != nil || resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic join of a consumer group: %v %v", err, resp)
	}

	// A commit at the member's epoch is accepted, a stale one not.
	commit := func(member string, epoch int32) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = "g848", member, epoch
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic, ot.TopicID = "cg", topic.ID
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Partition, op.Offset = b["cg"][0], 42
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		resp, err := oc.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("B", 2); code != 0 {
		t.Errorf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("B", 1); code != kerr.StaleMemberEpoch.Code {
		t.Errorf("commit at an old epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(code))
	}

	// The group survives a restart of the gateway.
	cl.Close()
	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	c.cl = cl
	listGroups(t, cl) // waits for the offsets to load
	r = c.beat("B", 2, nil, b)
	if got := c.assigned(r); r.MemberEpoch != 2 || !got.equal(b) {
		t.Fatalf("after a restart: epoch %d, assignment %v, want 2 and %v", r.MemberEpoch, got, b)
	}
	dr := kmsg.NewPtrConsumerGroupDescribeRequest()
	dr.Groups = []string{"g848", "no-such-group"}
	dresp, err := dr.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	g := dresp.Groups[0]
	if g.ErrorCode != 0 || g.Epoch != 2 || len(g.Members) != 2 || g.AssignorName != "uniform" || g.State != "Stable" {
		t.Fatalf("describe after restart: %+v", g)
	}
	if dresp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("describe of a missing group: %v", kerr.ErrorForCode(dresp.Groups[1].ErrorCode))
	}
	// Leaving gives the partitions to the other member.
	if r = c.beat("A", -1, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	r = c.beat("B", 2, nil, nil)
	if got := c.assigned(r); r.MemberEpoch != 3 || got.size() != 4 {
		t.Fatalf("after the other left: epoch %d, assignment %v", r.MemberEpoch, got)
	}
}

// TestConsumerProtocolClients runs franz-go consumers with the KIP-848
// protocol (range and uniform assignors) that come and go, and checks that
// every record is consumed and committed exactly once across them.
func TestConsumerProtocolClients(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "cg-kgo", 6)
	produceN(t, cl, "cg-kgo", 0, 300)
	for _, bal := range []kgo.GroupBalancer{kgo.RangeBalancer(), kgo.CooperativeStickyBalancer()} {
		group := "kgo-848-" + bal.ProtocolName()
		first := consumeGroup(t, e.addr, group, "cg-kgo", 150, kgo.Balancers(bal), kgo.ServerSideBalancer())
		rest := consumeGroup(t, e.addr, group, "cg-kgo", 300-len(first), kgo.Balancers(bal), kgo.ServerSideBalancer())
		seen := map[string]int{}
		for _, k := range append(first, rest...) {
			seen[k]++
		}
		for i := 0; i < 300; i++ {
			if seen[strconv.Itoa(i)] != 1 {
				t.Fatalf("%s: key %d consumed %d times", group, i, seen[strconv.Itoa(i)])
			}
		}
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{group}
		resp, err := d.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("%s: %v", group, kerr.ErrorForCode(resp.Groups[0].ErrorCode))
		}
		lg := listGroups(t, cl)
		found := false
		for _, g := range lg {
			if g.Group == group {
				found = g.GroupType == "consumer"
			}
		}
		if !found {
			t.Errorf("ListGroups does not show %s as a consumer group: %v", group, fmt.Sprint(lg))
		}
	}
}

// TestConsumerGroupConfigs: the group configs set the heartbeat interval
// a consumer group's members are told.
func TestConsumerGroupConfigs(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "cgc", 1)
	setGroupConfigs(t, cl, "g-cfg", "consumer.heartbeat.interval.ms", "7000")
	c := &cgClient{t: t, cl: cl, group: "g-cfg"}
	if r := c.beat("A", 0, []string{"cgc"}, nil); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("heartbeat interval %d (%v), want the group config's 7000", r.HeartbeatIntervalMillis, kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestConsumerGroupRegexInternal: a regex subscription is matched against
// every topic, internal ones included, as Kafka's coordinator does
// (franz-go's Test848RegexBrokerResolves relies on it).
func TestConsumerGroupRegexInternal(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	listGroups(t, cl) // __consumer_offsets exists once loaded
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g-re", "A", 30000
	req.SubscribedTopicRegex = ptr("__consumer_off.*")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("join: %v %+v", err, resp)
	}
	n := 0
	for _, at := range resp.Assignment.Topics {
		n += len(at.Partitions)
	}
	if n != 4 { // OffsetsPartitions in the test gateway
		t.Fatalf("%d partitions of __consumer_offsets assigned, want 4", n)
	}
}
