package kafka

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// ACL rules of the share-group keys (KIP-932), as Kafka's KafkaApis
// applies them: a share group is read as a consumer group is (READ on the
// group to heartbeat, fetch, acknowledge and alter offsets, DESCRIBE to
// describe, DELETE to delete offsets) and its topics need READ to be
// fetched, acknowledged or have offsets set (DESCRIBE to be described or
// subscribed to). A denied group fails the request with
// GROUP_AUTHORIZATION_FAILED; a denied topic answers
// TOPIC_AUTHORIZATION_FAILED for its own partitions while the others are
// served.

// authorizedShare serves rc when it is a share-group key, reporting false
// for any other key.
func (g *Gateway) authorizedShare(a authorizer, rc *reqCtx, name func([16]byte) string, serve func() (kmsg.Response, error)) (resp kmsg.Response, handled bool, err error) {
	groupOf := func(id *string) string {
		if id == nil {
			return ""
		}
		return *id
	}
	switch req := rc.req.(type) {
	case *kmsg.ShareGroupHeartbeatRequest:
		if !a.group(auth.OpRead, req.GroupID) {
			resp, err = gate(false, req, codeGroup, serve)
			return resp, true, err
		}
		for _, t := range req.SubscribedTopicNames {
			if !a.topic(auth.OpDescribe, t) {
				resp, err = gate(false, req, codeTopic, serve)
				return resp, true, err
			}
		}
		resp, err = serve()
		return resp, true, err

	case *kmsg.ShareGroupDescribeRequest:
		var denied []string
		req.GroupIDs, denied = split(req.GroupIDs, func(gr string) bool { return a.group(auth.OpDescribe, gr) })
		resp, err = serve()
		if r, ok := resp.(*kmsg.ShareGroupDescribeResponse); ok && err == nil {
			for _, gr := range denied {
				d := kmsg.NewShareGroupDescribeResponseGroup()
				d.GroupID, d.ErrorCode = gr, codeGroup
				r.Groups = append(r.Groups, d)
			}
		}
		return resp, true, err

	case *kmsg.ShareFetchRequest:
		if req.GroupID != nil && !a.group(auth.OpRead, groupOf(req.GroupID)) {
			resp, err = gate(false, req, codeGroup, serve)
			return resp, true, err
		}
		var denied []kmsg.ShareFetchRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.ShareFetchRequestTopic) bool { return a.topic(auth.OpRead, name(t.TopicID)) })
		resp, err = serve()
		if r, ok := resp.(*kmsg.ShareFetchResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewShareFetchResponseTopic()
				rt.TopicID = t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewShareFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeTopic
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, true, err

	case *kmsg.ShareAcknowledgeRequest:
		if req.GroupID != nil && !a.group(auth.OpRead, groupOf(req.GroupID)) {
			resp, err = gate(false, req, codeGroup, serve)
			return resp, true, err
		}
		var denied []kmsg.ShareAcknowledgeRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.ShareAcknowledgeRequestTopic) bool { return a.topic(auth.OpRead, name(t.TopicID)) })
		resp, err = serve()
		if r, ok := resp.(*kmsg.ShareAcknowledgeResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewShareAcknowledgeResponseTopic()
				rt.TopicID = t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeTopic
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, true, err

	case *kmsg.DescribeShareGroupOffsetsRequest:
		var denied []kmsg.DescribeShareGroupOffsetsRequestGroup
		req.Groups, denied = split(req.Groups, func(gr kmsg.DescribeShareGroupOffsetsRequestGroup) bool {
			return a.group(auth.OpDescribe, gr.GroupID)
		})
		explicit := map[string]bool{}
		for _, gr := range req.Groups {
			explicit[gr.GroupID] = gr.Topics != nil
		}
		resp, err = serve()
		if r, ok := resp.(*kmsg.DescribeShareGroupOffsetsResponse); ok && err == nil {
			for i := range r.Groups {
				gr := &r.Groups[i]
				kept := gr.Topics[:0]
				for _, t := range gr.Topics {
					n := t.Topic
					if n == "" {
						n = name(t.TopicID)
					}
					switch {
					case a.quiet(auth.OpDescribe, auth.ResourceTopic, n):
						kept = append(kept, t)
					case explicit[gr.GroupID]:
						a.g.audit(a.rc, auth.OpDescribe, auth.ResourceTopic, n, nil)
						for j := range t.Partitions {
							t.Partitions[j].ErrorCode, t.Partitions[j].StartOffset = codeTopic, -1
						}
						kept = append(kept, t)
					}
				}
				gr.Topics = kept
			}
			for _, gr := range denied {
				d := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
				d.GroupID, d.ErrorCode = gr.GroupID, codeGroup
				r.Groups = append(r.Groups, d)
			}
		}
		return resp, true, err

	case *kmsg.AlterShareGroupOffsetsRequest:
		if !a.group(auth.OpRead, req.GroupID) {
			resp, err = gate(false, req, codeGroup, serve)
			return resp, true, err
		}
		var denied []kmsg.AlterShareGroupOffsetsRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool { return a.topic(auth.OpRead, t.Topic) })
		resp, err = serve()
		if r, ok := resp.(*kmsg.AlterShareGroupOffsetsResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeTopic
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, true, err

	case *kmsg.DeleteShareGroupOffsetsRequest:
		if !a.group(auth.OpDelete, req.GroupID) {
			resp, err = gate(false, req, codeGroup, serve)
			return resp, true, err
		}
		var denied []kmsg.DeleteShareGroupOffsetsRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return a.topic(auth.OpRead, t.Topic) })
		resp, err = serve()
		if r, ok := resp.(*kmsg.DeleteShareGroupOffsetsResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, codeTopic
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, true, err
	}
	return nil, false, nil
}
