package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/aerostream/aerostream/logstore/ring"
)

// The group coordinator (classic protocol) runs inside the gateway. It is
// built from three owners:
//
//   - the coordinator: a registry of groups, the committed offsets of
//     groups that have no live state (dormant), and the loading of
//     __consumer_offsets. Its maps sit behind one mutex;
//   - one goroutine per live group, owning everything about the group:
//     members, generation, chosen protocol, assignments, committed
//     offsets, timers. Requests reach it as closures on an unbuffered
//     channel and it answers on a channel of the handler's. A group with
//     no members and nothing in flight retires: its offsets go back to the
//     dormant map and its goroutine ends;
//   - __consumer_offsets, the durable half: every commit is appended (acks
//     all) before it is acknowledged, as Kafka's own key/value records
//     (OffsetCommitKey v1, OffsetCommitValue v3; a null value deletes), and
//     read back at startup, latest record per group/topic/partition
//     winning. Group membership is not written: it is soft state, rebuilt
//     by the clients' rejoining after a restart.
//
// See doc.go for what this means with several gateways.

// tp names a partition of a topic.
type tp struct {
	topic     string
	partition int32
}

// committed is a committed offset.
type committed struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
}

type coordinator struct {
	g   *Gateway
	log *slog.Logger

	ready chan struct{} // closed once the offsets are loaded (or on shutdown)
	// Set by run before ready is closed, read-only after.
	ctx       context.Context
	parts     int32
	catchUpMu []sync.Mutex // per partition: one reader at a time

	wg sync.WaitGroup // group goroutines and background work

	mu struct {
		sync.Mutex
		active map[string]*group
		// dormant holds the offsets of groups without live state. A
		// group with no offsets stays (empty map) for emptyGroupRetention
		// after it retires, as Kafka keeps an empty group until its
		// periodic cleanup, so that DescribeGroups, ListGroups and
		// DeleteGroups still find it.
		dormant map[string]map[tp]committed
		// dormantType keeps the protocol type that members joined a
		// dormant group with: Kafka keeps it once the group is empty, and
		// clients take a group without one for a simple (offsets-only)
		// group.
		dormantType map[string]string
		// dormantConsumer holds the KIP-848 state of consumer groups
		// without live state (groups_consumer.go).
		dormantConsumer map[string]*consumerGroup
		emptyAt         map[string]time.Time
		loadedTo        []int64 // per partition: the offset read up to
		stopping        bool
	}
}

func newCoordinator(g *Gateway) *coordinator {
	c := &coordinator{g: g, log: g.log.With("part", "group-coordinator"), ready: make(chan struct{})}
	c.mu.active = map[string]*group{}
	c.mu.dormant = map[string]map[tp]committed{}
	c.mu.dormantType = map[string]string{}
	c.mu.dormantConsumer = map[string]*consumerGroup{}
	c.mu.emptyAt = map[string]time.Time{}
	return c
}

// emptyGroupRetention is how long a group with neither members nor
// offsets is remembered (Kafka drops such groups at its next cleanup,
// offsets.retention.check.interval.ms, 10 minutes).
const emptyGroupRetention = 10 * time.Minute

// forgetEmpty drops the empty groups retired more than
// emptyGroupRetention ago, tombstoning the metadata of those that have
// some, as Kafka's cleanup does.
func (c *coordinator) forgetEmpty(ctx context.Context, now time.Time) {
	c.mu.Lock()
	var expired []string
	for id, at := range c.mu.emptyAt {
		if now.Sub(at) >= emptyGroupRetention {
			expired = append(expired, id)
		}
	}
	c.mu.Unlock()
	for _, id := range expired {
		c.forgetOne(ctx, id, now)
	}
}

func (c *coordinator) forgetOne(ctx context.Context, id string, now time.Time) {
	// Holding the partition's catch-up lock keeps the group from being
	// revived while its tombstone is written.
	p := c.partitionFor(id)
	c.catchUpMu[p].Lock()
	defer c.catchUpMu[p].Unlock()
	c.mu.Lock()
	at, ok := c.mu.emptyAt[id]
	offs, dormant := c.mu.dormant[id]
	_, typed := c.mu.dormantType[id]
	c.mu.Unlock()
	if !ok || now.Sub(at) < emptyGroupRetention {
		return
	}
	if dormant && len(offs) == 0 && typed {
		if err := c.tombstoneGroup(ctx, id); err != nil {
			c.log.Warn("forgetting an empty group", "group", id, "err", err)
			return // tried again at the next tick
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.emptyAt, id)
	if offs, ok := c.mu.dormant[id]; ok && len(offs) == 0 {
		delete(c.mu.dormant, id)
		delete(c.mu.dormantType, id)
	}
}

// run loads the committed offsets (retrying while the store or the
// metadata is unreachable), serves until ctx ends, then waits for every
// group goroutine to stop.
func (c *coordinator) run(ctx context.Context) {
	c.ctx = ctx
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := c.load(ctx)
		if err == nil {
			c.mu.Lock()
			groups := len(c.mu.dormant)
			c.mu.Unlock()
			c.log.Info("committed offsets loaded", "topic", offsetsTopic, "partitions", c.parts, "groups", groups, "took", time.Since(start).Round(time.Millisecond))
			break
		}
		if ctx.Err() != nil {
			break
		}
		if attempt%10 == 0 {
			c.log.Warn("loading committed offsets, will retry", "err", err)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
	c.mu.Lock()
	if ctx.Err() != nil {
		c.mu.stopping = true
	}
	c.mu.Unlock()
	close(c.ready)
	t := time.NewTicker(time.Minute)
	for done := false; !done; {
		select {
		case now := <-t.C:
			c.forgetEmpty(ctx, now)
		case <-ctx.Done():
			done = true
		}
	}
	t.Stop()
	c.mu.Lock()
	c.mu.stopping = true
	c.mu.Unlock()
	c.wg.Wait()
}

// load makes sure __consumer_offsets exists and reads all of it.
func (c *coordinator) load(ctx context.Context) error {
	t, err := c.g.cluster.Topic(ctx, offsetsTopic)
	if errors.Is(err, ErrUnknownTopic) {
		t, err = c.g.createInternal(ctx, CreateTopic{
			Name: offsetsTopic, Partitions: c.g.opts.OffsetsPartitions,
			// Compacted, as in Kafka: the latest commit of each group and
			// partition stays, and a tombstone removes it.
			Configs: map[string]*string{"cleanup.policy": ptr("compact")},
		})
		if errors.Is(err, ErrTopicExists) {
			t, err = c.g.cluster.Topic(ctx, offsetsTopic)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", offsetsTopic, err)
	}
	if t.Partitions <= 0 {
		return fmt.Errorf("%s has no partitions", offsetsTopic)
	}
	if c.catchUpMu == nil {
		c.parts = t.Partitions
		c.catchUpMu = make([]sync.Mutex, t.Partitions)
		c.mu.Lock()
		c.mu.loadedTo = make([]int64, t.Partitions)
		c.mu.Unlock()
	}
	for p := int32(0); p < c.parts; p++ {
		if err := c.catchUp(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// partitionFor is Kafka's choice of offsets partition for a group: the
// Java hash code of the group id, made non-negative, modulo the partition
// count.
func (c *coordinator) partitionFor(group string) int32 { return javaHashPartition(group, c.parts) }

// internalRecord is a record of an internal topic with the base offset of
// its batch.
type internalRecord struct {
	off int64
	r   record
}

// readInternalChunk reads one fetch of an internal topic's partition p
// from offset from: the records a coordinator wrote (uncompressed, not
// control batches) and the offset after the last whole batch. The group
// and transaction coordinators both catch up on their topics this way.
func (g *Gateway) readInternalChunk(ctx context.Context, topic string, p int32, from int64) ([]internalRecord, int64, error) {
	res, err := g.backend.Fetch(ctx, &ring.FetchRequest{
		Partitions: []ring.FetchPartition{{Topic: topic, Partition: p, Offset: from, MaxBytes: 1 << 20}},
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s/%d at %d: %w", topic, p, from, err)
	}
	pr := res.Partitions[0]
	if pr.Err != nil {
		res.Release()
		return nil, 0, fmt.Errorf("reading %s/%d at %d: %w", topic, p, from, pr.Err)
	}
	data, err := pr.Records.ReadAll(nil)
	res.Release()
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s/%d at %d: %w", topic, p, from, err)
	}
	var recs []internalRecord
	next, err := readBatches(data, func(b batchInfo, r record) error {
		if b.compressed || b.control {
			return nil // not written by a coordinator
		}
		recs = append(recs, internalRecord{b.baseOffset, r})
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s/%d at %d: %w", topic, p, from, err)
	}
	if next <= from {
		return nil, 0, fmt.Errorf("%s/%d: no whole batch at offset %d", topic, p, from)
	}
	return recs, next, nil
}

// catchUp reads partition p of __consumer_offsets from where it was last
// read up to its high watermark, into the dormant map. Records of live
// groups are skipped: a live group's goroutine holds the newest state.
func (c *coordinator) catchUp(ctx context.Context, p int32) error {
	c.catchUpMu[p].Lock()
	defer c.catchUpMu[p].Unlock()
	c.mu.Lock()
	from := c.mu.loadedTo[p]
	c.mu.Unlock()
	info, err := c.g.backend.DescribePartition(ctx, offsetsTopic, p)
	if err != nil {
		return fmt.Errorf("%s/%d: %w", offsetsTopic, p, err)
	}
	from = max(from, info.LogStartOffset)
	for from < info.HighWatermark {
		recs, next, err := c.g.readInternalChunk(ctx, offsetsTopic, p, from)
		if err != nil {
			return err
		}
		var live []func(*group)
		var to []*group
		c.mu.Lock()
		for _, r := range recs {
			if fn, gr := c.txnAppliedLocked(r.r); gr != nil {
				live, to = append(live, fn), append(to, gr)
				continue
			}
			c.applyLocked(r.r)
		}
		c.mu.loadedTo[p] = next
		c.mu.Unlock()
		// Holding catchUpMu[p] keeps these groups from retiring (retire).
		for i, fn := range live {
			select {
			case to[i].reqs <- fn:
			case <-to[i].done:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		from = next
	}
	return nil
}

// catchUpLive reads the partition of a group this gateway coordinates
// and holds live, so that offsets another gateway's transaction
// coordinator committed for it are set (txnAppliedLocked) before it
// answers. Anything else is left to call.
func (c *coordinator) catchUpLive(ctx context.Context, id string) error {
	select {
	case <-c.ready:
	default:
		return nil
	}
	c.mu.Lock()
	live := c.mu.active[id] != nil
	c.mu.Unlock()
	if !live {
		return nil
	}
	if err := c.catchUp(ctx, c.partitionFor(id)); err != nil {
		c.log.Warn("catching up on committed offsets", "group", id, "err", err)
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	return nil
}

// txnAppliedLocked returns, for a txnAppliedKey record of a group this
// gateway holds live, the function that sets its offsets in the group's
// loop, and the group; else nil, nil (a dormant group takes the ordinary
// offset records beside it).
func (c *coordinator) txnAppliedLocked(r record) (func(*group), *group) {
	if len(r.key) < 2 || int16(r.key[0])<<8|int16(r.key[1]) != txnAppliedKey {
		return nil, nil
	}
	id, offs, err := readTxnApplied(r)
	if err != nil {
		c.log.Warn("skipping a malformed transactional offsets record", "err", err)
		return nil, nil
	}
	gr := c.mu.active[id]
	if gr == nil {
		return nil, nil
	}
	return func(gr *group) {
		if gr.offsets == nil {
			gr.offsets = map[tp]committed{}
		}
		for k, o := range offs {
			gr.offsets[k] = o
		}
	}, gr
}

// applyLocked applies one __consumer_offsets record to the dormant map.
func (c *coordinator) applyLocked(r record) {
	if len(r.key) < 2 {
		return
	}
	switch int16(r.key[0])<<8 | int16(r.key[1]) {
	case 0, 1: // offset commit
	case cgSnapshotKey:
		c.applyConsumerSnapshotLocked(r)
		return
	case groupConfigKey:
		c.applyGroupConfigLocked(r)
		return
	case shareStateKey:
		c.applyShareStateLocked(r)
		return
	case shareMemberGoneKey:
		c.applyShareMemberGoneLocked(r)
		return
	case 2:
		c.applyGroupMetadataLocked(r)
		return
	default:
		return // others (KIP-848 records): not ours to read
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.key); err != nil {
		c.log.Warn("skipping a malformed offset commit key", "err", err)
		return
	}
	if c.mu.active[k.Group] != nil {
		return
	}
	offs := c.mu.dormant[k.Group]
	key := tp{k.Topic, k.Partition}
	if r.value == nil {
		if offs != nil {
			delete(offs, key)
			if _, typed := c.mu.dormantType[k.Group]; len(offs) == 0 && typed {
				// Kafka keeps an empty group that has metadata until its
				// cleanup.
				c.mu.emptyAt[k.Group] = time.Now()
			} else if len(offs) == 0 {
				delete(c.mu.dormant, k.Group)
			}
		}
		return
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.value); err != nil {
		c.log.Warn("skipping a malformed offset commit value", "group", k.Group, "err", err)
		return
	}
	if offs == nil {
		offs = map[tp]committed{}
		c.mu.dormant[k.Group] = offs
	}
	offs[key] = committed{offset: v.Offset, leaderEpoch: v.LeaderEpoch, metadata: v.Metadata, commitTs: v.CommitTimestamp}
}

// offsetRecord encodes a commit (or, with c nil, its deletion) as Kafka
// writes it to __consumer_offsets.
func offsetRecord(group string, key tp, c *committed) record {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: key.topic, Partition: key.partition}
	r := record{key: k.AppendTo(nil)}
	if c != nil {
		v := kmsg.NewOffsetCommitValue()
		v.Version = 3
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = c.offset, c.leaderEpoch, c.metadata, c.commitTs
		r.value = v.AppendTo(nil)
	}
	return r
}

// write appends records to partition p of __consumer_offsets and returns
// once the store has made them durable under its flush policy (acks all).
// Large writes are cut into batches well under max.message.bytes.
func (c *coordinator) write(ctx context.Context, p int32, recs []record) error {
	const maxBatch = 256 << 10
	now := time.Now().UnixMilli()
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && (n == 0 || size+len(recs[n].key)+len(recs[n].value)+32 < maxBatch) {
			size += len(recs[n].key) + len(recs[n].value) + 32
			n++
		}
		_, err := c.g.backend.Produce(ctx, &ring.ProduceRequest{
			Topic: offsetsTopic, Partition: p, Acks: -1, Records: appendBatch(nil, now, recs[:n]),
		})
		if err != nil {
			return fmt.Errorf("writing %s/%d: %w", offsetsTopic, p, err)
		}
		recs = recs[n:]
	}
	return nil
}

// errGroupGone tells call's caller that the group does not exist (and was
// not to be created).
var errGroupGone = errors.New("group does not exist")

// coordinatorFor is the gateway that coordinates a group or a
// transactional id: the id's FNV-1a hash over the live gateways (node id
// order), so every gateway answers FindCoordinator alike. It is not how
// partitions are placed (partitionLeader).
func coordinatorFor(id string, brokers []Broker) Broker {
	if len(brokers) == 1 {
		return brokers[0]
	}
	h := fnv.New32a()
	h.Write([]byte(id))
	// The "-1" suffix is what this hash has always covered: keeping it
	// keeps every id on the same gateway across an upgrade.
	h.Write([]byte("-1"))
	return brokers[h.Sum32()%uint32(len(brokers))]
}

// call runs fn on the goroutine of group id. With create, a group that does
// not exist is made; without, call returns errGroupGone for it. fn must
// answer its caller on a channel the caller waits on.
func (c *coordinator) call(ctx context.Context, id string, create bool, fn func(gr *group)) error {
	select {
	case <-c.ready:
	default:
		return errCoordinatorLoading
	}
	if id == "" {
		return fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	}
	if b := coordinatorFor(id, c.g.brokers(ctx)); b.NodeID != c.g.opts.NodeID {
		return kerr.NotCoordinator
	}
	for {
		c.mu.Lock()
		if c.mu.stopping {
			c.mu.Unlock()
			return kerr.CoordinatorNotAvailable
		}
		gr := c.mu.active[id]
		c.mu.Unlock()
		if gr == nil {
			p := c.partitionFor(id)
			if err := c.catchUp(ctx, p); err != nil {
				c.log.Warn("catching up on committed offsets", "group", id, "err", err)
				return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
			}
			c.mu.Lock()
			if c.mu.stopping {
				c.mu.Unlock()
				return kerr.CoordinatorNotAvailable
			}
			gr = c.mu.active[id]
			if gr == nil {
				offs, ok := c.mu.dormant[id]
				_, isCG := c.mu.dormantConsumer[id]
				ok = ok || isCG
				if !ok && !create {
					c.mu.Unlock()
					return errGroupGone
				}
				gr = newGroup(c, id, p, offs)
				gr.protocolType = c.mu.dormantType[id]
				if gr.cg = c.mu.dormantConsumer[id]; gr.cg != nil {
					gr.protocolType = "consumer"
				}
				delete(c.mu.dormantConsumer, id)
				delete(c.mu.dormant, id)
				delete(c.mu.dormantType, id)
				delete(c.mu.emptyAt, id)
				c.mu.active[id] = gr
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					gr.loop(c.ctx)
				}()
			}
			c.mu.Unlock()
		}
		select {
		case gr.reqs <- fn:
			return nil
		case <-gr.done:
			// The group retired as we reached it; look again.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// retire removes an idle group from the registry, keeping its offsets as
// dormant. It fails (and the group lives on) while its offsets partition is
// being read, since that read must not see the group half-retired.
func (c *coordinator) retire(gr *group) bool {
	if !c.catchUpMu[gr.part].TryLock() {
		return false
	}
	defer c.catchUpMu[gr.part].Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.mu.active, gr.id)
	switch {
	case gr.state == groupDead: // deleted: forget it
	case len(gr.offsets) > 0:
		c.mu.dormant[gr.id] = gr.offsets
	default:
		c.mu.dormant[gr.id] = gr.offsets
		c.mu.emptyAt[gr.id] = time.Now()
	}
	if gr.state != groupDead && gr.cg != nil {
		c.mu.dormantConsumer[gr.id] = gr.cg
	}
	if gr.state != groupDead && gr.protocolType != "" {
		c.mu.dormantType[gr.id] = gr.protocolType
	}
	close(gr.done)
	return true
}

// groupSummary is what ListGroups shows of a group.
type groupSummary struct {
	id, protocolType, state string
	typ                     string // classic, consumer or share
}

// list summarizes every group: live ones by asking them, dormant ones
// (offsets only) as Empty.
func (c *coordinator) list(ctx context.Context) ([]groupSummary, error) {
	select {
	case <-c.ready:
	default:
		return nil, errCoordinatorLoading
	}
	c.mu.Lock()
	var out []groupSummary
	live := make([]*group, 0, len(c.mu.active))
	for _, gr := range c.mu.active {
		live = append(live, gr)
	}
	for id := range c.mu.dormant {
		gs := groupSummary{id: id, protocolType: c.mu.dormantType[id], state: "Empty", typ: "classic"}
		if c.mu.dormantConsumer[id] != nil {
			gs.protocolType, gs.typ = "consumer", "consumer"
		}
		if gs.protocolType == "share" {
			gs.typ = "share"
		}
		out = append(out, gs)
	}
	c.mu.Unlock()
	for _, gr := range live {
		ch := make(chan groupSummary, 1)
		select {
		case gr.reqs <- func(gr *group) { ch <- gr.summary() }:
			out = append(out, <-ch)
		case <-gr.done:
			// Retired meanwhile: its offsets are dormant now, and listed
			// next time.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// topicDeleted drops the committed offsets of a deleted topic from every
// group, writing tombstones, as Kafka does. It runs in the background.
func (c *coordinator) topicDeleted(topic string) {
	select {
	case <-c.ready:
	default:
		return // still loading: nothing to drop yet that load will not see
	}
	c.mu.Lock()
	if c.mu.stopping {
		c.mu.Unlock()
		return
	}
	var ids []string
	for id, offs := range c.mu.dormant {
		for k := range offs {
			if k.topic == topic {
				ids = append(ids, id)
				break
			}
		}
	}
	for id := range c.mu.active {
		ids = append(ids, id)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		for _, id := range ids {
			done := make(chan struct{})
			err := c.call(c.ctx, id, false, func(gr *group) {
				defer close(done)
				gr.deleteOffsets(func(k tp) bool { return k.topic == topic })
			})
			if err == nil {
				select {
				case <-done:
				case <-c.ctx.Done():
					return
				}
			}
		}
	}()
}
