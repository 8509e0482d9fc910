package kafka

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// ShareFetch: v1-v2 (KIP-932), as Kafka 4.4 serves it.
//
// Fetches records for a share group member: each partition of the
// member's share session hands out (acquires) records that no other member
// holds, up to MaxRecords, each under an acquisition lock of
// share.record.lock.duration.ms; the response names the acquired offset
// ranges and their delivery counts beside the record batches holding them
// (share_partitions.go). Acknowledgements of earlier deliveries ride along
// and are applied first. Share sessions: epoch 0 opens one (its
// partitions are those named), later requests send the next epoch and add
// or forget partitions, -1 closes it and releases what the member holds.
// A named partition stays in the session whatever its error, as in
// Kafka, and is resolved again on each fetch.
// Errors: SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// UNKNOWN_TOPIC_ID, NOT_LEADER_OR_FOLLOWER (with the leader) for a
// partition another gateway leads, INVALID_RECORD_STATE for an
// acknowledgement of a record the member does not hold, INVALID_REQUEST
// for malformed acknowledgement batches. With nothing to hand out the
// request waits up to MaxWaitMs for new records or released ones, even
// with no partition it can serve, unless it names one that fails.
//
// Version notes: v2 acquire mode (batch-optimized, the default, may go
// past MaxRecords to the end of a batch; record-limit does not) and renew
// acknowledgements (type 4, which extend the lock).

func init() { regKey(78, 1, 2, (*Gateway).handleShareFetch) }

// defaultShareMaxRecords is the share fetch record limit when a request
// gives none.
const defaultShareMaxRecords = 500

// sharePartReq is a partition named by a share request.
type sharePartReq struct {
	id   [16]byte
	tp   tp
	acks []ackBatch
	err  error
}

// sharePartID is a partition as a share session keys it: by topic id, so
// a partition whose topic id does not resolve still has its place.
type sharePartID struct {
	id        [16]byte
	partition int32
}

// resolveShareParts resolves topic ids and leadership for the partitions
// of a share request.
func (g *Gateway) resolveShareParts(ctx context.Context, md *Metadata, reqs []sharePartReq) {
	brokers := g.brokers(ctx)
	for i := range reqs {
		r := &reqs[i]
		t, ok := md.TopicByID(r.id)
		switch {
		case !ok:
			r.err = kerr.UnknownTopicID
		case r.tp.partition < 0 || r.tp.partition >= t.Partitions:
			r.err = kerr.UnknownTopicOrPartition
		case partitionLeader(t.Name, r.tp.partition, brokers) != g.opts.NodeID:
			r.err = kerr.NotLeaderForPartition
		}
		if ok {
			r.tp.topic = t.Name
		}
	}
}

// shareAcknowledge applies a partition's acknowledgements.
func (g *Gateway) shareAcknowledge(ctx context.Context, group, member string, r sharePartReq, renewOK bool) error {
	if err := checkAckBatches(r.acks, renewOK); err != nil {
		return err
	}
	sp, err := g.shares.partition(ctx, group, r.tp.topic, r.tp.partition)
	if err != nil {
		return err
	}
	lim := g.shares.limits(group)
	sp.mu.Lock()
	released := sp.expireLocked(time.Now(), lim)
	err = sp.acknowledgeLocked(member, r.acks, time.Now(), lim)
	sp.mu.Unlock()
	if released || err == nil {
		g.shares.wakeUp()
	}
	return err
}

// shareSessionUpdate applies a request's epoch to the member's share
// session: 0 opens one, -1 closes it (after the acknowledgements), other
// epochs must be the one expected. It returns the session's partitions,
// unresolved.
func (g *Gateway) shareSessionUpdate(conn *session, group, member string, epoch int32, add, forget []sharePartReq, fetch bool) ([]sharePartReq, error) {
	s := g.shares
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]string{group, member}
	ss := s.mu.sessions[key]
	switch {
	case epoch == 0 && !fetch:
		return nil, fmt.Errorf("%w: a share acknowledgement cannot open a session", kerr.InvalidShareSessionEpoch)
	case epoch == 0:
		ss = &shareSession{parts: map[sharePartID]bool{}, conn: conn}
		s.mu.sessions[key] = ss
		if conn.shareSessions == nil {
			conn.shareSessions = map[[2]string]bool{}
		}
		conn.shareSessions[key] = true
	case ss == nil:
		return nil, fmt.Errorf("%w: member %s of group %s", kerr.ShareSessionNotFound, member, group)
	case epoch == -1:
	case epoch != ss.epoch:
		return nil, fmt.Errorf("%w: epoch %d, expected %d", kerr.InvalidShareSessionEpoch, epoch, ss.epoch)
	}
	if epoch >= 0 {
		ss.epoch = epoch + 1
		if ss.epoch == math.MaxInt32 {
			ss.epoch = 1
		}
	}
	var out []sharePartReq
	if fetch && epoch != -1 {
		for _, r := range forget {
			delete(ss.parts, sharePartID{r.id, r.tp.partition})
		}
		// Every named partition joins, even one that fails here (Kafka's
		// share session does the same): the client will not name it again.
		for _, r := range add {
			ss.parts[sharePartID{r.id, r.tp.partition}] = true
		}
	}
	for k := range ss.parts {
		out = append(out, sharePartReq{id: k.id, tp: tp{partition: k.partition}})
	}
	return out, nil
}

// closeShareSession drops a member's session and releases what it holds.
func (g *Gateway) closeShareSession(group, member string) {
	g.shares.memberLeft(group, member)
}

// shareRequestStart does what ShareFetch and ShareAcknowledge both do
// first: require the group and member ids, report the group's record
// lock duration (before the metadata fetch, so an answer failing on that
// still carries it) and fetch the metadata topic ids resolve against.
func (g *Gateway) shareRequestStart(ctx context.Context, groupID, memberID *string, lockMs *int32) (group, member string, md *Metadata, err error) {
	if groupID == nil || *groupID == "" || memberID == nil || *memberID == "" {
		return "", "", nil, fmt.Errorf("%w: group and member ids are required", kerr.InvalidRequest)
	}
	group, member = *groupID, *memberID
	*lockMs = int32(g.groupCfg.getInt(group, "share.record.lock.duration.ms"))
	md, err = g.cluster.Metadata(ctx)
	return group, member, md, err
}

func (g *Gateway) handleShareFetch(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	group, member, md, err := g.shareRequestStart(ctx, req.GroupID, req.MemberID, &resp.AcquisitionLockTimeoutMillis)
	if err != nil {
		return fail(err)
	}
	var named, forgotten []sharePartReq
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			r := sharePartReq{id: rt.TopicID, tp: tp{partition: rp.Partition}}
			for _, b := range rp.AcknowledgementBatches {
				r.acks = append(r.acks, ackBatch{first: b.FirstOffset, last: b.LastOffset, types: b.AcknowledgeTypes})
			}
			named = append(named, r)
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forgotten = append(forgotten, sharePartReq{id: ft.TopicID, tp: tp{partition: p}})
		}
	}
	g.resolveShareParts(ctx, md, named)
	if req.ShareSessionEpoch == 0 {
		for _, r := range named {
			if len(r.acks) > 0 {
				return fail(fmt.Errorf("%w: acknowledgements in a request that opens a share session", kerr.InvalidRequest))
			}
		}
	}

	// Acknowledgements first, so records released here can be fetched.
	outs := map[sharePartID]*sharePartOut{}
	order := []sharePartID{}
	out := func(r sharePartReq) *sharePartOut {
		k := sharePartID{r.id, r.tp.partition}
		o := outs[k]
		if o == nil {
			o = &sharePartOut{id: r.id, tp: r.tp}
			outs[k] = o
			order = append(order, k)
		}
		return o
	}
	namedErr := false
	for _, r := range named {
		o := out(r)
		if r.err != nil {
			o.err = r.err
			namedErr = true
			continue
		}
		if len(r.acks) > 0 {
			o.ackErr = g.shareAcknowledge(ctx, group, member, r, req.Version >= 2 && req.IsRenewAck)
		}
	}
	parts, err := g.shareSessionUpdate(rc.s, group, member, req.ShareSessionEpoch, named, forgotten, true)
	if err != nil {
		return fail(err)
	}
	if req.ShareSessionEpoch == -1 {
		g.closeShareSession(group, member)
		return g.shareFetchResponse(resp, outs, order), nil
	}

	// The session's partitions resolve afresh on every fetch, so one that
	// failed before is served once this gateway leads it.
	g.resolveShareParts(ctx, md, parts)
	serve := parts[:0]
	for _, r := range parts {
		if r.err != nil {
			out(r).err = r.err
			continue
		}
		serve = append(serve, r)
	}

	maxRecords := int(req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = defaultShareMaxRecords
	}
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	for {
		wake := g.shares.woken()
		got := 0
		for _, r := range serve {
			if got >= maxRecords || maxBytes <= 0 {
				break
			}
			o := out(r)
			sp, err := g.shares.partition(ctx, group, r.tp.topic, r.tp.partition)
			if err != nil {
				o.err = err
				continue
			}
			data, acq, err := g.shareFetchPartition(ctx, sp, member, maxRecords-got, req.ShareAcquireMode == 1, min(maxBytes, 1<<20))
			if err != nil {
				o.err = err
				continue
			}
			if len(acq) > 0 {
				o.records = append(o.records, data...)
				o.acq = append(o.acq, acq...)
				maxBytes -= int32(len(data))
				for _, a := range acq {
					got += int(a.last - a.first + 1)
				}
			}
		}
		// A new error in what the request named is news to answer at
		// once; an empty session, or one whose partitions fail as they did
		// before, waits MaxWaitMs like any other fetch with nothing to
		// give, or its client asks again at once, for ever.
		if got > 0 || namedErr || !time.Now().Before(deadline) {
			break
		}
		if err := g.waitShareData(ctx, group, serve, wake, deadline); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			break
		}
	}
	return g.shareFetchResponse(resp, outs, order), nil
}

// waitShareData waits until records are released in this gateway, new
// records arrive in a session partition, or the deadline.
func (g *Gateway) waitShareData(ctx context.Context, group string, parts []sharePartReq, wake <-chan struct{}, deadline time.Time) error {
	// Under read_committed, records past the last stable offset are not
	// data yet: the store's wait wakes when it moves.
	freq := &ring.FetchRequest{MinBytes: 1, MaxBytes: 1, MaxWait: time.Until(deadline), IsolationLevel: g.shareIsolation(group)}
	for _, r := range parts {
		sp := g.shares.loaded(shareKey{group, r.tp.topic, r.tp.partition})
		if sp == nil {
			continue
		}
		sp.mu.Lock()
		end := sp.mu.end
		sp.mu.Unlock()
		freq.Partitions = append(freq.Partitions, ring.FetchPartition{Topic: r.tp.topic, Partition: r.tp.partition, Offset: end, MaxBytes: 1})
	}
	if freq.MaxWait <= 0 {
		return nil
	}
	if len(freq.Partitions) == 0 {
		// Nothing here to watch: wait out the deadline all the same.
		t := time.NewTimer(freq.MaxWait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-wake:
		case <-ctx.Done():
		}
		return ctx.Err()
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		res, err := g.backend.Fetch(wctx, freq)
		if err == nil {
			res.Release()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-wake:
	case <-ctx.Done():
	}
	cancel()
	<-done
	return ctx.Err()
}

// sharePartOut is one partition's part of a share response.
type sharePartOut struct {
	id      [16]byte
	tp      tp
	ackErr  error
	err     error
	records []byte
	acq     []acquired
}

// shareLeader is the partition's leader as a share response shows it.
func (g *Gateway) shareLeader(ctx context.Context, topic string, p int32) (int32, int32) {
	t, err := g.cluster.Topic(ctx, topic)
	if err != nil {
		return -1, -1
	}
	return partitionLeader(topic, p, g.brokers(ctx)), t.LeaderEpoch(p)
}

// shareFetchResponse fills the response's partitions, in request order.
func (g *Gateway) shareFetchResponse(resp *kmsg.ShareFetchResponse, outs map[sharePartID]*sharePartOut, order []sharePartID) *kmsg.ShareFetchResponse {
	ctx := context.Background()
	byTopic := map[[16]byte]int{}
	endpoints := map[int32]bool{}
	for _, k := range order {
		o := outs[k]
		i, ok := byTopic[o.id]
		if !ok {
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = o.id
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			byTopic[o.id] = i
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = o.tp.partition
		if o.err != nil {
			rp.ErrorCode, rp.ErrorMessage = errorCode(o.err), errorMessage(o.err)
		}
		if o.ackErr != nil {
			rp.AcknowledgeErrorCode, rp.AcknowledgeErrorMessage = errorCode(o.ackErr), errorMessage(o.ackErr)
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = g.shareLeader(ctx, o.tp.topic, o.tp.partition)
		if rp.ErrorCode == kerr.NotLeaderForPartition.Code && rp.CurrentLeader.LeaderID >= 0 {
			endpoints[rp.CurrentLeader.LeaderID] = true
		}
		rp.Records = o.records
		if rp.Records == nil {
			rp.Records = []byte{} // not nullable in ShareFetch
		}
		for _, a := range o.acq {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.first, a.last, a.count
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, b := range g.brokers(ctx) {
		if endpoints[b.NodeID] {
			ne := kmsg.NewShareFetchResponseNodeEndpoint()
			ne.NodeID, ne.Host, ne.Port, ne.Rack = b.NodeID, b.Host, b.Port, b.Rack
			resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
		}
	}
	return resp
}
