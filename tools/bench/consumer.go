package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// subscription is one topic's consumer group (or, in assign mode, the set
// of consumers that split its partitions).
type subscription struct {
	topic      string
	group      string
	partitions int32
	assigned   atomic.Int64 // partitions held by its members, group mode
}

// consumer is one kgo client reading one subscription, driven by one
// goroutine (run).
type consumer struct {
	cl *kgo.Client // nil with the native driver
	// The native driver's SDK consumer and its client.
	nat   *client.Consumer
	natCl *client.Client

	sub *subscription
	e2e *Recorder
	log *logOnce

	// assigned is how many partitions this member holds, group mode.
	assigned atomic.Int64

	msgs, bytes, errs atomic.Int64
	// foreign counts records too short to hold a send timestamp or whose
	// timestamp is not plausible: not this run's, or not from a bench.
	foreign atomic.Int64
}

func newConsumer(cfg *Config, id int, sub *subscription, fromStart bool, log *logOnce, wire *wireCounter) (*consumer, error) {
	c := &consumer{sub: sub, e2e: NewRecorder(), log: log}
	reset := kgo.NewOffset().AtEnd()
	if fromStart {
		reset = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(fmt.Sprintf("aerostream-bench-consumer-%d", id)),
		kgo.WithHooks(wire),
	}
	switch cfg.ConsumeMode {
	case ConsumeGroup:
		opts = append(opts,
			kgo.ConsumerGroup(sub.group),
			kgo.ConsumeTopics(sub.topic),
			kgo.ConsumeResetOffset(reset),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				sub.assigned.Add(int64(len(m[sub.topic])))
				c.assigned.Add(int64(len(m[sub.topic])))
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				sub.assigned.Add(-int64(len(m[sub.topic])))
				c.assigned.Add(-int64(len(m[sub.topic])))
			}),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				sub.assigned.Add(-int64(len(m[sub.topic])))
				c.assigned.Add(-int64(len(m[sub.topic])))
			}),
		)
	case ConsumeAssign:
		parts := map[int32]kgo.Offset{}
		for p := int32(0); p < sub.partitions; p++ {
			if int(p)%cfg.Consumers == id%cfg.Consumers {
				parts[p] = reset
			}
		}
		if len(parts) == 0 {
			return nil, nil // more consumers than partitions: this one idles
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{sub.topic: parts}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	c.cl = cl
	return c, nil
}

// plausible bounds a send timestamp against the consume time.
const plausibleSkew = time.Hour

func (c *consumer) run(ctx context.Context) {
	if c.nat != nil {
		c.runNative(ctx)
		return
	}
	for {
		fs := c.cl.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			c.errs.Add(1)
			c.log.printf("fetch %s/%d: %v", t, p, err)
		})
		now := time.Now()
		nowNs := now.UnixNano()
		var n, b, foreign int64
		fs.EachRecord(func(r *kgo.Record) {
			n++
			b += int64(len(r.Value))
			if len(r.Value) < minMessageSize {
				foreign++
				return
			}
			d := time.Duration(nowNs - int64(binary.BigEndian.Uint64(r.Value)))
			if d < -time.Second || d > plausibleSkew {
				foreign++
				return
			}
			c.e2e.Record(d)
		})
		c.msgs.Add(n)
		c.bytes.Add(b)
		c.foreign.Add(foreign)
	}
}

// logOnce prints each distinct message once, and at most logOnceMax in
// all, so that a broker failing every fetch does not bury the progress
// lines.
type logOnce struct {
	w  io.Writer
	mu struct {
		sync.Mutex
		seen map[string]bool
	}
}

const logOnceMax = 50

func newLogOnce(w io.Writer) *logOnce {
	l := &logOnce{w: w}
	l.mu.seen = map[string]bool{}
	return l
}

func (l *logOnce) printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.seen[msg] || len(l.mu.seen) > logOnceMax {
		return
	}
	l.mu.seen[msg] = true
	if len(l.mu.seen) > logOnceMax {
		msg = "further errors not shown"
	}
	fmt.Fprintf(l.w, "bench: %s\n", msg)
}
