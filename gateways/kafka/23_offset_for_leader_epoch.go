package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// OffsetForLeaderEpoch: v2-v4.
//
// Clients use it (KIP-320) to check, after a leader change or an
// out-of-range error, whether the log they were reading was truncated. A
// partition's leader epoch changes only when the controller moves its
// leadership, and the store never truncates acknowledged records, so the
// end offset of any epoch up to the current one is the high watermark, and
// an epoch above the current one is unknown (-1, -1, as Kafka answers). A
// stale or future current leader epoch gets FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH.
//
// Version notes: v2 current leader epoch, v3 replica id, v4 flexible.

func init() { regKey(23, 2, 4, (*Gateway).handleOffsetForLeaderEpoch) }

func (g *Gateway) handleOffsetForLeaderEpoch(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	lk := g.lookup(ctx)

	type job struct {
		topic string
		t     *Topic
		rp    *kmsg.OffsetForLeaderEpochRequestTopicPartition
		sp    *kmsg.OffsetForLeaderEpochResponseTopicPartition
	}
	var jobs []job
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &resp.Topics[ti].Partitions[pi]
			*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			t, err := lk.partition(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch)
			if err != nil {
				sp.ErrorCode = errorCode(err)
				continue
			}
			if rp.LeaderEpoch > t.LeaderEpoch(rp.Partition) {
				continue // unknown epoch: -1, -1
			}
			jobs = append(jobs, job{topic: rt.Topic, t: t, rp: rp, sp: sp})
		}
	}
	parallel(len(jobs), func(i int) {
		jb := jobs[i]
		res, err := g.backend.ListOffsets(ctx, jb.topic, jb.rp.Partition, ring.TimestampLatest)
		if err != nil {
			jb.sp.ErrorCode = errorCode(err)
			return
		}
		jb.sp.LeaderEpoch = jb.t.LeaderEpoch(jb.rp.Partition)
		jb.sp.EndOffset = res.Offset
	})
	return resp, nil
}
