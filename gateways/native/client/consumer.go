package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Message is a consumed record.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte // nil: no key
	Value     []byte // nil: a tombstone
	Headers   []wire.Header
}

// Start positions for ConsumerOptions.Start and Seek.
const (
	// StartEarliest reads from each partition's log start.
	StartEarliest int64 = -2
	// StartLatest reads only records produced from now on.
	StartLatest int64 = -1
)

// ConsumerOptions configure a Consumer.
type ConsumerOptions struct {
	Topic string
	// Partitions to read; nil reads all of them.
	Partitions []int32
	// Start is an offset (>= 0), StartEarliest or StartLatest (the
	// default: 0 means offset 0 only with StartSet).
	Start    int64
	StartSet bool
	// StartTime, when not zero, starts each partition at the first record
	// at or after it, overriding Start.
	StartTime time.Time
	// MaxWait is how long one poll waits for records; default 500ms.
	MaxWait time.Duration
	// MaxBytes bounds one poll's bytes; default 4 MiB, and per partition
	// 1 MiB.
	MaxBytes int32
	// Push reads through a server-push subscription instead of one fetch
	// per poll: the gateway sends records as they arrive, within a window
	// of CreditBytes (default 8 MiB) that Poll gives back as it hands
	// records out. No round trip per poll: the lowest latency for a
	// follower.
	Push        bool
	CreditBytes int64
}

// Consumer reads partitions of one topic from positions it keeps, on a
// connection of its own. It is not safe for concurrent use.
type Consumer struct {
	cl    *Client
	c     *conn
	topic TopicInfo
	opts  ConsumerOptions
	pos   map[int32]int64
	hw    map[int32]int64
	order []int32
	dec   wire.Decoder
	recs  []wire.Record
	msgs  []Message          // Poll's answer, reused
	resp  wire.FetchResponse // a push's, reused

	sub    uint32      // the subscription's id, while subscribed
	pushes *pushStream // its frames
	owed   int64       // bytes taken in but not yet given back as credit
	// held is the buffer of the push the last Poll's messages alias,
	// given back to pushes at the next Poll.
	held   []byte
	timer  *time.Timer
	credit wire.Credit
	// creditFill is credit.Append, bound once: a method value made per
	// Credit frame would be an allocation each.
	creditFill func([]byte) []byte

	// commit, when not nil, rides on the next fetch (FeatureFetchCommit):
	// a GroupConsumer's offsets, committed by the gateway before it
	// serves that fetch.
	commit *wire.FetchCommit
}

// NewConsumer opens a consumer on a new connection to cl's gateway and
// resolves its start positions.
func NewConsumer(ctx context.Context, cl *Client, opts ConsumerOptions) (*Consumer, error) {
	t, err := cl.Topic(ctx, opts.Topic)
	if err != nil {
		return nil, err
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 500 * time.Millisecond
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 4 << 20
	}
	if opts.CreditBytes <= 0 {
		opts.CreditBytes = 8 << 20
	}
	if !opts.StartSet && opts.Start == 0 {
		opts.Start = StartLatest
	}
	parts := opts.Partitions
	if parts == nil {
		for p := range t.Partitions {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p < 0 || p >= t.Partitions {
			return nil, fmt.Errorf("topic %s has %d partitions, no partition %d: %w", t.Name, t.Partitions, p, &Error{Code: kerr.UnknownTopicOrPartition.Code, LeaderHint: -1})
		}
	}
	c, _, err := dialHandshake(ctx, cl.addr, cl.opts)
	if err != nil {
		return nil, err
	}
	co := &Consumer{cl: cl, c: c, topic: t, opts: opts, pos: map[int32]int64{}, hw: map[int32]int64{}, order: parts}
	for _, p := range parts {
		var err error
		if !opts.StartTime.IsZero() {
			err = co.SeekTime(ctx, p, opts.StartTime)
		} else {
			err = co.Seek(ctx, p, opts.Start)
		}
		if err != nil {
			_ = c.close()
			return nil, err
		}
	}
	return co, nil
}

// Seek moves partition p to offset (or StartEarliest / StartLatest).
func (co *Consumer) Seek(ctx context.Context, p int32, offset int64) error {
	co.unsubscribe()
	if offset < 0 {
		o, err := co.cl.ListOffset(ctx, co.topic.Name, p, offset)
		if err != nil {
			return err
		}
		offset = o
	}
	co.pos[p] = offset
	return nil
}

// SeekTime moves partition p to its first record at or after t, or to its
// end when no record is that late.
func (co *Consumer) SeekTime(ctx context.Context, p int32, t time.Time) error {
	o, err := co.cl.OffsetForTime(ctx, co.topic.Name, p, t)
	if err != nil {
		return err
	}
	if o < 0 {
		return co.Seek(ctx, p, StartLatest)
	}
	co.unsubscribe()
	co.pos[p] = o
	return nil
}

// Position is the next offset the consumer reads from partition p.
func (co *Consumer) Position(p int32) int64 { return co.pos[p] }

// CaughtUp reports whether, as of the last poll, every partition's position
// had reached its high watermark.
func (co *Consumer) CaughtUp() bool {
	for _, p := range co.order {
		hw, ok := co.hw[p]
		if !ok || co.pos[p] < hw {
			return false
		}
	}
	return true
}

// Poll fetches once, waiting up to MaxWait for records, and returns those
// it got (perhaps none). The returned slice and the messages' Key, Value
// and Headers are the Consumer's and valid only until the next Poll: with
// Push, that Poll reads a later push into the same memory. Copy what you
// keep longer. A partition whose position fell below its log start
// (retention) moves to the log start.
func (co *Consumer) Poll(ctx context.Context) ([]Message, error) {
	if co.opts.Push {
		return co.pollPush(ctx)
	}
	req := wire.Fetch{MaxWaitMs: int32(co.opts.MaxWait / time.Millisecond), MinBytes: 1, MaxBytes: co.opts.MaxBytes}
	for _, p := range co.order {
		req.Partitions = append(req.Partitions, wire.FetchPartition{TopicID: co.topic.ID, Partition: p, Offset: co.pos[p], MaxBytes: min(co.opts.MaxBytes, 1<<20)})
	}
	req.Commit = co.commit
	r, err := co.c.roundTrip(ctx, wire.OpFetch, req.Append)
	if err != nil {
		return nil, err
	}
	var resp wire.FetchResponse
	if err := resp.Decode(&r); err != nil {
		return nil, err
	}
	if req.Commit != nil {
		co.commit = nil
		if !resp.HasCommit {
			return nil, fmt.Errorf("%w: a fetch carrying a commit was answered without its outcome", wire.ErrMalformed)
		}
		if resp.CommitCode != 0 {
			return nil, fmt.Errorf("commit: %w", &Error{Code: resp.CommitCode, Message: resp.CommitMessage, LeaderHint: -1})
		}
	}
	return co.absorb(ctx, &resp)
}

// absorb turns fetched partitions into messages, moving the positions.
func (co *Consumer) absorb(ctx context.Context, resp *wire.FetchResponse) ([]Message, error) {
	out := co.msgs[:0]
	defer func() { co.msgs = out[:0] }()
	for _, fp := range resp.Partitions {
		if fp.Code != 0 {
			e := &Error{Code: fp.Code, LeaderHint: -1}
			if fp.Code == kerr.OffsetOutOfRange.Code {
				if err := co.Seek(ctx, fp.Partition, StartEarliest); err != nil {
					return out, err
				}
				continue
			}
			return out, fmt.Errorf("partition %d: %w", fp.Partition, e)
		}
		co.hw[fp.Partition] = fp.HighWatermark
		rest := fp.Records
		for {
			info, batch, next, ok, err := wire.NextBatch(rest)
			if err != nil {
				return out, fmt.Errorf("partition %d: %w", fp.Partition, err)
			}
			if !ok {
				break
			}
			rest = next
			if info.Control() {
				co.pos[fp.Partition] = max(co.pos[fp.Partition], info.BaseOffset+int64(info.LastOffsetDelta)+1)
				continue
			}
			co.recs, err = co.dec.Records(co.recs[:0], &info, batch)
			if err != nil {
				return out, err
			}
			for _, rec := range co.recs {
				if rec.Offset < co.pos[fp.Partition] {
					continue // a batch starts before the position asked
				}
				out = append(out, Message{Topic: co.topic.Name, Partition: fp.Partition, Offset: rec.Offset,
					Timestamp: time.UnixMilli(rec.Timestamp), Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
			}
			co.pos[fp.Partition] = max(co.pos[fp.Partition], info.BaseOffset+int64(info.LastOffsetDelta)+1)
		}
	}
	return out, nil
}

// pollPush waits up to MaxWait for the subscription's next push.
func (co *Consumer) pollPush(ctx context.Context) ([]Message, error) {
	if co.pushes == nil {
		co.held = nil
		if err := co.subscribe(ctx); err != nil {
			return nil, err
		}
	}
	// The last Poll's messages are done with: their push's buffer takes a
	// later push.
	co.pushes.put(co.held)
	co.held = nil
	if co.timer == nil {
		co.timer = time.NewTimer(co.opts.MaxWait)
	} else {
		co.timer.Reset(co.opts.MaxWait)
	}
	defer co.timer.Stop()
	var f frame
	var ok bool
	select {
	case f, ok = <-co.pushes.ch:
		if !ok {
			return nil, co.c.closedErr()
		}
	case <-co.timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	co.held = f.payload
	r := wire.NewReader(f.payload)
	h := wire.ReadHead(&r)
	if h.Code != 0 {
		co.unsubscribe()
		return nil, &Error{Code: h.Code, Message: h.Message, LeaderHint: h.LeaderHint}
	}
	resp := &co.resp
	if err := resp.Decode(&r); err != nil {
		return nil, err
	}
	spent := int64(0)
	failed := false
	for _, fp := range resp.Partitions {
		spent += int64(len(fp.Records))
		failed = failed || fp.Code != 0
	}
	if failed {
		// The gateway ends a subscription at a partition's error: the
		// next poll subscribes again from the positions absorb leaves.
		co.unsubscribe()
	} else if co.owed += spent; co.owed >= co.opts.CreditBytes/4 {
		// Credit goes back in quarters of the window, not per push: a
		// Credit frame per push cost a write here and a read and a
		// wake-up at the gateway for every push, and the window left
		// (three quarters at least) keeps the pushes coming meanwhile.
		co.credit = wire.Credit{Subscription: co.sub, Bytes: co.owed}
		co.owed = 0
		if co.creditFill == nil {
			co.creditFill = co.credit.Append
		}
		if _, _, err := co.c.send(wire.OpCredit, true, co.creditFill); err != nil {
			return nil, err
		}
	}
	return co.absorb(ctx, resp)
}

// subscribe starts the push stream from the current positions and waits
// for its answer.
func (co *Consumer) subscribe(ctx context.Context) error {
	req := wire.Subscribe{MaxBytes: min(co.opts.MaxBytes, 1<<20), CreditBytes: co.opts.CreditBytes}
	for _, p := range co.order {
		req.Partitions = append(req.Partitions, wire.SubscribePartition{TopicID: co.topic.ID, Partition: p, Offset: co.pos[p]})
	}
	// Freed buffers are kept up to the window and one push more: the
	// window bounds the bytes in flight, so more would only sit idle.
	corr, stream, err := co.c.subscribe(co.opts.CreditBytes+int64(req.MaxBytes), req.Append)
	if err != nil {
		return err
	}
	select {
	case f, ok := <-stream.ch:
		if !ok {
			return co.c.closedErr()
		}
		r := wire.NewReader(f.payload)
		if h := wire.ReadHead(&r); h.Code != 0 {
			co.c.unsubscribeLocal(corr)
			return &Error{Code: h.Code, Message: h.Message, LeaderHint: h.LeaderHint}
		}
		stream.put(f.payload)
	case <-ctx.Done():
		co.c.unsubscribeLocal(corr)
		return ctx.Err()
	}
	co.sub, co.pushes, co.owed = corr, stream, 0
	return nil
}

// unsubscribe ends the push stream, if any; the next poll starts a new one
// from the positions.
func (co *Consumer) unsubscribe() {
	if co.pushes == nil {
		return
	}
	cr := wire.Credit{Subscription: co.sub}
	_, _, _ = co.c.send(wire.OpUnsubscribe, true, cr.Append)
	co.c.unsubscribeLocal(co.sub)
	// The held buffer stays with the messages that alias it, never
	// reused: the stream it came from is gone.
	co.sub, co.pushes, co.held = 0, nil, nil
}

// Close closes the consumer's connection.
func (co *Consumer) Close() error {
	err := co.c.close()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}
