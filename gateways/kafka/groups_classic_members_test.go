package kafka

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

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

	var mu sync.Mutex
	seen := map[string]int{}
	// poll takes one poll's records, commits them before a rebalance may
	// move their partitions (BlockRebalanceOnPoll), and counts them.
	late := make([]int, 2) // records of the second half, by member
	poll := func(ctx context.Context, cl *kgo.Client, who int) int {
		fs := cl.PollFetches(ctx)
		defer cl.AllowRebalance()
		if ctx.Err() != nil {
			return 0
		}
		if err := fs.Err(); err != nil {
			t.Errorf("poll: %v", err)
			return 0
		}
		n := 0
		mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Key)]++
			n++
			if k, _ := strconv.Atoi(string(r.Key)); k >= total/2 {
				late[who]++
			}
		})
		mu.Unlock()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("commit: %v", err)
		}
		return n
	}
	member := func(opts ...kgo.Opt) *kgo.Client {
		return newClient(t, e.addr, append([]kgo.Opt{
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.FetchMaxPartitionBytes(512), kgo.HeartbeatInterval(200 * time.Millisecond),
		}, opts...)...)
	}
	ctx := testCtx(t)

	classic := member(kgo.Balancers(kgo.CooperativeStickyBalancer()))
	for got := 0; got < 50; {
		got += poll(ctx, classic, 0)
	}
	if lg := listGroups(t, admin); !hasGroup(lg, group, "classic") {
		t.Fatalf("before the upgrade ListGroups shows %v", lg)
	}

	modern := member(kgo.ServerSideBalancer())
	// Both members own partitions, none both, all six between them.
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0]
	}
	split := func(g kmsg.ConsumerGroupDescribeResponseGroup) bool {
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
		for p := int32(0); p < 6; p++ {
			if owned[p] != 1 {
				return false
			}
		}
		return types[0] && types[1]
	}
	// Both poll while the group converts and rebalances: a member that
	// does not poll holds up its own revocation (BlockRebalanceOnPoll).
	pctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, cl := range []*kgo.Client{classic, modern} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pctx.Err() == nil {
				pp, cancel := context.WithTimeout(pctx, 200*time.Millisecond)
				poll(pp, cl, i)
				cancel()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !split(describe()) {
		if time.Now().After(deadline) {
			stop()
			wg.Wait()
			t.Fatalf("the group never split its partitions between a classic and a consumer member: %+v", describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if lg := listGroups(t, admin); !hasGroup(lg, group, "consumer") {
		t.Errorf("after the upgrade ListGroups shows %v", lg)
	}
	produceN(t, admin, topic, total/2, total/2)
	for done := false; !done; {
		mu.Lock()
		done = len(seen) == total
		mu.Unlock()
		if !done && time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	wg.Wait()
	for i := 0; i < total; i++ {
		if n := seen[strconv.Itoa(i)]; n != 1 {
			t.Errorf("key %d consumed %d times", i, n)
		}
	}
	if late[0] == 0 || late[1] == 0 {
		t.Errorf("records produced after the split: classic member consumed %d, consumer-protocol member %d", late[0], late[1])
	}
	t.Logf("records produced after the split: classic member consumed %d, consumer-protocol member %d", late[0], late[1])
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
