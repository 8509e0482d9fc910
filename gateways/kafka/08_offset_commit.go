package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit: v2-v10.
//
// Kafka's rules for who may commit: anyone to a group without members when
// the generation is -1 (a consumer that manages its own partitions; the
// group is created), otherwise a current member of the current generation
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID for a replaced
// static member), and not while the group waits for its leader's
// assignment (REBALANCE_IN_PROGRESS); commits during the join phase are
// allowed, so a consumer can commit what it processed before giving up
// partitions. A commit to a group that does not exist with a generation
// is ILLEGAL_GENERATION.
//
// Durability: the offsets are appended to __consumer_offsets (acks all)
// before the response; a commit that could not be written fails whole.
// Unknown topics or partitions are UNKNOWN_TOPIC_OR_PARTITION (by id, v10:
// UNKNOWN_TOPIC_ID), metadata above 4096 bytes OFFSET_METADATA_TOO_LARGE;
// the other partitions are committed. The retention time of v2-v4 is
// ignored: offsets live as long as their group.
//
// Version notes: v6 leader epoch, v7 instance id, v8 flexible, v10 topic
// ids.

func init() { regKey(8, 2, 10, (*Gateway).handleOffsetCommit) }

// maxOffsetMetadata is Kafka's offset.metadata.max.bytes default.
const maxOffsetMetadata = 4096

// stageCommit checks one partition of an offset commit (the topic lookup
// error terr, the partition, the metadata size) and adds the offset to
// offs when it passes; it returns the partition's error code, 0 if staged.
// OffsetCommit and TxnOffsetCommit validate their partitions the same way.
func stageCommit(offs map[tp]committed, t *Topic, terr error, partition int32, offset int64, epoch int32, meta *string, now int64) int16 {
	err := terr
	if err == nil {
		err = checkPartition(t, partition, -1)
	}
	md := ""
	if meta != nil {
		md = *meta
	}
	if err == nil && len(md) > maxOffsetMetadata {
		err = kerr.OffsetMetadataTooLarge
	}
	if err != nil {
		return errorCode(err)
	}
	offs[tp{t.Name, partition}] = committed{offset: offset, leaderEpoch: epoch, metadata: md, commitTs: now}
	return 0
}

func (g *Gateway) handleOffsetCommit(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	lk := g.lookup(ctx)
	now := time.Now().UnixMilli()

	offs := map[tp]committed{}
	var valid []*kmsg.OffsetCommitResponseTopicPartition
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var (
			t    *Topic
			terr error
		)
		if req.Version >= 10 {
			var tt Topic
			if tt, terr = g.cluster.TopicByID(ctx, rt.TopicID); terr == nil {
				t = &tt
			}
		} else {
			t, terr = lk.topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			epoch := int32(-1)
			if req.Version >= 6 {
				epoch = rp.LeaderEpoch
			}
			sp.ErrorCode = stageCommit(offs, t, terr, rp.Partition, rp.Offset, epoch, rp.Metadata, now)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if resp.Topics[ti].Partitions[pi].ErrorCode == 0 {
				valid = append(valid, &resp.Topics[ti].Partitions[pi])
			}
		}
	}

	reply := make(chan error, 1)
	err := g.groups.call(ctx, req.Group, req.Generation < 0, func(gr *group) {
		err := gr.commitCheck(req.MemberID, req.InstanceID, req.Generation)
		if err == nil && len(offs) > 0 {
			err = gr.commit(req.MemberID, offs)
		}
		reply <- err
	})
	if errors.Is(err, errGroupGone) {
		err = fmt.Errorf("%w: group %q has no generation %d", kerr.IllegalGeneration, req.Group, req.Generation)
	}
	if err == nil {
		select {
		case err = <-reply:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		if ErrorFor(err) == kerr.UnknownServerError || errors.Is(err, kerr.CoordinatorNotAvailable) {
			g.log.Warn("offset commit failed", "group", req.Group, "err", err)
		}
		code := errorCode(err)
		for _, sp := range valid {
			sp.ErrorCode = code
		}
	}
	return resp, nil
}
