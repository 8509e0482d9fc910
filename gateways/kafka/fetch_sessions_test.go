package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessions drives KIP-227 by hand: a full fetch opens a session,
// incremental fetches answer only partitions with news, forgotten
// partitions drop out, and bad session ids or epochs get their errors.
func TestFetchSessions(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	ctx := testCtx(t)
	createTopic(t, cl, "fs", 2)
	topic, err := e.cluster.Topic(ctx, "fs")
	if err != nil {
		t.Fatal(err)
	}
	pcl := newClient(t, e.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTo := func(p int32) {
		t.Helper()
		if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "fs", Partition: p, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceTo(0)
	produceTo(1)

	fetch := func(id, epoch int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SessionID, req.SessionEpoch, req.MaxWaitMillis, req.MaxBytes = id, epoch, 0, 1<<20
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "fs", topic.ID
			for p, off := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(forget) > 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID, ft.Partitions = "fs", topic.ID, forget
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	returned := func(resp *kmsg.FetchResponse) map[int32]int {
		out := map[int32]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = len(rp.RecordBatches)
			}
		}
		return out
	}

	full := fetch(0, 0, map[int32]int64{0: 0, 1: 0}, nil)
	if full.SessionID == 0 || full.ErrorCode != 0 {
		t.Fatalf("full fetch did not open a session: %+v", full)
	}
	if r := returned(full); len(r) != 2 || r[0] == 0 || r[1] == 0 {
		t.Fatalf("full fetch returned %v", r)
	}
	id := full.SessionID

	// Both partitions read to their end: nothing is news.
	if r := returned(fetch(id, 1, map[int32]int64{0: 1, 1: 1}, nil)); len(r) != 0 {
		t.Fatalf("incremental fetch with no news returned %v", r)
	}
	produceTo(1)
	if r := returned(fetch(id, 2, nil, nil)); len(r) != 1 || r[1] == 0 {
		t.Fatalf("incremental fetch after a produce to 1 returned %v", r)
	}
	// Forget partition 1; news there no longer shows.
	if r := returned(fetch(id, 3, map[int32]int64{1: 2}, []int32{1})); len(r) != 0 {
		t.Fatalf("fetch forgetting 1 returned %v", r)
	}
	produceTo(1)
	if r := returned(fetch(id, 4, nil, nil)); len(r) != 0 {
		t.Fatalf("forgotten partition came back: %v", r)
	}
	// A replayed epoch, an unknown session.
	if resp := fetch(id, 4, nil, nil); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("replayed epoch: error %d", resp.ErrorCode)
	}
	if resp := fetch(id+1000, 1, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown session: error %d", resp.ErrorCode)
	}
	// Epoch -1 closes the session and fetches without one.
	if resp := fetch(id, -1, map[int32]int64{0: 0}, nil); resp.ErrorCode != 0 || resp.SessionID != 0 || len(returned(resp)) != 1 {
		t.Fatalf("sessionless fetch: %+v", resp)
	}
	if resp := fetch(id, 5, nil, nil); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session still served: error %d", resp.ErrorCode)
	}
}
