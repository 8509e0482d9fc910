package kafka

import (
	"context"
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/auth"
)

// Authorization of every Kafka API, with the rules and codes Kafka's
// AclAuthorizer applies (KafkaApis). A request whose items name
// resources (topics, groups, configs) is served for the items the
// principal may touch: the others are taken out of the request before the
// handler sees it and put back in the response with
// TOPIC_AUTHORIZATION_FAILED (or the group or cluster code), so one denied
// topic does not fail a produce to the others. A request that acts on one
// group, or on the cluster, is answered with the code alone. Metadata,
// ListGroups and OffsetFetch of everything hide what the principal may not
// describe. Fetch serves the partitions it may read; when it may read none
// of them it answers TOPIC_AUTHORIZATION_FAILED for each. Every denial goes
// to the audit log.
//
// A key served here without a rule below (one added later) is denied to
// all but super users: default deny holds for what nobody has reviewed.

// authorizer answers the questions of one request.
type authorizer struct {
	g  *Gateway
	rc *reqCtx
	z  *auth.Authorizer
}

func (a authorizer) can(op, rt, name string) bool {
	ok := a.z.Authorize(a.rc.s.request(op, rt, name))
	if !ok {
		a.g.audit(a.rc, op, rt, name, nil)
	}
	return ok
}

// quiet asks without auditing: for filtering listings, where hiding is the
// answer, not a refusal.
func (a authorizer) quiet(op, rt, name string) bool {
	return a.z.Authorize(a.rc.s.request(op, rt, name))
}

func (a authorizer) topic(op, name string) bool { return a.can(op, auth.ResourceTopic, name) }
func (a authorizer) group(op, name string) bool { return a.can(op, auth.ResourceGroup, name) }
func (a authorizer) cluster(op string) bool     { return a.can(op, auth.ResourceCluster, auth.ClusterName) }

var (
	codeTopic   = kerr.TopicAuthorizationFailed.Code
	codeGroup   = kerr.GroupAuthorizationFailed.Code
	codeCluster = kerr.ClusterAuthorizationFailed.Code
	codeTxn     = kerr.TransactionalIDAuthorizationFailed.Code
)

// topicNames maps topic ids to names, for requests that name topics by id.
func (g *Gateway) topicNames(ctx context.Context) func(id [16]byte) string {
	var md *Metadata
	loaded := false
	return func(id [16]byte) string {
		if !loaded {
			loaded = true
			md, _ = g.cluster.Metadata(ctx)
		}
		if md == nil {
			return ""
		}
		if t, ok := md.TopicByID(id); ok {
			return t.Name
		}
		return ""
	}
}

// authorized serves rc if the principal may, answering the denied part
// with Kafka's authorization errors.
func (g *Gateway) authorized(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	a := authorizer{g: g, rc: rc, z: g.opts.Auth.Authorizer}
	serve := func() (kmsg.Response, error) { return apiKeys[rc.key].fn(g, ctx, rc) }
	name := g.topicNames(ctx)
	// topicOf is a topic's name whether the request gives it or its id.
	topicOf := func(n string, id [16]byte) string {
		if n == "" {
			return name(id)
		}
		return n
	}

	switch req := rc.req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest, *kmsg.DescribeClusterRequest:
		return serve()

	case *kmsg.ProduceRequest:
		if req.TransactionID != nil && !a.can(auth.OpWrite, auth.ResourceTransactionalID, *req.TransactionID) {
			resp := req.ResponseKind().(*kmsg.ProduceResponse)
			for _, t := range req.Topics {
				resp.Topics = append(resp.Topics, produceDenied(t, codeTxn))
			}
			return resp, nil
		}
		kept, denied := split(req.Topics, func(t kmsg.ProduceRequestTopic) bool { return a.topic(auth.OpWrite, topicOf(t.Topic, t.TopicID)) })
		req.Topics = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.ProduceResponse); ok && err == nil {
			for _, t := range denied {
				r.Topics = append(r.Topics, produceDenied(t, codeTopic))
			}
		}
		return resp, err

	case *kmsg.FetchRequest:
		if req.ReplicaID >= 0 && !a.cluster(auth.OpClusterAction) {
			return fetchDenied(req, req.Topics, codeCluster), nil
		}
		kept, denied := split(req.Topics, func(t kmsg.FetchRequestTopic) bool { return a.topic(auth.OpRead, topicOf(t.Topic, t.TopicID)) })
		if len(denied) > 0 && len(kept) == 0 && req.SessionEpoch <= 0 {
			return fetchDenied(req, denied, codeTopic), nil
		}
		req.Topics = kept
		return serve()

	case *kmsg.ListOffsetsRequest:
		var denied []kmsg.ListOffsetsRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return a.topic(auth.OpDescribe, t.Topic) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.ListOffsetsResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.Offset, rp.Timestamp = p.Partition, codeTopic, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, err

	case *kmsg.MetadataRequest:
		if req.AllowAutoTopicCreation && !a.quiet(auth.OpCreate, auth.ResourceCluster, auth.ClusterName) {
			// Creation by metadata needs CREATE on the cluster or on
			// each topic; without either the topic is not created.
			for _, t := range req.Topics {
				if t.Topic != nil && !a.quiet(auth.OpCreate, auth.ResourceTopic, *t.Topic) {
					req.AllowAutoTopicCreation = false
				}
			}
		}
		explicit := req.Topics != nil
		resp, err := serve()
		r, ok := resp.(*kmsg.MetadataResponse)
		if !ok || err != nil {
			return resp, err
		}
		kept := r.Topics[:0]
		for _, t := range r.Topics {
			n := ""
			if t.Topic != nil {
				n = *t.Topic
			}
			switch {
			case t.ErrorCode == kerr.UnknownTopicOrPartition.Code || t.ErrorCode == kerr.UnknownTopicID.Code:
				// Kafka says a topic the principal may not describe is
				// not authorized, whether or not it exists.
				if explicit && !a.quiet(auth.OpDescribe, auth.ResourceTopic, n) {
					t.ErrorCode, t.Partitions = codeTopic, nil
				}
				kept = append(kept, t)
			case explicit && !a.topic(auth.OpDescribe, n):
				t.ErrorCode, t.Partitions, t.IsInternal = codeTopic, nil, false
				kept = append(kept, t)
			case !explicit && !a.quiet(auth.OpDescribe, auth.ResourceTopic, n):
				// Listing everything: hidden.
			default:
				kept = append(kept, t)
			}
		}
		r.Topics = kept
		return r, nil

	case *kmsg.OffsetCommitRequest:
		if !a.group(auth.OpRead, req.Group) {
			r := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range req.Topics {
				r.Topics = append(r.Topics, offsetCommitDenied(t, codeGroup))
			}
			return r, nil
		}
		kept, denied := split(req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return a.topic(auth.OpRead, topicOf(t.Topic, t.TopicID)) })
		req.Topics = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.OffsetCommitResponse); ok && err == nil {
			for _, t := range denied {
				r.Topics = append(r.Topics, offsetCommitDenied(t, codeTopic))
			}
		}
		return resp, err

	case *kmsg.OffsetFetchRequest:
		groups := []string{req.Group}
		if req.Version >= 8 {
			groups = groups[:0]
			for _, gr := range req.Groups {
				groups = append(groups, gr.Group)
			}
		}
		for _, gr := range groups {
			if !a.group(auth.OpDescribe, gr) {
				r := req.ResponseKind().(*kmsg.OffsetFetchResponse)
				r.ErrorCode = codeGroup
				for _, gr := range groups {
					rg := kmsg.NewOffsetFetchResponseGroup()
					rg.Group, rg.ErrorCode = gr, codeGroup
					r.Groups = append(r.Groups, rg)
				}
				return r, nil
			}
		}
		resp, err := serve()
		if r, ok := resp.(*kmsg.OffsetFetchResponse); ok && err == nil {
			r.Topics = filterOffsetFetchTopics(a, r.Topics, req.Topics != nil)
			for i := range r.Groups {
				explicit := i < len(req.Groups) && req.Groups[i].Topics != nil
				r.Groups[i].Topics = filterOffsetFetchGroupTopics(a, name, r.Groups[i].Topics, explicit)
			}
		}
		return resp, err

	case *kmsg.FindCoordinatorRequest:
		rt, code := auth.ResourceGroup, codeGroup
		if req.CoordinatorType == 1 {
			rt, code = auth.ResourceTransactionalID, codeTxn
		}
		if req.Version < 4 {
			if !a.can(auth.OpDescribe, rt, req.CoordinatorKey) {
				r := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
				r.ErrorCode, r.NodeID = code, -1
				return r, nil
			}
			return serve()
		}
		var denied []string
		req.CoordinatorKeys, denied = split(req.CoordinatorKeys, func(k string) bool { return a.can(auth.OpDescribe, rt, k) })
		var resp kmsg.Response = req.ResponseKind()
		var err error
		if len(req.CoordinatorKeys) > 0 {
			resp, err = serve()
		}
		if r, ok := resp.(*kmsg.FindCoordinatorResponse); ok && err == nil {
			for _, k := range denied {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.ErrorCode, c.NodeID = k, code, -1
				r.Coordinators = append(r.Coordinators, c)
			}
		}
		return resp, err

	case *kmsg.JoinGroupRequest:
		if !a.group(auth.OpRead, req.Group) {
			r := req.ResponseKind().(*kmsg.JoinGroupResponse)
			r.ErrorCode, r.Generation = codeGroup, -1
			return r, nil
		}
		return serve()
	case *kmsg.HeartbeatRequest:
		return gate(a.group(auth.OpRead, req.Group), req, codeGroup, serve)
	case *kmsg.LeaveGroupRequest:
		return gate(a.group(auth.OpRead, req.Group), req, codeGroup, serve)
	case *kmsg.SyncGroupRequest:
		return gate(a.group(auth.OpRead, req.Group), req, codeGroup, serve)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if !a.group(auth.OpRead, req.Group) {
			r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			r.ErrorCode = codeGroup
			return r, nil
		}
		for _, t := range req.SubscribedTopicNames {
			if !a.topic(auth.OpDescribe, t) {
				r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
				r.ErrorCode = codeTopic
				return r, nil
			}
		}
		return serve()

	case *kmsg.DescribeGroupsRequest:
		var denied []string
		req.Groups, denied = split(req.Groups, func(gr string) bool { return a.group(auth.OpDescribe, gr) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.DescribeGroupsResponse); ok && err == nil {
			for _, gr := range denied {
				d := kmsg.NewDescribeGroupsResponseGroup()
				d.Group, d.ErrorCode = gr, codeGroup
				r.Groups = append(r.Groups, d)
			}
		}
		return resp, err
	case *kmsg.ConsumerGroupDescribeRequest:
		var denied []string
		req.Groups, denied = split(req.Groups, func(gr string) bool { return a.group(auth.OpDescribe, gr) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.ConsumerGroupDescribeResponse); ok && err == nil {
			for _, gr := range denied {
				d := kmsg.NewConsumerGroupDescribeResponseGroup()
				d.Group, d.ErrorCode = gr, codeGroup
				r.Groups = append(r.Groups, d)
			}
		}
		return resp, err

	case *kmsg.ListGroupsRequest:
		resp, err := serve()
		if r, ok := resp.(*kmsg.ListGroupsResponse); ok && err == nil && !a.quiet(auth.OpDescribe, auth.ResourceCluster, auth.ClusterName) {
			kept := r.Groups[:0]
			for _, gr := range r.Groups {
				if a.quiet(auth.OpDescribe, auth.ResourceGroup, gr.Group) {
					kept = append(kept, gr)
				}
			}
			r.Groups = kept
		}
		return resp, err

	case *kmsg.DeleteGroupsRequest:
		var denied []string
		req.Groups, denied = split(req.Groups, func(gr string) bool { return a.group(auth.OpDelete, gr) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.DeleteGroupsResponse); ok && err == nil {
			for _, gr := range denied {
				d := kmsg.NewDeleteGroupsResponseGroup()
				d.Group, d.ErrorCode = gr, codeGroup
				r.Groups = append(r.Groups, d)
			}
		}
		return resp, err

	case *kmsg.OffsetDeleteRequest:
		if !a.group(auth.OpDelete, req.Group) {
			r := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
			r.ErrorCode = codeGroup
			return r, nil
		}
		var denied []kmsg.OffsetDeleteRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return a.topic(auth.OpRead, t.Topic) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.OffsetDeleteResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeTopic
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, err

	case *kmsg.CreateTopicsRequest:
		clusterCreate := a.quiet(auth.OpCreate, auth.ResourceCluster, auth.ClusterName)
		var denied []string
		kept := req.Topics[:0:0]
		for _, t := range req.Topics {
			if clusterCreate || a.topic(auth.OpCreate, t.Topic) {
				kept = append(kept, t)
			} else {
				denied = append(denied, t.Topic)
			}
		}
		req.Topics = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.CreateTopicsResponse); ok && err == nil {
			for _, n := range denied {
				st := kmsg.NewCreateTopicsResponseTopic()
				st.Topic, st.ErrorCode, st.NumPartitions, st.ReplicationFactor = n, codeTopic, -1, -1
				r.Topics = append(r.Topics, st)
			}
		}
		return resp, err

	case *kmsg.DeleteTopicsRequest:
		var denied []kmsg.DeleteTopicsResponseTopic
		keptNames := req.TopicNames[:0:0]
		for _, n := range req.TopicNames {
			if a.topic(auth.OpDelete, n) {
				keptNames = append(keptNames, n)
			} else {
				d := kmsg.NewDeleteTopicsResponseTopic()
				d.Topic, d.ErrorCode = kmsg.StringPtr(n), codeTopic
				denied = append(denied, d)
			}
		}
		kept := req.Topics[:0:0]
		for _, t := range req.Topics {
			n := ""
			if t.Topic != nil {
				n = *t.Topic
			} else {
				n = name(t.TopicID)
			}
			if a.topic(auth.OpDelete, n) {
				kept = append(kept, t)
			} else {
				d := kmsg.NewDeleteTopicsResponseTopic()
				d.Topic, d.TopicID, d.ErrorCode = t.Topic, t.TopicID, codeTopic
				denied = append(denied, d)
			}
		}
		req.TopicNames, req.Topics = keptNames, kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.DeleteTopicsResponse); ok && err == nil {
			r.Topics = append(r.Topics, denied...)
		}
		return resp, err

	case *kmsg.DeleteRecordsRequest:
		var denied []kmsg.DeleteRecordsRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return a.topic(auth.OpDelete, t.Topic) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.DeleteRecordsResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewDeleteRecordsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDeleteRecordsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, codeTopic, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, err

	case *kmsg.CreatePartitionsRequest:
		var denied []string
		kept := req.Topics[:0:0]
		for _, t := range req.Topics {
			if a.topic(auth.OpAlter, t.Topic) {
				kept = append(kept, t)
			} else {
				denied = append(denied, t.Topic)
			}
		}
		req.Topics = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.CreatePartitionsResponse); ok && err == nil {
			for _, n := range denied {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = n, codeTopic
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, err

	case *kmsg.AddPartitionsToTxnRequest:
		r := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		if req.Version >= 4 {
			// v4+ batches are broker-to-broker.
			if !a.cluster(auth.OpClusterAction) {
				r.ErrorCode = codeCluster
				return r, nil
			}
			return serve()
		}
		txnOK := a.can(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID)
		denied := map[string]bool{}
		for _, t := range req.Topics {
			if txnOK && !a.topic(auth.OpWrite, t.Topic) {
				denied[t.Topic] = true
			}
		}
		if txnOK && len(denied) == 0 {
			return serve()
		}
		// As Kafka: nothing is added; the denied partitions say why, the
		// others OPERATION_NOT_ATTEMPTED.
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			code := kerr.OperationNotAttempted.Code
			switch {
			case !txnOK:
				code = codeTxn
			case denied[t.Topic]:
				code = codeTopic
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r, nil
	case *kmsg.AddOffsetsToTxnRequest:
		r := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !a.can(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
			r.ErrorCode = codeTxn
		case !a.group(auth.OpRead, req.Group):
			r.ErrorCode = codeGroup
		default:
			return serve()
		}
		return r, nil
	case *kmsg.EndTxnRequest:
		return gate(a.can(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID), req, codeTxn, serve)
	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !a.can(auth.OpWrite, auth.ResourceTransactionalID, req.TransactionalID):
			code = codeTxn
		case !a.group(auth.OpRead, req.Group):
			code = codeGroup
		}
		kept, denied := split(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
			return code == 0 && a.topic(auth.OpRead, topicOf(t.Topic, t.TopicID))
		})
		var resp kmsg.Response = req.ResponseKind()
		var err error
		if code == 0 {
			code = codeTopic
			req.Topics = kept
			resp, err = serve()
		}
		if r, ok := resp.(*kmsg.TxnOffsetCommitResponse); ok && err == nil {
			for _, t := range denied {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return resp, err

	case *kmsg.InitProducerIDRequest:
		r := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		r.ProducerID, r.ProducerEpoch = -1, -1
		if req.TransactionalID != nil {
			if !a.can(auth.OpWrite, auth.ResourceTransactionalID, *req.TransactionalID) {
				r.ErrorCode = codeTxn
				return r, nil
			}
			return serve()
		}
		// An idempotent producer needs IDEMPOTENT_WRITE on the cluster or
		// WRITE on some topic (Kafka 3.0+).
		if !a.quiet(auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName) && !a.z.AuthorizeAny(rc.s.request(auth.OpWrite, auth.ResourceTopic, "")) {
			g.audit(rc, auth.OpIdempotentWrite, auth.ResourceCluster, auth.ClusterName, nil)
			r.ErrorCode = codeCluster
			return r, nil
		}
		return serve()

	case *kmsg.OffsetForLeaderEpochRequest:
		if req.ReplicaID >= 0 && !a.cluster(auth.OpClusterAction) {
			r := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
			for _, t := range req.Topics {
				r.Topics = append(r.Topics, epochDenied(t, codeCluster))
			}
			return r, nil
		}
		var denied []kmsg.OffsetForLeaderEpochRequestTopic
		req.Topics, denied = split(req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return a.topic(auth.OpDescribe, t.Topic) })
		resp, err := serve()
		if r, ok := resp.(*kmsg.OffsetForLeaderEpochResponse); ok && err == nil {
			for _, t := range denied {
				r.Topics = append(r.Topics, epochDenied(t, codeTopic))
			}
		}
		return resp, err

	case *kmsg.DescribeConfigsRequest:
		var denied []kmsg.DescribeConfigsResponseResource
		kept := req.Resources[:0:0]
		for _, res := range req.Resources {
			if ok, code := a.config(auth.OpDescribeConfigs, res.ResourceType, res.ResourceName); ok {
				kept = append(kept, res)
			} else {
				d := kmsg.NewDescribeConfigsResponseResource()
				d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, code
				denied = append(denied, d)
			}
		}
		req.Resources = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.DescribeConfigsResponse); ok && err == nil {
			r.Resources = append(r.Resources, denied...)
		}
		return resp, err
	case *kmsg.AlterConfigsRequest:
		var denied []kmsg.AlterConfigsResponseResource
		kept := req.Resources[:0:0]
		for _, res := range req.Resources {
			if ok, code := a.config(auth.OpAlterConfigs, res.ResourceType, res.ResourceName); ok {
				kept = append(kept, res)
			} else {
				d := kmsg.NewAlterConfigsResponseResource()
				d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, code
				denied = append(denied, d)
			}
		}
		req.Resources = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.AlterConfigsResponse); ok && err == nil {
			r.Resources = append(r.Resources, denied...)
		}
		return resp, err
	case *kmsg.IncrementalAlterConfigsRequest:
		var denied []kmsg.IncrementalAlterConfigsResponseResource
		kept := req.Resources[:0:0]
		for _, res := range req.Resources {
			if ok, code := a.config(auth.OpAlterConfigs, res.ResourceType, res.ResourceName); ok {
				kept = append(kept, res)
			} else {
				d := kmsg.NewIncrementalAlterConfigsResponseResource()
				d.ResourceType, d.ResourceName, d.ErrorCode = res.ResourceType, res.ResourceName, code
				denied = append(denied, d)
			}
		}
		req.Resources = kept
		resp, err := serve()
		if r, ok := resp.(*kmsg.IncrementalAlterConfigsResponse); ok && err == nil {
			r.Resources = append(r.Resources, denied...)
		}
		return resp, err

	case *kmsg.DescribeLogDirsRequest:
		return gate(a.cluster(auth.OpDescribe), req, codeCluster, serve)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return gate(a.cluster(auth.OpAlter), req, codeCluster, serve)
	case *kmsg.ListPartitionReassignmentsRequest:
		return gate(a.cluster(auth.OpDescribe), req, codeCluster, serve)
	case *kmsg.DescribeACLsRequest:
		return gate(a.cluster(auth.OpDescribe), req, codeCluster, serve)
	case *kmsg.CreateACLsRequest:
		if !a.cluster(auth.OpAlter) {
			r := req.ResponseKind().(*kmsg.CreateACLsResponse)
			for range req.Creations {
				c := kmsg.NewCreateACLsResponseResult()
				c.ErrorCode = codeCluster
				r.Results = append(r.Results, c)
			}
			return r, nil
		}
		return serve()
	case *kmsg.DeleteACLsRequest:
		if !a.cluster(auth.OpAlter) {
			r := req.ResponseKind().(*kmsg.DeleteACLsResponse)
			for range req.Filters {
				c := kmsg.NewDeleteACLsResponseResult()
				c.ErrorCode = codeCluster
				r.Results = append(r.Results, c)
			}
			return r, nil
		}
		return serve()
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return gate(a.cluster(auth.OpDescribe), req, codeCluster, serve)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if !a.cluster(auth.OpAlter) {
			r := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			for _, u := range req.Upsertions {
				c := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				c.User, c.ErrorCode = u.Name, codeCluster
				r.Results = append(r.Results, c)
			}
			for _, u := range req.Deletions {
				c := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				c.User, c.ErrorCode = u.Name, codeCluster
				r.Results = append(r.Results, c)
			}
			return r, nil
		}
		return serve()
	}
	if resp, ok, err := g.authorizedShare(a, rc, name, serve); ok { // authz_share.go
		return resp, err
	}
	return g.unreviewed(rc, a, serve)
}

// unreviewed is default deny for a key without a rule: super users (and
// ALL on the cluster) pass, anyone else gets CLUSTER_AUTHORIZATION_FAILED
// in the response's top-level error code, or, where the response has
// none, a closed connection.
func (g *Gateway) unreviewed(rc *reqCtx, a authorizer, serve func() (kmsg.Response, error)) (kmsg.Response, error) {
	if a.cluster(auth.OpAll) {
		return serve()
	}
	resp := rc.req.ResponseKind()
	if setTopError(resp, codeCluster) {
		return resp, nil
	}
	return nil, fmt.Errorf("%s denied to %s: no authorization rule for this API", kmsg.NameForKey(rc.key), rc.s.principal())
}

// split splits xs into those ok keeps and the rest, both in order. kept
// is a new slice: xs is not written to.
func split[T any](xs []T, ok func(T) bool) (kept, denied []T) {
	kept = xs[:0:0]
	for _, x := range xs {
		if ok(x) {
			kept = append(kept, x)
		} else {
			denied = append(denied, x)
		}
	}
	return kept, denied
}

// setTopError sets resp's top-level error code, reporting false when the
// response has none.
func setTopError(resp kmsg.Response, code int16) bool {
	if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 && f.CanSet() {
		f.SetInt(int64(code))
		return true
	}
	return false
}

// gate serves req when ok and otherwise answers it with code in the
// response's top-level error code: the rule of every key whose denial is
// just that one code.
func gate(ok bool, req kmsg.Request, code int16, serve func() (kmsg.Response, error)) (kmsg.Response, error) {
	if ok {
		return serve()
	}
	resp := req.ResponseKind()
	if !setTopError(resp, code) {
		return nil, fmt.Errorf("%s denied: %T has no top-level error code", kmsg.NameForKey(req.Key()), resp)
	}
	return resp, nil
}

// config decides a config resource: topics by their name, the broker and
// its loggers as the cluster.
func (a authorizer) config(op string, t kmsg.ConfigResourceType, name string) (bool, int16) {
	if t == kmsg.ConfigResourceTypeTopic {
		return a.topic(op, name), codeTopic
	}
	return a.cluster(op), codeCluster
}

func produceDenied(t kmsg.ProduceRequestTopic, code int16) kmsg.ProduceResponseTopic {
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	for _, p := range t.Partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

func fetchDenied(req *kmsg.FetchRequest, topics []kmsg.FetchRequestTopic, code int16) *kmsg.FetchResponse {
	r := req.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.Partition, code, -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

func offsetCommitDenied(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
	rt := kmsg.NewOffsetCommitResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.Partition, code
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

func epochDenied(t kmsg.OffsetForLeaderEpochRequestTopic, code int16) kmsg.OffsetForLeaderEpochResponseTopic {
	rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
	rt.Topic = t.Topic
	for _, p := range t.Partitions {
		rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// filterOffsetFetchTopics hides the topics the principal may not describe
// from an OffsetFetch of everything, and marks them on an explicit one.
func filterOffsetFetchTopics(a authorizer, ts []kmsg.OffsetFetchResponseTopic, explicit bool) []kmsg.OffsetFetchResponseTopic {
	kept := ts[:0]
	for _, t := range ts {
		switch {
		case a.quiet(auth.OpDescribe, auth.ResourceTopic, t.Topic):
			kept = append(kept, t)
		case explicit:
			a.g.audit(a.rc, auth.OpDescribe, auth.ResourceTopic, t.Topic, nil)
			for i := range t.Partitions {
				t.Partitions[i].ErrorCode, t.Partitions[i].Offset = codeTopic, -1
			}
			kept = append(kept, t)
		}
	}
	return kept
}

// filterOffsetFetchGroupTopics is filterOffsetFetchTopics for v8+, whose
// topics may be named by id.
func filterOffsetFetchGroupTopics(a authorizer, name func([16]byte) string, ts []kmsg.OffsetFetchResponseGroupTopic, explicit bool) []kmsg.OffsetFetchResponseGroupTopic {
	kept := ts[:0]
	for _, t := range ts {
		n := t.Topic
		if n == "" {
			n = name(t.TopicID)
		}
		switch {
		case a.quiet(auth.OpDescribe, auth.ResourceTopic, n):
			kept = append(kept, t)
		case explicit:
			a.g.audit(a.rc, auth.OpDescribe, auth.ResourceTopic, n, nil)
			for i := range t.Partitions {
				t.Partitions[i].ErrorCode, t.Partitions[i].Offset = codeTopic, -1
			}
			kept = append(kept, t)
		}
	}
	return kept
}
