package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareSessionSetup makes a one-partition topic that a fake broker 1
// leads once it is listed beside this gateway (node 0), with 5 records a
// share group reads from the earliest offset.
func shareSessionSetup(t *testing.T) (e *testEnv, self *kgo.Broker, id [16]byte, group string) {
	t.Helper()
	e = newTestEnv(t)
	cl := newClient(t, e.addr)
	two := append([]Broker{e.gw.self()}, brokersN(1)...)
	name := ""
	for i := range 100 {
		if n := fmt.Sprintf("share-sess-%d", i); partitionLeader(n, 0, two) == 1 {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatal("no topic name among 100 whose partition 0 broker 1 leads")
	}
	group = name + "-group"
	createTopic(t, cl, name, 1)
	setGroupConfigs(t, cl, group, "share.auto.offset.reset", "earliest")
	produceN(t, cl, name, 0, 5)
	topic, err := e.cluster.Topic(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return e, cl.Broker(0), topic.ID, group
}

// setOtherLeader lists (or unlists) fake broker 1, which leads the topic
// of shareSessionSetup while listed.
func setOtherLeader(e *testEnv, on bool) {
	e.cluster.mu.Lock()
	defer e.cluster.mu.Unlock()
	e.cluster.mu.brokers = nil
	if on {
		e.cluster.mu.brokers = append([]Broker{e.gw.self()}, brokersN(1)...)
	}
}

// shareFetchRaw sends a ShareFetch naming partition 0 of id (or nothing).
func shareFetchRaw(t *testing.T, b *kgo.Broker, id [16]byte, group string, epoch, maxWaitMs int32, name bool) *kmsg.ShareFetchResponse {
	t.Helper()
	member := "m1"
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	req.MaxWaitMillis, req.MaxRecords, req.BatchSize, req.MaxBytes = maxWaitMs, 10, 10, 1<<20
	if name {
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareFetch epoch %d: %v", epoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

// onlyPart is the one partition of a share response, or fails the test.
func onlyPart(t *testing.T, r *kmsg.ShareFetchResponse, what string) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("%s: want one partition, got topics %+v", what, r.Topics)
	}
	return r.Topics[0].Partitions[0]
}

// TestShareSessionKeepsFailedPartition: a partition named while another
// gateway leads it stays in the share session, as it does in the client's
// mirror of the session (which never names it again), and is served once
// this gateway leads it. The session once dropped it, and the client got
// nothing from it until its session reset.
func TestShareSessionKeepsFailedPartition(t *testing.T) {
	e, self, id, group := shareSessionSetup(t)
	setOtherLeader(e, true)
	p := onlyPart(t, shareFetchRaw(t, self, id, group, 0, 100, true), "fetch while broker 1 leads")
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 1 {
		t.Fatalf("fetch while broker 1 leads: %v, leader %d", kerr.ErrorForCode(p.ErrorCode), p.CurrentLeader.LeaderID)
	}
	setOtherLeader(e, false)
	p = onlyPart(t, shareFetchRaw(t, self, id, group, 1, 5000, false), "fetch once this gateway leads")
	if p.ErrorCode != 0 || len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 4 {
		t.Fatalf("fetch once this gateway leads: %v, acquired %+v", kerr.ErrorForCode(p.ErrorCode), p.AcquiredRecords)
	}
}

// TestShareSessionNothingToServeWaits: a share session with no partitions,
// or only ones it cannot serve, answers after MaxWaitMs like any fetch
// with nothing to give, not at once: its client asks again on each
// answer, and once did so in a loop. (A lower bound only: a loaded
// machine can make it later, never earlier.)
func TestShareSessionNothingToServeWaits(t *testing.T) {
	e, self, id, group := shareSessionSetup(t)
	const wait = 300 * time.Millisecond
	shareFetchRaw(t, self, id, group, 0, 0, false)
	start := time.Now()
	if r := shareFetchRaw(t, self, id, group, 1, int32(wait/time.Millisecond), false); len(r.Topics) != 0 {
		t.Fatalf("empty session: got topics %+v", r.Topics)
	}
	if took := time.Since(start); took < wait {
		t.Errorf("empty session answered after %v, before MaxWaitMs %v", took, wait)
	}

	setOtherLeader(e, true)
	// Naming it is news: the error comes back at once.
	shareFetchRaw(t, self, id, group, 2, int32(wait/time.Millisecond), true)
	start = time.Now()
	p := onlyPart(t, shareFetchRaw(t, self, id, group, 3, int32(wait/time.Millisecond), false), "session of a partition led elsewhere")
	if took := time.Since(start); took < wait {
		t.Errorf("session of a partition led elsewhere answered after %v, before MaxWaitMs %v", took, wait)
	}
	if p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("session of a partition led elsewhere: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(p.ErrorCode))
	}
}

// TestShareWaitNothingEndsOnCancel: the wait of a fetch with nothing to
// watch still ends when its connection or the gateway goes.
func TestShareWaitNothingEndsOnCancel(t *testing.T) {
	e := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.gw.waitShareData(ctx, "g", nil, make(chan struct{}), time.Now().Add(time.Hour))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("wait under a cancelled context: %v, want context.Canceled", err)
	}
}
