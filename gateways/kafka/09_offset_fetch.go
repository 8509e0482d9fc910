package kafka

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch: v1-v10.
//
// Answers a group's committed offsets from the coordinator's memory, which
// mirrors __consumer_offsets. A partition without a commit (or a group that
// does not exist) answers offset -1 and no error, as Kafka does. A null
// topic list (v2+) asks for every committed partition of the group. v8+
// asks for several groups at once; v10 names topics by id. With
// RequireStable (v7+) a partition whose offsets a transaction not ended yet
// committed answers UNSTABLE_OFFSET_COMMIT, and the client asks again
// (txn_stable.go). While the coordinator loads, the answer is
// COORDINATOR_LOAD_IN_PROGRESS.
//
// Version notes: v2 top-level error and all topics, v3 throttle, v5 leader
// epoch, v6 flexible, v7 require stable, v8 groups, v9 member id and epoch
// (for KIP-848 groups, ignored for classic ones), v10 topic ids.

func init() { regKey(9, 1, 10, (*Gateway).handleOffsetFetch) }

// fetchedTopic is one topic of a group's answer.
type fetchedTopic struct {
	name  string
	id    [16]byte
	parts []kmsg.OffsetFetchResponseGroupTopicPartition
}

func (g *Gateway) handleOffsetFetch(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)

	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if req.Topics != nil {
			topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				gt := kmsg.NewOffsetFetchRequestGroupTopic()
				gt.Topic, gt.Partitions = t.Topic, t.Partitions
				topics = append(topics, gt)
			}
		}
		res, err := g.fetchOffsets(ctx, req.Group, topics, false, req.Version >= 7 && req.RequireStable)
		if err != nil && req.Version >= 2 {
			resp.ErrorCode = errorCode(err)
		}
		for _, ft := range res {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = ft.name
			for _, p := range ft.parts {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				if err != nil {
					rp.ErrorCode = errorCode(err)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}

	for _, rg := range req.Groups {
		sg := kmsg.NewOffsetFetchResponseGroup()
		sg.Group = rg.Group
		res, err := g.fetchOffsets(ctx, rg.Group, rg.Topics, req.Version >= 10, req.RequireStable)
		if err != nil {
			sg.ErrorCode = errorCode(err)
		}
		for _, ft := range res {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.Topic, st.TopicID, st.Partitions = ft.name, ft.id, ft.parts
			sg.Topics = append(sg.Topics, st)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp, nil
}

// fetchOffsets answers one group. topics nil means all committed ones.
func (g *Gateway) fetchOffsets(ctx context.Context, groupID string, topics []kmsg.OffsetFetchRequestGroupTopic, byID, requireStable bool) ([]fetchedTopic, error) {
	// Before reading the offsets: a transaction seen ended here has
	// applied its offsets to __consumer_offsets, which catchUpLive reads.
	var unstable map[tp]bool
	if requireStable {
		var err error
		if unstable, err = g.unstableParts(ctx, groupID); err != nil {
			return nil, err
		}
	}
	// A transaction coordinated by another gateway may have committed
	// offsets for a live group here since we last read its partition.
	if err := g.groups.catchUpLive(ctx, groupID); err != nil {
		return nil, err
	}
	reply := make(chan map[tp]committed, 1)
	err := g.groups.call(ctx, groupID, false, func(gr *group) {
		snap := make(map[tp]committed, len(gr.offsets))
		for k, v := range gr.offsets {
			snap[k] = v
		}
		reply <- snap
	})
	var offs map[tp]committed
	switch {
	case errors.Is(err, errGroupGone):
		err = nil
	case err == nil:
		select {
		case offs = <-reply:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	partition := func(topic string, p int32, c committed, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
		empty := ""
		rp.Metadata = &empty
		if unstable[tp{topic, p}] {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if ok {
			md := c.metadata
			rp.Offset, rp.LeaderEpoch, rp.Metadata = c.offset, c.leaderEpoch, &md
		}
		return rp
	}

	var out []fetchedTopic
	if topics == nil {
		if err != nil {
			return nil, err
		}
		byTopic := map[string][]int32{}
		for k := range offs {
			byTopic[k.topic] = append(byTopic[k.topic], k.partition)
		}
		names := make([]string, 0, len(byTopic))
		for n := range byTopic {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			ft := fetchedTopic{name: n}
			if byID {
				t, terr := g.cluster.Topic(ctx, n)
				if terr != nil {
					continue // deleted: it has no id to be named by
				}
				ft.id = t.ID
			}
			ps := byTopic[n]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			for _, p := range ps {
				ft.parts = append(ft.parts, partition(n, p, offs[tp{n, p}], true))
			}
			out = append(out, ft)
		}
		return out, nil
	}
	for _, rt := range topics {
		ft := fetchedTopic{name: rt.Topic, id: rt.TopicID}
		name := rt.Topic
		var terr error
		if byID {
			var t Topic
			if t, terr = g.cluster.TopicByID(ctx, rt.TopicID); terr == nil {
				name = t.Name
			}
		}
		for _, p := range rt.Partitions {
			c, ok := offs[tp{name, p}]
			rp := partition(name, p, c, ok && terr == nil)
			if terr != nil {
				rp.ErrorCode = errorCode(terr)
			}
			ft.parts = append(ft.parts, rp)
		}
		out = append(out, ft)
	}
	return out, err
}
