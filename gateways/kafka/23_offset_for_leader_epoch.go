package kafka

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// OffsetForLeaderEpoch: v2-v4.
//
// Clients use it (KIP-320) to check, after a leader change or an
// out-of-range error, whether the log they were reading was truncated.
// The client's current leader epoch is checked first against the
// gateway's metadata, as Kafka's leader checks it: an older one gets
// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH. The answer then
// comes from the leader store's leader-epoch cache, through the ring: the
// largest epoch at or below the one asked for and the offset where it
// ended (the log end for the latest), or -1, -1 when the store knows no
// such epoch.
//
// A partition whose store records no epoch at all has never been led
// under replication (serve's single store, or data written before it):
// its log was never truncated by an election, so the end offset of any
// epoch up to the current one is the high watermark, and that is the
// answer. Above the current epoch it is -1, -1 as for Kafka.
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
			jobs = append(jobs, job{topic: rt.Topic, t: t, rp: rp, sp: sp})
		}
	}
	parallel(len(jobs), func(i int) {
		jb := jobs[i]
		end, err := g.epochEnd(ctx, jb.topic, jb.t, jb.rp.Partition, jb.rp.LeaderEpoch)
		if err != nil {
			jb.sp.ErrorCode = errorCode(err)
			return
		}
		jb.sp.LeaderEpoch, jb.sp.EndOffset = end.LeaderEpoch, end.EndOffset
	})
	return resp, nil
}

// epochEnd asks the leader store; see the comment at the top for a store
// that records no epochs.
func (g *Gateway) epochEnd(ctx context.Context, topic string, t *Topic, partition, epoch int32) (ring.EpochEnd, error) {
	none := ring.EpochEnd{LeaderEpoch: -1, EndOffset: -1}
	end, err := g.backend.OffsetForLeaderEpoch(ctx, topic, partition, epoch)
	if err != nil || end != none {
		return end, err
	}
	latest, err := g.backend.OffsetForLeaderEpoch(ctx, topic, partition, math.MaxInt32)
	if err != nil || latest != none {
		return end, err
	}
	current := t.LeaderEpoch(partition)
	if epoch > current {
		return none, nil
	}
	res, err := g.backend.ListOffsets(ctx, topic, partition, ring.TimestampLatest)
	if err != nil {
		return ring.EpochEnd{}, err
	}
	return ring.EpochEnd{LeaderEpoch: current, EndOffset: res.Offset}, nil
}
