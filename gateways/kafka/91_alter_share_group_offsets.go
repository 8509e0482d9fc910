package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterShareGroupOffsets: v0 (KIP-932), as Kafka 4.4 serves it.
//
// Sets the share-partition start offsets of a share group with no
// members (NON_EMPTY_GROUP otherwise), creating the empty share group
// when it does not exist. The new SPSO is written to __consumer_offsets
// before the answer, and a share partition open on this gateway starts
// over from it, forgetting its in-flight records. An offset outside the
// partition's log is OFFSET_OUT_OF_RANGE; a group id of another kind of
// group, GROUP_ID_NOT_FOUND.

func init() { regKey(91, 0, 0, (*Gateway).handleAlterShareGroupOffsets) }

// emptyShareGroup makes sure id is a share group with no members,
// creating the empty share group when there is none: altering and
// deleting share offsets both need that first.
func (g *Gateway) emptyShareGroup(ctx context.Context, id string) error {
	res, err := awaitGroup(ctx, g, id, true, func(gr *group, reply chan<- error) {
		reply <- gr.ensureEmptyShare()
	})
	if err == nil {
		err = res
	}
	return err
}

func (g *Gateway) handleAlterShareGroupOffsets(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if err := g.emptyShareGroup(ctx, req.GroupID); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	lk := g.lookup(ctx)
	for _, rt := range req.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, terr := lk.topic(rt.Topic)
		if terr == nil {
			st.TopicID = t.ID
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			err := terr
			if err == nil {
				err = checkPartition(t, rp.Partition, -1)
			}
			if err == nil {
				info, derr := g.backend.DescribePartition(ctx, rt.Topic, rp.Partition)
				switch {
				case derr != nil:
					err = derr
				case rp.StartOffset < info.LogStartOffset || rp.StartOffset > info.HighWatermark:
					err = fmt.Errorf("%w: %d is outside [%d, %d]", kerr.OffsetOutOfRange, rp.StartOffset, info.LogStartOffset, info.HighWatermark)
				}
			}
			if err == nil {
				err = g.shares.reset(ctx, shareKey{req.GroupID, rt.Topic, rp.Partition}, rp.StartOffset)
			}
			if err != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
