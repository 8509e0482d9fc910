package kafka

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// setGroupConfigs sets group configs with IncrementalAlterConfigs.
func setGroupConfigs(t *testing.T, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	for {
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		code := resp.Resources[0].ErrorCode
		if code == kerr.CoordinatorLoadInProgress.Code {
			listGroups(t, cl) // waits for the load
			continue
		}
		if code != 0 {
			t.Fatalf("IncrementalAlterConfigs %v: %v", kvs, kerr.ErrorForCode(code))
		}
		return
	}
}

// TestShareGroupDLQ: two franz-go share consumers share one partition;
// every record is accepted once, except the rejected ones, which reach
// the group's dead-letter topic with Kafka's headers.
func TestShareGroupDLQ(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "shared", 1)
	const n, rejectBelow = 200, 20
	setGroupConfigs(t, cl, "sg", "share.auto.offset.reset", "earliest", "errors.deadletterqueue.topic.name", "shared-dlq",
		"errors.deadletterqueue.copy.record.enable", "true")

	// Bad group configs are refused, naming the problem.
	bad := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	for _, kv := range [][2]string{{"share.delivery.count.limit", "100"}, {"no.such.config", "1"}, {"errors.deadletterqueue.topic.name", "__internal"}} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{c}
		bad.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
		resp, err := bad.RequestWith(testCtx(t), cl)
		if err != nil || resp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
			t.Errorf("%s=%s: %v %+v", kv[0], kv[1], err, resp)
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	dc.Resources = append(dc.Resources, dr)
	dresp, err := dc.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		got[c.Name] = *c.Value
	}
	if got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "30000" || got["errors.deadletterqueue.topic.name"] != "shared-dlq" {
		t.Fatalf("described group configs: %v", got)
	}

	produceN(t, cl, "shared", 0, n)

	var mu sync.Mutex
	accepted := map[int]int{}
	rejected := map[int]int{}
	ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Second)
	defer cancel()
	// Polls stop once every record was seen: a member with nothing left
	// would otherwise wait in PollFetches.
	pollCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted)+len(rejected) >= n
	}
	members := make([]map[int]bool, 2)
	var wg sync.WaitGroup
	for i := range members {
		members[i] = map[int]bool{}
		c := newClient(t, e.addr, kgo.ShareGroup("sg"), kgo.ConsumeTopics("shared"), kgo.ShareMaxRecords(10))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for !done() && pollCtx.Err() == nil {
				fs := c.PollFetches(pollCtx)
				for _, r := range fs.Records() {
					k, _ := strconv.Atoi(string(r.Key))
					mu.Lock()
					members[i][k] = true
					if k < rejectBelow {
						rejected[k]++
						r.Ack(kgo.AckReject)
					} else {
						accepted[k]++
						r.Ack(kgo.AckAccept)
					}
					mu.Unlock()
				}
				if done() {
					stopPolls()
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("consumed %d accepted and %d rejected of %d before the deadline", len(accepted), len(rejected), n)
	}
	for k := 0; k < n; k++ {
		if k < rejectBelow && (rejected[k] != 1 || accepted[k] != 0) || k >= rejectBelow && (accepted[k] != 1 || rejected[k] != 0) {
			t.Errorf("key %d: accepted %d times, rejected %d times", k, accepted[k], rejected[k])
		}
	}
	if len(members[0]) == 0 || len(members[1]) == 0 {
		t.Logf("one member got every record (%d and %d): the partition was shared but not split", len(members[0]), len(members[1]))
	}

	// The DLQ holds the rejected records, headers naming where they came
	// from.
	dlq := newClient(t, e.addr, kgo.ConsumeTopics("shared-dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < rejectBelow {
		fs := dlq.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the DLQ topic has %d of %d records", len(seen), rejectBelow)
		}
		for _, r := range fs.Records() {
			h := map[string]string{}
			for _, kv := range r.Headers {
				h[kv.Key] = string(kv.Value)
			}
			if h[dlqHeaderTopic] != "shared" || h[dlqHeaderPartition] != "0" || h[dlqHeaderCount] != "1" || h[dlqHeaderGroup] != "sg" {
				t.Fatalf("DLQ record headers %v", h)
			}
			// The original record comes along (copy.record.enable): its
			// key is its offset here.
			if string(r.Key) != h[dlqHeaderOffset] {
				t.Fatalf("DLQ record key %q for offset %s", r.Key, h[dlqHeaderOffset])
			}
			seen[h[dlqHeaderOffset]] = true
		}
	}
	for o := 0; o < rejectBelow; o++ {
		if !seen[strconv.Itoa(o)] {
			t.Errorf("offset %d not in the DLQ", o)
		}
	}

	// Once the DLQ writes are done the start offset moves past them all.
	for {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = "sg"
		req.Groups = append(req.Groups, rg)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			t.Fatalf("DescribeShareGroupOffsets: %v", kerr.ErrorForCode(g.ErrorCode))
		}
		if len(g.Topics) == 1 && g.Topics[0].Partitions[0].StartOffset == n {
			if lag := g.Topics[0].Partitions[0].Lag; lag != 0 {
				t.Errorf("lag %d, want 0", lag)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("share-partition start offset never reached %d: %+v", n, g.Topics)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// shareRaw drives the share protocol by hand, for the error paths.
type shareRaw struct {
	t     *testing.T
	cl    *kgo.Client
	group string
	id    [16]byte
	epoch int32
}

func (s *shareRaw) fetch(member string, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	s.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &member, s.epoch
	req.MaxWaitMillis, req.MaxRecords, req.BatchSize, req.MaxBytes = 100, 5, 5, 1<<20
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.id
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(s.t), s.cl)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.ErrorCode == 0 {
		s.epoch++
	}
	return resp
}

func (s *shareRaw) ack(member string, first, last int64, typ int8) int16 {
	s.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &member, s.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = s.id
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(s.t), s.cl)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	s.epoch++
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestShareBadAcknowledgements: acknowledgements of records never
// acquired or already acknowledged, and stale session epochs, get Kafka's
// error codes and change nothing.
func TestShareBadAcknowledgements(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "acks", 1)
	setGroupConfigs(t, cl, "sg-raw", "share.auto.offset.reset", "earliest")
	produceN(t, cl, "acks", 0, 10)
	topic, err := e.cluster.Topic(testCtx(t), "acks")
	if err != nil {
		t.Fatal(err)
	}
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg-raw", "m1", []string{"acks"}
	hr, err := hb.RequestWith(testCtx(t), cl)
	if err != nil || hr.ErrorCode != 0 || hr.Assignment == nil || len(hr.Assignment.TopicPartitions) != 1 {
		t.Fatalf("share heartbeat: %v %+v", err, hr)
	}
	s := &shareRaw{t: t, cl: cl, group: "sg-raw", id: topic.ID}
	r := s.fetch("m1", nil)
	p := r.Topics[0].Partitions[0]
	// Batch-optimized: the whole batch of 10, past MaxRecords.
	if p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 9 || p.AcquiredRecords[0].DeliveryCount != 1 {
		t.Fatalf("first share fetch: %+v", p)
	}
	if code := s.ack("m1", 50, 50, ackAccept); code != kerr.InvalidRecordState.Code {
		t.Errorf("ack of an offset never acquired: %v", kerr.ErrorForCode(code))
	}
	if code := s.ack("m1", 0, 1, ackAccept); code != 0 {
		t.Fatalf("ack: %v", kerr.ErrorForCode(code))
	}
	if code := s.ack("m1", 1, 1, ackAccept); code != kerr.InvalidRecordState.Code {
		t.Errorf("ack twice: %v", kerr.ErrorForCode(code))
	}
	if code := s.ack("m2", 2, 2, ackAccept); code != kerr.ShareSessionNotFound.Code {
		t.Errorf("ack without a session: %v", kerr.ErrorForCode(code))
	}
	s.epoch += 5
	if code := s.ack("m1", 2, 2, ackAccept); code != kerr.InvalidShareSessionEpoch.Code {
		t.Errorf("ack at a wrong session epoch: %v", kerr.ErrorForCode(code))
	}
	s.epoch -= 5
	// Release 2-4: the next fetch gets them again, delivery count 2.
	r = s.fetch("m1", []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 2, LastOffset: 4, AcknowledgeTypes: []int8{ackRelease}}})
	p = r.Topics[0].Partitions[0]
	if p.AcknowledgeErrorCode != 0 || len(p.AcquiredRecords) == 0 || p.AcquiredRecords[0].FirstOffset != 2 || p.AcquiredRecords[0].DeliveryCount != 2 {
		t.Fatalf("after a release: %+v", p)
	}
	// Nothing left to hand out: the partition answers with empty records,
	// never null (Records is not nullable in ShareFetch v1+: Java's
	// client fails on a null).
	r = s.fetch("m1", nil)
	if p = r.Topics[0].Partitions[0]; len(p.AcquiredRecords) != 0 || p.Records == nil {
		t.Fatalf("a fetch with nothing to acquire: acquired %v, records nil: %v", p.AcquiredRecords, p.Records == nil)
	}
	// A classic join of a share group is refused.
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Group, jr.ProtocolType, jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = "sg-raw", "consumer", 10000, 10000
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	if resp, err := jr.RequestWith(testCtx(t), cl); err != nil || resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("classic join of a share group: %v %v", err, resp)
	}
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{"sg-raw"}
	dresp, err := d.RequestWith(testCtx(t), cl)
	if err != nil || dresp.Groups[0].ErrorCode != 0 || len(dresp.Groups[0].Members) != 1 || dresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("ShareGroupDescribe: %v %+v", err, dresp)
	}
}

// TestShareReadCommitted: with share.isolation.level=read_committed a
// share group gets the plain records and the committed transactions' ones
// only: an aborted transaction's records are skipped (never acquired,
// never dead letters), and an open one waits until it commits. A group at
// the default read_uncommitted gets them all.
func TestShareReadCommitted(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "share-rc", 1)
	topic, err := e.cluster.Topic(ctx, "share-rc")
	if err != nil {
		t.Fatal(err)
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		if _, err := e.backend.WriteTxnMarker(ctx, ring.TxnMarker{Topic: "share-rc", Partition: 0, ProducerID: pid, Commit: commit}); err != nil {
			t.Fatal(err)
		}
	}
	// 0 plain; 1-2 aborted (marker 3); 4 committed (marker 5); 6 open.
	produceN(t, cl, "share-rc", 0, 1)
	if err := produceRaw(t, e.backend, "share-rc", txnBatch(100, 0, 0, "a1", "a2")); err != nil {
		t.Fatal(err)
	}
	marker(100, false)
	if err := produceRaw(t, e.backend, "share-rc", txnBatch(101, 0, 0, "c1")); err != nil {
		t.Fatal(err)
	}
	marker(101, true)
	if err := produceRaw(t, e.backend, "share-rc", txnBatch(102, 0, 0, "o1")); err != nil {
		t.Fatal(err)
	}

	acquire := func(group string) (s *shareRaw, got []int64) {
		t.Helper()
		setGroupConfigs(t, cl, group, "share.auto.offset.reset", "earliest")
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, "m1", []string{"share-rc"}
		if hr, err := hb.RequestWith(ctx, cl); err != nil || hr.ErrorCode != 0 {
			t.Fatalf("share heartbeat: %v %+v", err, hr)
		}
		s = &shareRaw{t: t, cl: cl, group: group, id: topic.ID}
		return s, s.more()
	}
	rc := "sg-rc"
	setGroupConfigs(t, cl, rc, "share.isolation.level", "read_committed")
	s, got := acquire(rc)
	if !slices.Equal(got, []int64{0, 4}) {
		t.Fatalf("read_committed acquired %v, want [0 4]", got)
	}
	marker(102, true)
	if got := s.more(); !slices.Equal(got, []int64{6}) {
		t.Fatalf("after the commit read_committed acquired %v, want [6]", got)
	}
	if _, got := acquire("sg-ru"); !slices.Equal(got, []int64{0, 1, 2, 4, 6}) {
		t.Fatalf("read_uncommitted acquired %v, want [0 1 2 4 6]", got)
	}
}

// more fetches until a fetch acquires nothing and returns the offsets
// acquired, accepting them.
func (s *shareRaw) more() []int64 {
	s.t.Helper()
	var got []int64
	var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	for range 10 {
		p := s.fetch("m1", acks).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			s.t.Fatalf("share fetch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		acks = nil
		for _, a := range p.AcquiredRecords {
			for o := a.FirstOffset; o <= a.LastOffset; o++ {
				got = append(got, o)
			}
			acks = append(acks, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, AcknowledgeTypes: []int8{ackAccept}})
		}
		if len(acks) == 0 {
			return got
		}
	}
	s.t.Fatal("share fetches kept acquiring")
	return nil
}

// TestShareStateSurvivesRestart: the in-flight window is written with the
// SPSO, so a restarted gateway does not deliver again the records
// accepted past the SPSO, and delivery counts carry on (a record acquired
// when the gateway stopped comes back with its delivery counted).
func TestShareStateSurvivesRestart(t *testing.T) {
	e := newTestEnv(t)
	ctx := testCtx(t)
	cl := newClient(t, e.addr)
	createTopic(t, cl, "share-durable", 1)
	setGroupConfigs(t, cl, "sg-durable", "share.auto.offset.reset", "earliest")
	produceN(t, cl, "share-durable", 0, 10)
	topic, err := e.cluster.Topic(ctx, "share-durable")
	if err != nil {
		t.Fatal(err)
	}
	join := func(cl *kgo.Client) *shareRaw {
		t.Helper()
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "sg-durable", "m1", []string{"share-durable"}
		// A restarted gateway answers COORDINATOR_LOAD_IN_PROGRESS, as
		// Kafka does, until it has read __consumer_offsets; clients
		// retry it (franz-go does not retry a share heartbeat for us).
		var hr *kmsg.ShareGroupHeartbeatResponse
		waitFor(t, "the share-group coordinator to load", func() bool {
			var err error
			if hr, err = hb.RequestWith(ctx, cl); err != nil {
				t.Fatalf("share heartbeat: %v", err)
			}
			return hr.ErrorCode != kerr.CoordinatorLoadInProgress.Code
		})
		if hr.ErrorCode != 0 {
			t.Fatalf("share heartbeat: %+v", hr)
		}
		return &shareRaw{t: t, cl: cl, group: "sg-durable", id: topic.ID}
	}
	s := join(cl)
	p := s.fetch("m1", nil).Topics[0].Partitions[0]
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].LastOffset != 9 {
		t.Fatalf("first fetch acquired %+v", p.AcquiredRecords)
	}
	// Accept 0-2 and 5-6; 3-4 and 7-9 stay acquired.
	for _, r := range [][2]int64{{0, 2}, {5, 6}} {
		if code := s.ack("m1", r[0], r[1], ackAccept); code != 0 {
			t.Fatalf("ack %v: %v", r, kerr.ErrorForCode(code))
		}
	}
	e.gw.shares.persist(ctx)
	e.stopGateway()
	e.start()
	cl = newClient(t, e.addr)
	var got []int64
	waitFor(t, "the restarted gateway to serve the share group", func() bool {
		s = join(cl)
		p = s.fetch("m1", nil).Topics[0].Partitions[0]
		return p.ErrorCode == 0 && len(p.AcquiredRecords) > 0
	})
	for _, a := range p.AcquiredRecords {
		for o := a.FirstOffset; o <= a.LastOffset; o++ {
			got = append(got, o)
		}
		if a.DeliveryCount != 2 {
			t.Errorf("records %d-%d delivered again with count %d, want 2", a.FirstOffset, a.LastOffset, a.DeliveryCount)
		}
	}
	if !slices.Equal(got, []int64{3, 4, 7, 8, 9}) {
		t.Fatalf("after the restart acquired %v, want [3 4 7 8 9]", got)
	}
}
