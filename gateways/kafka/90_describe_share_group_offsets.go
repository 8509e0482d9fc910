package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeShareGroupOffsets: v0-v1 (KIP-932), as Kafka 4.4 serves it.
//
// The share-partition start offsets (SPSO) of share groups, for the named
// topics and partitions or (null topics) every partition the group has
// state for, with (v1) the lag: the high watermark less the SPSO, records
// in flight included. A partition without state answers start offset -1.
// A group that is not a share group (nor has share state) is
// GROUP_ID_NOT_FOUND. The offsets are this gateway's: the one leading the
// partition and coordinating the group in a one-gateway deployment; with
// several gateways, what the coordinator read back from
// __consumer_offsets, written about once a second by the partition's
// gateway.
//
// Version notes: v1 lag.

func init() { regKey(90, 0, 1, (*Gateway).handleDescribeShareGroupOffsets) }

// shareGroupKnown reports whether id is a share group here: a live share
// group, a dormant one, or a group with share state.
func (g *Gateway) shareGroupKnown(ctx context.Context, id string) error {
	isShare, err := awaitGroup(ctx, g, id, false, func(gr *group, reply chan<- bool) {
		reply <- gr.isShare()
	})
	if groupGone(err) || (err == nil && !isShare) {
		if len(g.shares.topicsOf(id)) > 0 {
			return nil
		}
		return fmt.Errorf("%w: %s is not a share group", kerr.GroupIDNotFound, id)
	}
	return err
}

func (g *Gateway) handleDescribeShareGroupOffsets(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	lk := g.lookup(ctx)
	for _, rg := range req.Groups {
		sg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		sg.GroupID = rg.GroupID
		if err := g.shareGroupKnown(ctx, rg.GroupID); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			sg.ErrorCode, sg.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		want := map[string][]int32{}
		var names []string
		if rg.Topics == nil {
			want = g.shares.topicsOf(rg.GroupID)
			for t := range want {
				names = append(names, t)
			}
			slices.Sort(names)
		} else {
			for _, rt := range rg.Topics {
				want[rt.Topic] = rt.Partitions
				names = append(names, rt.Topic)
			}
		}
		for _, name := range names {
			st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			st.Topic = name
			t, terr := lk.topic(name)
			if terr == nil {
				st.TopicID = t.ID
			}
			for _, p := range want[name] {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition, sp.StartOffset, sp.LeaderEpoch, sp.Lag = p, -1, -1, -1
				err := terr
				if err == nil {
					err = checkPartition(t, p, -1)
				}
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = errorCode(err), errorMessage(err)
					st.Partitions = append(st.Partitions, sp)
					continue
				}
				sp.LeaderEpoch = t.LeaderEpoch(p)
				if start, ok := g.shares.startOffset(shareKey{rg.GroupID, name, p}); ok {
					sp.StartOffset = start
					if info, err := g.backend.DescribePartition(ctx, name, p); err == nil {
						sp.Lag = max(info.HighWatermark-start, 0)
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			sg.Topics = append(sg.Topics, st)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp, nil
}
