package kafka

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// Fetch: v4-v17.
//
// Long polling is the store's: the request waits up to MaxWaitMillis for
// MinBytes over all its partitions, woken by the high watermark moving, not
// by a timer. MaxBytes and each partition's max bytes bound the response,
// except that the first non-empty partition always gets at least one whole
// batch (KIP-74). read_committed (isolation level 1) reads up to the last
// stable offset, which an open transaction holds below the high
// watermark, and gets the aborted transactions the records may hold, for
// the client to drop; read_uncommitted reads up to the high watermark. A
// consumer's
// current leader epoch (v9+) is checked: a newer one than ours gets
// UNKNOWN_LEADER_EPOCH, an older one FENCED_LEADER_EPOCH.
//
// Fetch sessions (KIP-227, v7+) are kept gateway-wide, see
// fetch_sessions.go. Session id 0 with epoch -1 is a sessionless full
// fetch; epoch 0 opens a session (closing the named one, if any); a positive
// epoch is an incremental fetch, answered with only the partitions that
// have news, or FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH.
//
// Zero copy: the response is encoded by fetch_encode.go around the
// records, so hot records go from the segment file to the socket with
// sendfile(2).
//
// Version notes: v5 log start offset, v7 sessions, v9 current leader epoch,
// v11 rack (ignored: every gateway serves every partition), v12 flexible,
// v13 topic ids.

func init() { regKey(1, 4, 17, (*Gateway).handleFetch) }

// fetchItem is one partition being fetched.
type fetchItem struct {
	key      sessionKey
	name     string // resolved topic name
	id       [16]byte
	offset   int64
	maxBytes int32
	err      error        // found before going to the store
	sp       *sessionPart // nil without a session
	res      *ring.FetchPartitionResult
}

func (g *Gateway) handleFetch(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.FetchRequest)
	byID := req.Version >= 13

	var (
		fs   *fetchSession
		full = true
	)
	if req.Version >= 7 {
		switch {
		case req.SessionEpoch == -1:
			if req.SessionID != 0 {
				g.sessions.remove(req.SessionID)
			}
		case req.SessionEpoch == 0:
			if req.SessionID != 0 {
				g.sessions.remove(req.SessionID)
			}
			fs = g.sessions.create() // nil when the cache is full: sessionless
		default:
			var err error
			fs, err = g.sessions.acquire(req.SessionID, req.SessionEpoch)
			if err != nil {
				rc.raw = encodeFetchResponse(req.Version, errorCode(err), 0, nil)
				return nil, nil
			}
			full = false
		}
	}
	if fs != nil {
		defer g.sessions.release(fs)
	}

	keyOf := func(topic string, id [16]byte, p int32) sessionKey {
		if byID {
			return sessionKey{id: id, partition: p}
		}
		return sessionKey{topic: topic, partition: p}
	}

	// The partitions to fetch, in order.
	var items []fetchItem
	if full {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				k := keyOf(rt.Topic, rt.TopicID, rp.Partition)
				it := fetchItem{key: k, offset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes}
				if fs != nil {
					it.sp = fs.upsert(k, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch)
				}
				items = append(items, it)
			}
		}
	} else {
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				fs.upsert(keyOf(rt.Topic, rt.TopicID, rp.Partition), rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch)
			}
		}
		for _, ft := range req.ForgottenTopics {
			for _, p := range ft.Partitions {
				fs.forget(keyOf(ft.Topic, ft.TopicID, p))
			}
		}
		for _, sp := range fs.parts {
			items = append(items, fetchItem{key: sp.key, offset: sp.offset, maxBytes: sp.maxBytes, sp: sp})
		}
	}

	// Resolve topics, in one metadata snapshot for the whole request, and
	// check what can be checked here.
	md, mdErr := g.cluster.Metadata(ctx)
	var leaderEpochs []int32 // by item, for a full fetch without a session
	if full && fs == nil {
		leaderEpochs = make([]int32, 0, len(items))
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				leaderEpochs = append(leaderEpochs, rp.CurrentLeaderEpoch)
			}
		}
	}
	breq := &ring.FetchRequest{MinBytes: req.MinBytes, MaxBytes: req.MaxBytes, MaxWait: time.Duration(req.MaxWaitMillis) * time.Millisecond}
	if req.IsolationLevel == 1 {
		breq.IsolationLevel = ring.ReadCommitted
	}
	var backendIdx []int
	preErr := false
	for i := range items {
		it := &items[i]
		var t *Topic
		switch {
		case md == nil:
		case byID:
			t, _ = md.TopicByID(it.key.id)
		default:
			t, _ = md.Topic(it.key.topic)
		}
		it.name, it.id = it.key.topic, it.key.id
		epoch := int32(-1)
		if it.sp != nil {
			epoch = it.sp.epoch
		} else if i < len(leaderEpochs) {
			epoch = leaderEpochs[i]
		}
		switch {
		case mdErr != nil:
			it.err = mdErr
		case t == nil && byID:
			it.err = kerr.UnknownTopicID
		case t == nil:
			it.err = kerr.UnknownTopicOrPartition
		case it.key.partition < 0 || it.key.partition >= t.Partitions:
			it.err = kerr.UnknownTopicOrPartition
		case epoch >= 0 && epoch > t.LeaderEpoch(it.key.partition):
			it.err = kerr.UnknownLeaderEpoch
		case epoch >= 0 && epoch < t.LeaderEpoch(it.key.partition):
			it.err = kerr.FencedLeaderEpoch
		}
		if t != nil {
			it.name, it.id = t.Name, t.ID
		}
		if it.err != nil {
			preErr = true
			continue
		}
		backendIdx = append(backendIdx, i)
		breq.Partitions = append(breq.Partitions, ring.FetchPartition{Topic: it.name, Partition: it.key.partition, Offset: it.offset, MaxBytes: it.maxBytes})
	}
	if preErr {
		breq.MaxWait = 0 // errors are answered at once
	}

	var result ring.FetchResult
	if len(breq.Partitions) > 0 {
		var err error
		result, err = g.backend.Fetch(ctx, breq)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the connection is going away
			}
			if ErrorFor(err) == kerr.UnknownServerError {
				g.log.Warn("fetch failed", "err", err)
			}
			for _, i := range backendIdx {
				items[i].err = err
			}
		} else {
			if len(result.Partitions) != len(backendIdx) {
				result.Release()
				return nil, fmt.Errorf("backend fetch returned %d partitions for %d", len(result.Partitions), len(backendIdx))
			}
			for j, i := range backendIdx {
				items[i].res = &result.Partitions[j]
			}
		}
	}

	// Build the response: all partitions for a full fetch, the ones with
	// news for an incremental one, grouped in runs of the same topic.
	var (
		out      []fetchRespTopic
		returned map[*sessionPart]bool
	)
	for i := range items {
		it := &items[i]
		rp := fetchRespPartition{partition: it.key.partition, hw: -1, lso: -1, logStart: -1}
		if it.err != nil {
			rp.errCode = errorCode(it.err)
		} else if r := it.res; r != nil {
			if r.Err != nil {
				rp.errCode = errorCode(r.Err)
				if ErrorFor(r.Err) == kerr.UnknownServerError {
					g.log.Warn("fetch failed", "topic", it.name, "partition", it.key.partition, "err", r.Err)
				}
			}
			rp.hw, rp.lso, rp.logStart = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
			rp.records = r.Records
			if req.IsolationLevel == 1 {
				rp.aborted = r.AbortedTransactions
				if rp.aborted == nil {
					rp.aborted = []ring.AbortedTxn{}
				}
			}
		}
		if sp := it.sp; sp != nil {
			news := rp.errCode != 0 || rp.records.Size() > 0 ||
				rp.hw != sp.sentHW || rp.lso != sp.sentLSO || rp.logStart != sp.sentLogStart
			sp.sentHW, sp.sentLSO, sp.sentLogStart = rp.hw, rp.lso, rp.logStart
			if rp.records.Size() > 0 {
				if returned == nil {
					returned = map[*sessionPart]bool{}
				}
				returned[sp] = true
			}
			if !full && !news {
				continue
			}
		}
		if n := len(out); n == 0 || out[n-1].name != it.name || out[n-1].id != it.id {
			out = append(out, fetchRespTopic{name: it.name, id: it.id})
		}
		out[len(out)-1].parts = append(out[len(out)-1].parts, rp)
	}
	if fs != nil {
		fs.rotate(returned)
	}

	var sessionID int32
	if fs != nil {
		sessionID = fs.id
	}
	rc.raw = encodeFetchResponse(req.Version, 0, sessionID, out)
	rc.raw.OnRelease(result.Release)
	return nil, nil
}
