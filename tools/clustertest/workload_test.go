package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// history collects every write's outcome from every producer.
type history struct {
	mu     sync.Mutex
	writes []Write
	acked  atomic.Int64
}

func (h *history) add(w Write) {
	h.mu.Lock()
	h.writes = append(h.writes, w)
	h.mu.Unlock()
	if w.Outcome == Acked {
		h.acked.Add(1)
	}
}

func (h *history) snapshot() []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Write(nil), h.writes...)
}

// classify sorts a produce error: Kafka's retriable codes, and kgo's own
// delivery timeout and retry limit (which it reaches only by retrying such
// codes), are retriable; the rest, the writes cancelled at the end of the
// run included, are not.
func classify(err error) (Outcome, string) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		if ke.Retriable {
			return FailedRetriable, ke.Message
		}
		return FailedOther, ke.Message
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		return FailedRetriable, err.Error()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return FailedOther, "cancelled at the end of the run"
	}
	return FailedOther, err.Error()
}

// producerOpts are the options of every test producer: franz-go's
// defaults (idempotent, acks=all, unlimited retries) with a delivery
// timeout, so that a write stuck behind a partition with no leader fails
// and is counted instead of waiting for the end of the run.
func producerOpts(topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(20 * time.Second),
	}
}

// producer writes unique values ("<name>-<seq>") round robin over the
// partitions at a bounded rate and in-flight count, recording each
// outcome, until its context ends.
type producer struct {
	name       string
	cl         *kgo.Client
	partitions int32
	rate       int // records per second
	hist       *history
}

func (p *producer) run(ctx, produceCtx context.Context) {
	const maxInFlight = 256
	sem := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	perTick := p.rate / 100
	if perTick < 1 {
		perTick = 1
	}
	var seq int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i := 0; i < perTick; i++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			s := seq
			seq++
			part := int32(s % int64(p.partitions))
			value := fmt.Sprintf("%s-%08d", p.name, s)
			rec := &kgo.Record{Partition: part, Key: []byte(p.name), Value: []byte(value)}
			sent := time.Now()
			// produceCtx outlives ctx: the writes in flight when the run
			// stops get the flush's time to finish.
			p.cl.Produce(produceCtx, rec, func(r *kgo.Record, err error) {
				<-sem
				w := Write{Producer: p.name, Seq: s, Value: value, Partition: part, Sent: sent, Done: time.Now()}
				if err == nil {
					w.Outcome, w.Offset = Acked, r.Offset
				} else {
					w.Outcome, w.Err = classify(err)
				}
				p.hist.add(w)
			})
		}
	}
}

// workload is the producers of a test: one client per producer, each
// seeded with a single gateway, alternating between the gateways.
type workload struct {
	hist      *history
	producers []*producer
	cancel    context.CancelFunc // stops producing
	abort     context.CancelFunc // fails the writes still in flight
	wg        sync.WaitGroup
}

func startWorkload(t *testing.T, c *cluster, topic string, partitions int32, n, rate int) *workload {
	t.Helper()
	w := &workload{hist: &history{}}
	ctx, cancel := context.WithCancel(context.Background())
	produceCtx, abort := context.WithCancel(context.Background())
	w.cancel, w.abort = cancel, abort
	gws := sortedIDs(c.gateways)
	for i := 0; i < n; i++ {
		gw := gws[i%len(gws)]
		p := &producer{name: fmt.Sprintf("w%d-gw%d", i, gw), cl: c.kgoClient(gw, producerOpts(topic)...),
			partitions: partitions, rate: rate, hist: w.hist}
		w.producers = append(w.producers, p)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			p.run(ctx, produceCtx)
		}()
	}
	t.Cleanup(w.close)
	return w
}

// stop ends producing and waits up to flushTimeout for the writes in
// flight; those still unanswered then are cancelled (and recorded as
// failed).
func (w *workload) stop(t *testing.T, flushTimeout time.Duration) {
	t.Helper()
	w.cancel()
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range w.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.cl.Flush(ctx); err != nil {
				t.Logf("%s: writes still unanswered %v after the run: cancelling them", p.name, flushTimeout)
			}
		}()
	}
	wg.Wait()
	w.close()
}

// close cancels whatever is in flight and closes the clients; Close runs
// every outstanding promise, so the history is complete after it.
func (w *workload) close() {
	w.cancel()
	w.wg.Wait()
	w.abort()
	for _, p := range w.producers {
		p.cl.Close()
	}
}

// probe writes to every partition one record at a time, through both
// gateways, with short retry backoffs and metadata refreshes, so that the
// moment a partition takes writes again after its leader died is known to
// within a few tens of milliseconds. Its writes are in the history like
// any other.
type probe struct {
	cl   *kgo.Client
	hist *history
	mu   sync.Mutex
	acks map[int32][]probeAck // per partition, in order
	wg   sync.WaitGroup
	// stop ends the loops after their write in flight; abort fails that
	// write, for when it does not finish.
	stop, abort context.CancelFunc
}

func startProbe(t *testing.T, c *cluster, topic string, partitions int32, hist *history) *probe {
	t.Helper()
	var seeds []string
	for _, id := range sortedIDs(c.gateways) {
		seeds = append(seeds, c.kafka[id])
	}
	opts := append(producerOpts(topic), kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	pr := &probe{cl: cl, hist: hist, acks: map[int32][]probeAck{}}
	ctx, cancel := context.WithCancel(context.Background())
	produceCtx, abort := context.WithCancel(context.Background())
	pr.stop, pr.abort = cancel, abort
	for part := int32(0); part < partitions; part++ {
		pr.wg.Add(1)
		go func() {
			defer pr.wg.Done()
			pr.run(ctx, produceCtx, part)
		}()
	}
	t.Cleanup(pr.close)
	return pr
}

func (pr *probe) run(ctx, produceCtx context.Context, part int32) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	name := fmt.Sprintf("probe-p%d", part)
	for seq := int64(0); ; seq++ {
		value := fmt.Sprintf("%s-%08d", name, seq)
		sent := time.Now()
		r, err := pr.cl.ProduceSync(produceCtx, &kgo.Record{Partition: part, Value: []byte(value)}).First()
		now := time.Now()
		w := Write{Producer: name, Seq: seq, Value: value, Partition: part, Sent: sent, Done: now}
		if err == nil {
			w.Outcome, w.Offset = Acked, r.Offset
			pr.mu.Lock()
			pr.acks[part] = append(pr.acks[part], probeAck{at: now, offset: r.Offset})
			pr.mu.Unlock()
		} else {
			w.Outcome, w.Err = classify(err)
		}
		pr.hist.add(w)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeAck is one acknowledged probe write.
type probeAck struct {
	at     time.Time
	offset int64
}

// firstAckAfter returns the first ack on part after t for which ok (nil:
// any) holds.
func (pr *probe) firstAckAfter(part int32, t time.Time, ok func(probeAck) bool) (probeAck, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	acks := pr.acks[part]
	for i := sort.Search(len(acks), func(i int) bool { return acks[i].at.After(t) }); i < len(acks); i++ {
		if ok == nil || ok(acks[i]) {
			return acks[i], true
		}
	}
	return probeAck{}, false
}

// close stops the probe, giving the writes in flight up to 30 s.
func (pr *probe) close() {
	pr.stop()
	done := make(chan struct{})
	go func() {
		pr.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		pr.abort()
		<-done
	}
	pr.abort()
	pr.cl.Close()
}

// offsets reads every partition's log start and high watermark through
// one gateway.
func offsets(ctx context.Context, c *cluster, gw int32, topic string) (start, hw map[int32]int64, err error) {
	cl := c.kgoClient(gw)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	s, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = s.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list start offsets: %w", err)
	}
	e, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = e.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list end offsets: %w", err)
	}
	start, hw = map[int32]int64{}, map[int32]int64{}
	s.Each(func(o kadm.ListedOffset) { start[o.Partition] = o.Offset })
	e.Each(func(o kadm.ListedOffset) { hw[o.Partition] = o.Offset })
	return start, hw, nil
}

// readAll reads every partition from start to hw through one gateway.
func readAll(ctx context.Context, c *cluster, gw int32, topic string, start, hw map[int32]int64) (map[int32]Log, error) {
	logs := map[int32]Log{}
	from := map[int32]kgo.Offset{}
	left := 0
	for p, s := range start {
		logs[p] = Log{Start: s, HW: hw[p]}
		if hw[p] > s {
			from[p] = kgo.NewOffset().At(s)
			left++
		}
	}
	if left == 0 {
		return logs, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.kafka[gw]), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxBytes(16<<20))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	done := map[int32]bool{}
	var fetchErrs []string
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			var missing []string
			for p, l := range logs {
				if !done[p] && l.HW > l.Start {
					missing = append(missing, fmt.Sprintf("p%d read %d of [%d,%d)", p, len(l.Records), l.Start, l.HW))
				}
			}
			return logs, fmt.Errorf("reading through gateway %d: %v; unfinished: %v; fetch errors: %v", gw, ctx.Err(), missing, fetchErrs)
		}
		fs.EachError(func(_ string, p int32, err error) {
			if len(fetchErrs) < 10 {
				fetchErrs = append(fetchErrs, fmt.Sprintf("p%d: %v", p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			l := logs[r.Partition]
			if r.Offset < l.HW {
				l.Records = append(l.Records, Record{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), Epoch: r.LeaderEpoch})
				logs[r.Partition] = l
			}
			if r.Offset >= l.HW-1 && !done[r.Partition] {
				done[r.Partition] = true
				left--
			}
		})
	}
	return logs, nil
}

// tailer consumes every partition from the start while the test runs,
// checking as it goes that offsets follow one another; at the end it must
// have reached the high watermarks.
type tailer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	next map[int32]int64
	read int
	errs []string
	wg   sync.WaitGroup
	stop context.CancelFunc
}

func startTailer(t *testing.T, c *cluster, gw int32, topic string, partitions int32) *tailer {
	t.Helper()
	from := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		from[p] = kgo.NewOffset().AtStart()
	}
	tl := &tailer{cl: c.kgoClient(gw, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})), next: map[int32]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	tl.stop = cancel
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		for {
			fs := tl.cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			tl.mu.Lock()
			fs.EachError(func(_ string, p int32, err error) {
				if len(tl.errs) < 10 {
					tl.errs = append(tl.errs, fmt.Sprintf("fetch p%d: %v", p, err))
				}
			})
			fs.EachRecord(func(r *kgo.Record) {
				if n, ok := tl.next[r.Partition]; ok && r.Offset != n && len(tl.errs) < 10 {
					tl.errs = append(tl.errs, fmt.Sprintf("p%d: offset %d after %d", r.Partition, r.Offset, n-1))
				}
				tl.next[r.Partition] = r.Offset + 1
				tl.read++
			})
			tl.mu.Unlock()
		}
	}()
	t.Cleanup(tl.close)
	return tl
}

// caughtUp reports whether the tailer has read up to hw everywhere.
func (tl *tailer) caughtUp(hw map[int32]int64) (bool, string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for p, h := range hw {
		if h > 0 && tl.next[p] < h {
			return false, fmt.Sprintf("p%d at %d of %d (%d records read)", p, tl.next[p], h, tl.read)
		}
	}
	return true, ""
}

func (tl *tailer) close() {
	tl.stop()
	tl.wg.Wait()
	tl.cl.Close()
}
