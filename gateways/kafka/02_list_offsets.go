package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// ListOffsets: v1-v10.
//
// Answers per partition from the store: -2 earliest (the log start
// offset), -1 latest (the high watermark), -3 the record with the largest
// timestamp (v7+), -4 the first offset still on local disk (v8+, KIP-405),
// -5 the last offset in the cold tier (v9+), or a timestamp in ms: the
// first offset whose batch holds a timestamp at or after it (offset -1,
// timestamp -1 if there is none, as Kafka answers). The store answers per
// batch, so a time lookup returns the batch's base offset. Latest under
// read_committed (v2+ isolation level 1) is the last stable offset, below
// the high watermark while a transaction is open. Partitions are looked up
// concurrently.
//
// Version notes: v2 isolation level, v4 current leader epoch, v6 flexible,
// v7 max timestamp, v8 earliest local, v9 latest tiered, v10 timeout.

func init() { regKey(2, 1, 10, (*Gateway).handleListOffsets) }

func (g *Gateway) handleListOffsets(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	lk := g.lookup(ctx)

	type job struct {
		topic string
		rp    *kmsg.ListOffsetsRequestTopicPartition
		sp    *kmsg.ListOffsetsResponseTopicPartition
		t     *Topic
	}
	var jobs []job
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
	}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sp := &resp.Topics[ti].Partitions[pi]
			*sp = kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			t, err := lk.partition(rt.Topic, rp.Partition, rp.CurrentLeaderEpoch)
			if err == nil && !timestampServed(rp.Timestamp, req.Version) {
				err = kerr.UnsupportedVersion
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				continue
			}
			jobs = append(jobs, job{topic: rt.Topic, rp: rp, sp: sp, t: t})
		}
	}
	parallel(len(jobs), func(i int) {
		jb := jobs[i]
		res, err := g.backend.ListOffsets(ctx, jb.topic, jb.rp.Partition, jb.rp.Timestamp)
		if err == nil && req.IsolationLevel == 1 && jb.rp.Timestamp == ring.TimestampLatest {
			res.Offset, err = g.lastStable(ctx, jb.topic, jb.rp.Partition, res.Offset)
		}
		if err != nil {
			jb.sp.ErrorCode = errorCode(err)
			return
		}
		jb.sp.Offset, jb.sp.Timestamp = res.Offset, res.Timestamp
		if res.Offset >= 0 {
			jb.sp.LeaderEpoch = jb.t.LeaderEpoch(jb.rp.Partition)
		}
	})
	return resp, nil
}

// timestampServed reports whether a special timestamp exists at version.
func timestampServed(ts int64, version int16) bool {
	switch ts {
	case ring.TimestampMaxTimestamp:
		return version >= 7
	case ring.TimestampEarliestLocal:
		return version >= 8
	case ring.TimestampLatestTiered:
		return version >= 9
	}
	return ts >= -2
}
