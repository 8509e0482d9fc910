package kafka

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// The Kafka surface of the cluster: Metadata's spread over gateways,
// OffsetForLeaderEpoch from the leader store, and partition
// reassignments, over the test harness (no kfake).

func brokersN(ids ...int32) []Broker {
	bs := make([]Broker, len(ids))
	for i, id := range ids {
		bs[i] = Broker{NodeID: id, Host: "h", Port: 9000 + id}
	}
	return bs
}

func leaders(topic string, parts int32, brokers []Broker) []int32 {
	out := make([]int32, parts)
	th := topicHash(topic)
	for p := range parts {
		out[p] = rendezvous(nil, th, p, brokers, 1)[0]
	}
	return out
}

func TestRendezvousSpreadsLeaders(t *testing.T) {
	bs := brokersN(1001, 1002, 1003)
	const parts = 600
	count := map[int32]int{}
	for _, l := range leaders("orders", parts, bs) {
		count[l]++
	}
	for _, b := range bs {
		// An even spread is 200 each; hashing leaves some slack.
		if n := count[b.NodeID]; n < parts/3*3/4 || n > parts/3*5/4 {
			t.Fatalf("gateway %d leads %d of %d partitions: %v", b.NodeID, n, parts, count)
		}
	}
}

func TestRendezvousIsStable(t *testing.T) {
	three := brokersN(1001, 1002, 1003)
	four := brokersN(1001, 1002, 1003, 1004)
	const parts = 400
	before, after := leaders("t", parts, three), leaders("t", parts, four)
	moved := 0
	for p := range before {
		if before[p] != after[p] {
			moved++
			if after[p] != 1004 {
				t.Fatalf("t/%d moved from %d to %d when only 1004 joined", p, before[p], after[p])
			}
		}
	}
	if moved == 0 || moved > parts/2 {
		t.Fatalf("%d of %d partitions moved to the new gateway", moved, parts)
	}
	// 1002 leaves: only its partitions move.
	without := leaders("t", parts, brokersN(1001, 1003))
	for p := range before {
		if before[p] != 1002 && without[p] != before[p] {
			t.Fatalf("t/%d moved from %d to %d when 1002 left", p, before[p], without[p])
		}
	}
	// Every gateway computes the same answer, whatever its broker order.
	if !slices.Equal(leaders("t", parts, three), before) {
		t.Fatal("rendezvous is not deterministic")
	}
}

func TestRendezvousReplicas(t *testing.T) {
	bs := brokersN(1, 2, 3, 4)
	th := topicHash("r")
	for p := int32(0); p < 50; p++ {
		got := rendezvous(nil, th, p, bs, 3)
		if len(got) != 3 || got[0] != rendezvous(nil, th, p, bs, 1)[0] {
			t.Fatalf("r/%d replicas %v do not start with the leader", p, got)
		}
		if s := slices.Clone(got); len(slices.Compact(slices.Sorted(slices.Values(s)))) != 3 {
			t.Fatalf("r/%d replicas %v repeat a gateway", p, got)
		}
		// The second choice is the leader when the first leaves.
		rest := slices.DeleteFunc(slices.Clone(bs), func(b Broker) bool { return b.NodeID == got[0] })
		if l := rendezvous(nil, th, p, rest, 1)[0]; l != got[1] {
			t.Fatalf("r/%d: without %d the leader is %d, want the second replica %d", p, got[0], l, got[1])
		}
	}
	if got := rendezvous(nil, th, 0, bs[:2], 3); len(got) != 2 {
		t.Fatalf("RF 3 over 2 gateways: %v", got)
	}
}

func TestMetadataShowsGatewaysAndStoreEpochs(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "md", 3)
	self := e.gw.self()
	e.cluster.mu.Lock()
	e.cluster.mu.brokers = append(brokersN(1, 2), self)
	tp := e.cluster.mu.topics["md"]
	tp.ReplicationFactor = 2
	tp.Parts = []PartitionMeta{{Leader: 11, LeaderEpoch: 4}, {Leader: NoLeader, LeaderEpoch: 2}, {Leader: 12}}
	e.cluster.mu.Unlock()

	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("md")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 3 {
		t.Fatalf("%d brokers, want the 3 gateways", len(resp.Brokers))
	}
	ps := resp.Topics[0].Partitions
	bs := append(brokersN(1, 2), self)
	slices.SortFunc(bs, func(a, b Broker) int { return int(a.NodeID - b.NodeID) })
	for _, p := range ps {
		want := rendezvous(nil, topicHash("md"), p.Partition, bs, 2)
		if !slices.Equal(p.Replicas, want) {
			t.Fatalf("md/%d replicas %v, want %v", p.Partition, p.Replicas, want)
		}
		switch p.Partition {
		case 1:
			if p.ErrorCode != kerr.LeaderNotAvailable.Code || p.Leader != -1 || len(p.ISR) != 0 {
				t.Fatalf("leaderless md/1: code %d leader %d isr %v", p.ErrorCode, p.Leader, p.ISR)
			}
		default:
			if p.ErrorCode != 0 || p.Leader != want[0] || !slices.Equal(p.ISR, want) {
				t.Fatalf("md/%d: code %d leader %d isr %v", p.Partition, p.ErrorCode, p.Leader, p.ISR)
			}
		}
		if wantEpoch := tp.Parts[p.Partition].LeaderEpoch; p.LeaderEpoch != wantEpoch {
			t.Fatalf("md/%d leader epoch %d, want the store's %d", p.Partition, p.LeaderEpoch, wantEpoch)
		}
	}
}

// epochBackend answers OffsetForLeaderEpoch from a fixed cache, as a
// leader store does, and the rest from the real store.
type epochBackend struct {
	ring.Backend
	cache []ring.EpochEnd // (epoch, start offset), ascending
	err   error
}

func (b *epochBackend) OffsetForLeaderEpoch(ctx context.Context, topic string, partition, epoch int32) (ring.EpochEnd, error) {
	if b.err != nil {
		return ring.EpochEnd{}, b.err
	}
	info, err := b.DescribePartition(ctx, topic, partition)
	if err != nil {
		return ring.EpochEnd{}, err
	}
	for i := len(b.cache) - 1; i >= 0; i-- {
		if b.cache[i].LeaderEpoch <= epoch {
			end := info.LogEndOffset
			if i+1 < len(b.cache) {
				end = b.cache[i+1].EndOffset
			}
			return ring.EpochEnd{LeaderEpoch: b.cache[i].LeaderEpoch, EndOffset: end}, nil
		}
	}
	return ring.EpochEnd{LeaderEpoch: -1, EndOffset: -1}, nil
}

func TestOffsetForLeaderEpochFromTheStore(t *testing.T) {
	eb := &epochBackend{}
	e := newTestEnv(t, func(o *Options) {
		eb.Backend = o.Backend
		o.Backend = eb
	})
	cl := newClient(t, e.addr)
	createTopic(t, cl, "ep", 1)
	produceN(t, cl, "ep", 0, 5)
	e.cluster.mu.Lock()
	e.cluster.mu.topics["ep"].Parts = []PartitionMeta{{Leader: 1, LeaderEpoch: 3}}
	e.cluster.mu.Unlock()

	ask := func(current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "ep"
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, epoch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// Straight to the gateway: the client's sharded request would
		// retry the retriable codes this test wants to see.
		kresp, err := cl.Broker(int(e.gw.self().NodeID)).Request(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
	}
	// The store's cache: epoch 1 from 0, epoch 3 from 2.
	eb.cache = []ring.EpochEnd{{LeaderEpoch: 1, EndOffset: 0}, {LeaderEpoch: 3, EndOffset: 2}}
	for _, tc := range []struct {
		current, epoch int32
		code           int16
		wantEpoch      int32
		wantEnd        int64
	}{
		{3, 1, 0, 1, 2},
		{3, 2, 0, 1, 2}, // no epoch 2: the one below it
		{3, 3, 0, 3, 5}, // the latest ends at the log end
		{-1, 3, 0, 3, 5},
		{2, 3, kerr.FencedLeaderEpoch.Code, -1, -1},
		{4, 3, kerr.UnknownLeaderEpoch.Code, -1, -1},
		{3, 0, 0, -1, -1}, // below every epoch the store knows
	} {
		got := ask(tc.current, tc.epoch)
		if got.ErrorCode != tc.code || got.LeaderEpoch != tc.wantEpoch || got.EndOffset != tc.wantEnd {
			t.Fatalf("current %d, epoch %d: code %d, epoch %d, end %d; want code %d, epoch %d, end %d",
				tc.current, tc.epoch, got.ErrorCode, got.LeaderEpoch, got.EndOffset, tc.code, tc.wantEpoch, tc.wantEnd)
		}
	}
	// A store that records no epoch at all (never led under replication):
	// the end of any epoch up to the current one is the high watermark.
	eb.cache = nil
	if got := ask(3, 2); got.ErrorCode != 0 || got.LeaderEpoch != 3 || got.EndOffset != 5 {
		t.Fatalf("without epochs: %+v", got)
	}
	if got := ask(3, math.MaxInt32); got.ErrorCode != 0 || got.LeaderEpoch != -1 || got.EndOffset != -1 {
		t.Fatalf("without epochs, above the current one: %+v", got)
	}
	// A store that no longer leads: the client refreshes its metadata.
	eb.err = fmt.Errorf("ep/0: %w", ring.ErrNotLeader)
	if got := ask(3, 3); got.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("from a store that does not lead: code %d", got.ErrorCode)
	}
}

func TestPartitionReassignments(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "ra", 2)
	ctx := testCtx(t)

	alter := func(version int16, allowRF bool, parts ...kmsg.AlterPartitionAssignmentsRequestTopic) *kmsg.AlterPartitionAssignmentsResponse {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.Version, req.AllowReplicationFactorChange, req.Topics = version, allowRF, parts
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	topic := func(name string, parts map[int32][]int32) kmsg.AlterPartitionAssignmentsRequestTopic {
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = name
		for _, p := range slices.Sorted(maps.Keys(parts)) {
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = p, parts[p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	resp := alter(1, true, topic("ra", map[int32][]int32{0: {1, 2}, 1: nil, 5: {2}}), topic("nope", map[int32][]int32{0: {2}}))
	codes := []int16{resp.Topics[0].Partitions[0].ErrorCode, resp.Topics[0].Partitions[1].ErrorCode,
		resp.Topics[0].Partitions[2].ErrorCode, resp.Topics[1].Partitions[0].ErrorCode}
	want := []int16{0, kerr.NoReassignmentInProgress.Code, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	if resp.ErrorCode != 0 || !slices.Equal(codes, want) {
		t.Fatalf("alter: top %d, partitions %v, want %v", resp.ErrorCode, codes, want)
	}
	// v1 without AllowReplicationFactorChange keeps the factor.
	resp = alter(1, false, topic("ra", map[int32][]int32{1: {1, 2}}))
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("a factor change without AllowReplicationFactorChange: code %d", c)
	}

	list := func(topics []kmsg.ListPartitionReassignmentsRequestTopic) *kmsg.ListPartitionReassignmentsResponse {
		t.Helper()
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.Topics = topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("list: %+v, %v", resp, err)
		}
		return resp
	}
	lr := list(nil)
	if len(lr.Topics) != 1 || lr.Topics[0].Topic != "ra" || len(lr.Topics[0].Partitions) != 1 {
		t.Fatalf("list all: %+v", lr.Topics)
	}
	p := lr.Topics[0].Partitions[0]
	if p.Partition != 0 || !slices.Equal(p.Replicas, []int32{1, 2}) || !slices.Equal(p.AddingReplicas, []int32{2}) || len(p.RemovingReplicas) != 0 {
		t.Fatalf("ra/0 in progress: %+v", p)
	}
	named := kmsg.NewListPartitionReassignmentsRequestTopic()
	named.Topic, named.Partitions = "ra", []int32{1}
	if lr := list([]kmsg.ListPartitionReassignmentsRequestTopic{named}); len(lr.Topics) != 0 {
		t.Fatalf("list ra/1, not being moved: %+v", lr.Topics)
	}
	// Cancel.
	if c := alter(0, true, topic("ra", map[int32][]int32{0: nil})).Topics[0].Partitions[0].ErrorCode; c != 0 {
		t.Fatalf("cancel: code %d", c)
	}
	if lr := list(nil); len(lr.Topics) != 0 {
		t.Fatalf("after the cancel: %+v", lr.Topics)
	}

	// ApiVersions advertises both keys.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []int16{45, 46} {
		if !slices.ContainsFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == key }) {
			t.Fatalf("ApiVersions does not list key %d", key)
		}
	}
}

// TestShareFetchLeaderIsMetadatas: behind several gateways, ShareFetch
// takes the partitions Metadata names the gateway the leader of and
// answers NOT_LEADER_OR_FOLLOWER, naming Metadata's leader, for the
// others. The share handlers once placed partitions with another hash
// than Metadata, so a share consumer got nothing from the partitions the
// two disagreed on: the gateway it was sent to refused them, and pointed
// it at a leader Metadata denied.
func TestShareFetchLeaderIsMetadatas(t *testing.T) {
	e := newTestEnv(t) // node 0, the fake's controller
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	const parts = 16
	createTopic(t, cl, "share-lead", parts)
	e.cluster.mu.Lock()
	e.cluster.mu.brokers = append([]Broker{e.gw.self()}, brokersN(1)...)
	e.cluster.mu.Unlock()

	mreq := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("share-lead")
	mreq.Topics = append(mreq.Topics, rt)
	// Both requests go to this gateway: broker 1 is a name only.
	self := cl.Broker(0)
	md, err := mreq.RequestWith(ctx, self)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 2 || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != parts {
		t.Fatalf("metadata: %d brokers, topics %+v", len(md.Brokers), md.Topics)
	}
	mdLeader := map[int32]int32{}
	for _, p := range md.Topics[0].Partitions {
		mdLeader[p.Partition] = p.Leader
	}

	group, member := "share-lead-group", "m1"
	sreq := kmsg.NewPtrShareFetchRequest()
	sreq.GroupID, sreq.MemberID = &group, &member
	sreq.MaxRecords, sreq.BatchSize, sreq.MaxBytes = 10, 10, 1<<20
	st := kmsg.NewShareFetchRequestTopic()
	st.TopicID = md.Topics[0].TopicID
	for p := range int32(parts) {
		sp := kmsg.NewShareFetchRequestTopicPartition()
		sp.Partition = p
		st.Partitions = append(st.Partitions, sp)
	}
	sreq.Topics = append(sreq.Topics, st)
	resp, err := sreq.RequestWith(ctx, self)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != parts {
		t.Fatalf("ShareFetch: %v, topics %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Topics)
	}
	led := 0
	for _, p := range resp.Topics[0].Partitions {
		want := mdLeader[p.Partition]
		if want == 0 {
			led++
		}
		switch {
		case p.CurrentLeader.LeaderID != want:
			t.Errorf("share-lead/%d: ShareFetch names leader %d, Metadata %d", p.Partition, p.CurrentLeader.LeaderID, want)
		case want == 0 && p.ErrorCode != 0:
			t.Errorf("share-lead/%d, led here by Metadata: ShareFetch answers %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		case want != 0 && p.ErrorCode != kerr.NotLeaderForPartition.Code:
			t.Errorf("share-lead/%d, led by %d by Metadata: ShareFetch answers %v, want NOT_LEADER_OR_FOLLOWER", p.Partition, want, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if led == 0 || led == parts {
		t.Fatalf("Metadata leads %d of %d partitions here: the test needs both kinds", led, parts)
	}
}
