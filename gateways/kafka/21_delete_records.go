package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords: v0-v2.
//
// Moves each partition's log start offset up to the requested offset (-1:
// the high watermark) and answers the new low watermark. Moving backwards
// is a no-op that answers the current one; an offset past the high
// watermark is OFFSET_OUT_OF_RANGE. Whole segments below the new start are
// deleted by the store's retention pass. Partitions are handled
// concurrently; the request timeout is not needed, since the store applies
// the change before answering.
//
// Version notes: v2 flexible.

func init() { regKey(21, 0, 2, (*Gateway).handleDeleteRecords) }

func (g *Gateway) handleDeleteRecords(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	lk := g.lookup(ctx)

	type job struct {
		topic  string
		offset int64
		sp     *kmsg.DeleteRecordsResponseTopicPartition
	}
	var jobs []job
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(rt.Partitions))
		resp.Topics = append(resp.Topics, st)
	}
	for ti, rt := range req.Topics {
		for pi, rp := range rt.Partitions {
			sp := &resp.Topics[ti].Partitions[pi]
			*sp = kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			t, err := lk.partition(rt.Topic, rp.Partition, -1)
			if err == nil && t.Internal {
				err = errInternalTopic(t.Name)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				continue
			}
			jobs = append(jobs, job{topic: rt.Topic, offset: rp.Offset, sp: sp})
		}
	}
	parallel(len(jobs), func(i int) {
		jb := jobs[i]
		lso, err := g.backend.DeleteRecords(ctx, jb.topic, jb.sp.Partition, jb.offset)
		if err != nil {
			jb.sp.ErrorCode = errorCode(err)
			return
		}
		jb.sp.LowWatermark = lso
	})
	return resp, nil
}
