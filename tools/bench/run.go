package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// How long setup may take before the run gives up with ErrNotReady.
const (
	topicReadyTimeout    = 30 * time.Second
	consumerReadyTimeout = 60 * time.Second
	adminTimeout         = 30 * time.Second
)

// Run runs the workload against the brokers and returns its result. The
// progress lines, and any error lines, go to progress.
//
// Cancelling ctx during the measured phase ends it early: the result
// covers what was measured and says Interrupted. Cancelling it before
// returns ctx's error.
func Run(ctx context.Context, cfg Config, progress io.Writer) (res *Result, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "bench: %s\n", cfg.String())
	if cfg.Protocol == ProtocolNative {
		return runNative(ctx, cfg, progress)
	}

	admCl, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID("aerostream-bench-admin"),
		// kadm answers ListTopics from kgo's metadata cache, 5 s by
		// default: polling for new topics' leaders needs fresher data.
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	ts, err := ensureTopics(ctx, adm, &cfg, cfg.topicNames(), topicReadyTimeout)
	if ts != nil && cfg.DeleteTopics {
		// Deferred first, so it runs after every client is closed.
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
			defer cancel()
			if derr := deleteCreated(dctx, adm, ts); derr != nil {
				fmt.Fprintf(progress, "bench: %v\n", derr)
				if err == nil {
					err = derr
				}
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "bench: topics ready: %v (created %d)\n", ts.names, len(ts.created))

	r := &runner{cfg: cfg, ts: ts, progress: progress, log: newLogOnce(progress), wire: newWireCounter()}
	defer r.close()
	return r.start(ctx)
}

// runNative is Run through the native protocol: topics through the native
// gateway's admin, producers and consumers on the Go SDK.
func runNative(ctx context.Context, cfg Config, progress io.Writer) (res *Result, err error) {
	adm, err := dialNative(ctx, &cfg, "aerostream-bench-admin")
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	tctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	ts, err := nativeEnsureTopics(tctx, adm, &cfg, cfg.topicNames())
	cancel()
	if ts != nil && cfg.DeleteTopics {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
			defer cancel()
			if derr := nativeDeleteCreated(dctx, adm, ts); derr != nil {
				fmt.Fprintf(progress, "bench: %v\n", derr)
				if err == nil {
					err = derr
				}
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "bench: topics ready: %v (created %d)\n", ts.names, len(ts.created))
	r := &runner{cfg: cfg, ts: ts, progress: progress, log: newLogOnce(progress), wire: newWireCounter()}
	defer r.close()
	return r.start(ctx)
}

// start starts the clients and runs the workload. A backlog run starts
// its consumers only once the backlog is written (run does that).
func (r *runner) start(ctx context.Context) (*Result, error) {
	if r.cfg.BacklogBytes > 0 {
		if !r.ts.allCreated() {
			return nil, fmt.Errorf("%w: a backlog run needs topics it creates, which its consumers read from the start; drop --topic-names or name new topics", ErrConfig)
		}
	} else if err := r.startConsumers(ctx); err != nil {
		return nil, err
	}
	if err := r.startProducers(ctx); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// runner holds one run's clients. Its methods run on Run's goroutine; the
// producers and consumers each have their own.
type runner struct {
	cfg      Config
	ts       *topicSet
	progress io.Writer
	log      *logOnce

	subs      []*subscription
	consumers []*consumer
	producers []*producer
	wire      *wireCounter // of every client

	consCancel context.CancelFunc
	consWG     sync.WaitGroup
	prodCancel context.CancelFunc
	prodWG     sync.WaitGroup
	stop       chan struct{}
}

func (r *runner) startConsumers(ctx context.Context) error {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.consCancel = cancel
	id := 0
	for _, t := range r.ts.names {
		for s := 0; s < r.cfg.Subscriptions; s++ {
			sub := &subscription{topic: t, group: fmt.Sprintf("%s-sub-%03d", t, s), partitions: r.ts.partitions[t]}
			r.subs = append(r.subs, sub)
			for c := 0; c < r.cfg.Consumers; c++ {
				var cons *consumer
				var err error
				if r.cfg.Protocol == ProtocolNative {
					cons, err = newNativeConsumer(ctx, &r.cfg, id, sub, r.ts.allCreated(), r.log)
				} else {
					cons, err = newConsumer(&r.cfg, id, sub, r.ts.allCreated(), r.log, r.wire)
				}
				id++
				if err != nil {
					return err
				}
				if cons == nil {
					continue
				}
				if r.cfg.BacklogBytes > 0 && cons.cl != nil {
					// A group's first member would read the backlog alone
					// until the others join, then hand partitions over with
					// their offsets uncommitted: read twice. OMB pauses its
					// consumers the same way.
					cons.cl.PauseFetchTopics(sub.topic)
				}
				r.consumers = append(r.consumers, cons)
				r.consWG.Add(1)
				go func() {
					defer r.consWG.Done()
					cons.run(cctx)
				}()
			}
		}
	}
	if r.cfg.ConsumeMode != ConsumeGroup || len(r.consumers) == 0 {
		return nil
	}
	// Producing before every partition has an owner would time the
	// rebalance, not the broker.
	begin := time.Now()
	deadline := begin.Add(consumerReadyTimeout)
	for {
		// Every partition owned, and every member owning one (where there
		// are enough to go round): the first member to join holds them
		// all until the others arrive, and a partition moved after
		// producing starts is read twice.
		ready := true
		for _, s := range r.subs {
			if s.assigned.Load() != int64(s.partitions) {
				ready = false
			}
		}
		for _, c := range r.consumers {
			if r.cfg.Consumers <= int(c.sub.partitions) && c.assigned.Load() == 0 {
				ready = false
			}
		}
		if ready {
			fmt.Fprintf(r.progress, "bench: %d consumer(s) in %d group(s) ready in %s\n",
				len(r.consumers), len(r.subs), time.Since(begin).Round(time.Millisecond))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: consumer groups not assigned every partition within %s", ErrNotReady, consumerReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *runner) startProducers(ctx context.Context) error {
	id := 0
	for _, t := range r.ts.names {
		for i := 0; i < r.cfg.Producers; i++ {
			var p *producer
			var err error
			if r.cfg.Protocol == ProtocolNative {
				p, err = newNativeProducer(ctx, &r.cfg, id, t, r.log)
			} else {
				p, err = newProducer(&r.cfg, id, t, r.wire)
			}
			if err != nil {
				return err
			}
			r.producers = append(r.producers, p)
			id++
		}
	}
	return nil
}

// counts is a snapshot of the run's counters, all since the start.
type counts struct {
	sent                       int64
	acked, ackedBytes, pubErrs int64
	consumed, consBytes, cErrs int64
	foreign                    int64

	produceReqs, produceBytes, fetchResps, fetchBytes int64
}

// addSince adds what the counters grew by from prev to cur.
func (c *counts) addSince(cur, prev counts) {
	c.sent += cur.sent - prev.sent
	c.acked += cur.acked - prev.acked
	c.ackedBytes += cur.ackedBytes - prev.ackedBytes
	c.pubErrs += cur.pubErrs - prev.pubErrs
	c.consumed += cur.consumed - prev.consumed
	c.consBytes += cur.consBytes - prev.consBytes
	c.cErrs += cur.cErrs - prev.cErrs
	c.foreign += cur.foreign - prev.foreign
	c.produceReqs += cur.produceReqs - prev.produceReqs
	c.produceBytes += cur.produceBytes - prev.produceBytes
	c.fetchResps += cur.fetchResps - prev.fetchResps
	c.fetchBytes += cur.fetchBytes - prev.fetchBytes
}

func (r *runner) counts() counts {
	var c counts
	for _, p := range r.producers {
		c.sent += p.sent.Load()
		c.acked += p.acked.Load()
		c.ackedBytes += p.ackedBytes.Load()
		c.pubErrs += p.errs.Load()
	}
	for _, k := range r.consumers {
		c.consumed += k.msgs.Load()
		c.consBytes += k.bytes.Load()
		c.cErrs += k.errs.Load()
		c.foreign += k.foreign.Load()
	}
	c.produceReqs, c.produceBytes = r.wire.produceReqs.Load(), r.wire.produceBytes.Load()
	c.fetchResps, c.fetchBytes = r.wire.fetchResps.Load(), r.wire.fetchBytes.Load()
	return c
}

// backlog is OMB's: messages published times subscriptions, less those
// received.
func (r *runner) backlog(c counts) int64 {
	if len(r.consumers) == 0 {
		return 0
	}
	return c.acked*int64(r.cfg.Subscriptions) - c.consumed
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	cfg := &r.cfg
	var pubRecs, delayRecs, e2eRecs []*Recorder
	for _, p := range r.producers {
		pubRecs = append(pubRecs, p.pubLat)
		delayRecs = append(delayRecs, p.delay)
	}
	for _, c := range r.consumers {
		e2eRecs = append(e2eRecs, c.e2e)
	}
	pubC, delayC, e2eC := newCollector(pubRecs), newCollector(delayRecs), newCollector(e2eRecs)
	rttC := newCollector([]*Recorder{r.wire.produceRTT})
	self := newProcWatch(0)
	var broker *procWatch
	if cfg.BrokerPID != 0 {
		broker = newProcWatch(cfg.BrokerPID)
		if broker.failed != nil {
			return nil, fmt.Errorf("broker pid %d: %w", cfg.BrokerPID, broker.failed)
		}
	}

	// The machine's CPU over the measured phase, from the tick that
	// starts it to the tick that ends it.
	var machineFirst, machineLast, machineEnd machineSample
	var machineMeasuring bool
	machineLast, _ = readMachine()

	start := time.Now()
	res := &Result{Tool: "aerostream bench", Driver: "franz-go", Workload: workloadOf(*cfg), Topics: r.ts.names, Start: start}
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	r.prodCancel = pcancel
	r.stop = make(chan struct{})
	var shared *SharedRate
	var search *rateSearch
	if cfg.Sustainable {
		search = newRateSearch(start, cfg.Subscriptions, cfg.Duration)
		shared = NewSharedRate(start, search.current())
	}
	for i, p := range r.producers {
		switch {
		case shared != nil:
			p.pacer = NewSharedPacer(shared, len(r.producers), i)
		case cfg.Rate > 0:
			// One schedule shared out: producer i takes tokens i, i+n, …
			p.pacer = NewPacer(NewSchedule(start, cfg.Rate, len(r.producers), i))
		}
		r.prodWG.Add(1)
		go func() {
			defer r.prodWG.Done()
			p.run(pctx, r.stop)
		}()
	}

	warmupEnd := start.Add(cfg.Warmup)
	filling := cfg.BacklogBytes > 0
	if search != nil || filling {
		// The warmup starts once the search is over; a backlog run
		// measures from when its consumers are ready.
		warmupEnd = start.Add(100 * 365 * 24 * time.Hour)
	}
	end := warmupEnd.Add(cfg.Duration)
	timer := time.NewTimer(cfg.Progress)
	defer timer.Stop()
	// While a backlog drains, its end is looked for between progress
	// ticks too, so the drain time (and the consume rate) is not rounded
	// up to a whole tick.
	var drainPoll <-chan time.Time
	var drainLimit int64
	var prev, measured counts
	var measuredDur time.Duration
	lastTick, tickBase := start, start
	for k := 1; ; k++ {
		tick := tickBase.Add(time.Duration(k) * cfg.Progress)
		timer.Reset(time.Until(tick))
		interrupted, drained := false, false
	wait:
		for {
			select {
			case <-timer.C:
				break wait
			case <-ctx.Done():
				interrupted = true
				break wait
			case <-drainPoll:
				if r.backlog(r.counts()) <= drainLimit {
					drained = true
					break wait
				}
			}
		}
		now := time.Now()
		keep := !lastTick.Before(warmupEnd)
		if interrupted && !keep {
			r.stopProducers()
			return nil, ctx.Err()
		}
		cur := r.counts()
		machineNow, _ := readMachine() // zero on error: no machine stats
		dt := now.Sub(lastTick)
		pubC.collect(keep)
		delayC.collect(keep)
		e2eC.collect(keep)
		rttC.collect(keep)
		self.sample(keep)
		iv := Interval{
			T:             now.Sub(start).Seconds(),
			Warmup:        !keep,
			PublishRate:   float64(cur.acked-prev.acked) / dt.Seconds(),
			PublishMB:     float64(cur.ackedBytes-prev.ackedBytes) / mib / dt.Seconds(),
			ConsumeRate:   float64(cur.consumed-prev.consumed) / dt.Seconds(),
			ConsumeMB:     float64(cur.consBytes-prev.consBytes) / mib / dt.Seconds(),
			Backlog:       r.backlog(cur),
			PublishP99Ms:  float64(pubC.interval.ValueAtQuantile(99)) / 1000,
			EndToEndP99Ms: float64(e2eC.interval.ValueAtQuantile(99)) / 1000,
			Errors:        cur.pubErrs - prev.pubErrs + cur.cErrs - prev.cErrs,
			TargetRate:    cfg.Rate,
			Fill:          filling,
		}
		if shared != nil {
			iv.TargetRate = shared.Rate()
		}
		if search != nil && res.Sustainable == nil {
			iv.Search = true
			rate, done := search.tick(now, cur, iv.Backlog)
			if rate != shared.Rate() {
				shared.Set(now, rate)
			}
			if done {
				res.Sustainable = &Sustainable{Rate: rate, Trials: search.trials}
				warmupEnd = now.Add(cfg.Warmup)
				end = warmupEnd.Add(cfg.Duration)
				fmt.Fprintf(r.progress, "bench: sustainable rate %.0f msg/s after %d trials; measuring at it\n", rate, len(search.trials))
			}
		}
		if broker != nil {
			broker.sample(keep)
			iv.BrokerCPU = broker.lastCPUPct
			iv.BrokerRSS = broker.last.rssBytes
		}
		if keep {
			if !machineMeasuring {
				machineMeasuring = true
				machineFirst = machineLast
			}
			machineEnd = machineNow
			measuredDur += dt
			measured.addSince(cur, prev)
		}
		res.Intervals = append(res.Intervals, iv)
		fmt.Fprintln(r.progress, iv.line(broker != nil))
		prev, lastTick, machineLast = cur, now, machineNow
		if interrupted {
			res.Interrupted = true
			fmt.Fprintln(r.progress, "bench: interrupted; reporting what was measured")
			break
		}
		if drained {
			res.BacklogDrain.DrainSeconds = now.Sub(warmupEnd).Seconds()
			res.BacklogDrain.Drained = true
			fmt.Fprintf(r.progress, "bench: backlog drained in %.2f s\n", res.BacklogDrain.DrainSeconds)
			break
		}
		if filling && cur.ackedBytes >= cfg.BacklogBytes {
			filling = false
			if cfg.Rate == 0 {
				r.stopProducers()
			}
			// Acknowledgements of the fill's last sends are the fill's.
			pubC.collect(false)
			delayC.collect(false)
			rttC.collect(false)
			res.BacklogDrain = &BacklogDrain{Bytes: r.counts().ackedBytes, FillSeconds: now.Sub(start).Seconds()}
			fmt.Fprintf(r.progress, "bench: backlog of %d B written in %.1f s; starting the consumers\n", res.BacklogDrain.Bytes, res.BacklogDrain.FillSeconds)
			if err := r.startConsumers(ctx); err != nil {
				return nil, err
			}
			var recs []*Recorder
			for _, c := range r.consumers {
				recs = append(recs, c.e2e)
				if c.cl != nil {
					c.cl.ResumeFetchTopics(c.sub.topic)
				}
			}
			e2eC = newCollector(recs)
			// What the producers publish meanwhile is consumed too, so the
			// backlog counts as drained within one tick of publishing.
			drainLimit = int64(cfg.Rate*cfg.Progress.Seconds()) * int64(cfg.Subscriptions)
			poll := time.NewTicker(5 * time.Millisecond)
			defer poll.Stop()
			drainPoll = poll.C
			// The measured phase starts now, on a fresh tick schedule, with
			// the consumers' start-up left out of every figure.
			now = time.Now()
			warmupEnd, end, tickBase, k = now, now.Add(cfg.Duration), now, 0
			prev, lastTick = r.counts(), now
			machineLast, _ = readMachine()
			self.sample(false)
			if broker != nil {
				broker.sample(false)
			}
			continue
		}
		if !tick.Before(end) {
			break
		}
	}
	res.Backlog = r.backlog(prev)
	if sr := res.Sustainable; sr != nil && measuredDur > 0 {
		sr.Held = search.held(sr.Rate, measured, measuredDur, res.Backlog)
	}

	// Stop publishing, let what was sent be acknowledged and consumed, and
	// count the latencies of those late arrivals: they are of messages
	// published in the measured phase.
	r.stopProducers()
	if len(r.consumers) > 0 && len(r.producers) > 0 {
		deadline := time.Now().Add(cfg.Drain)
		for r.backlog(r.counts()) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	pubC.collect(true)
	delayC.collect(true)
	e2eC.collect(true)
	rttC.collect(true)
	last := r.counts()
	res.BacklogAfterRun = r.backlog(last)
	if last.foreign > 0 {
		fmt.Fprintf(r.progress, "bench: %d consumed record(s) carried no send timestamp of this run; no latency recorded for them\n", last.foreign)
	}

	secs := measuredDur.Seconds()
	res.MeasuredSeconds = secs
	res.Publish = throughput(measured.acked, measured.ackedBytes, measured.pubErrs, secs)
	res.Consume = throughput(measured.consumed, measured.consBytes, measured.cErrs, secs)
	res.Requests = requestsOf(measured, secs)
	res.PublishLatency = Summarize(pubC.total)
	res.PublishDelay = Summarize(delayC.total)
	res.EndToEndLatency = Summarize(e2eC.total)
	res.ProduceRoundTrip = Summarize(rttC.total)
	if self.failed == nil && self.stats.Samples > 0 {
		s := self.stats
		res.Client = &s
	}
	if broker != nil {
		if broker.failed != nil {
			fmt.Fprintf(r.progress, "bench: sampling broker pid %d: %v\n", cfg.BrokerPID, broker.failed)
		}
		if broker.stats.Samples > 0 {
			s := broker.stats
			res.Broker = &s
		}
	}
	if machineMeasuring {
		res.Machine = machineStats(machineFirst, machineEnd, runtime.NumCPU(), res.Broker, res.Client)
	}
	if measured.acked == 0 && len(r.producers) > 0 && (cfg.BacklogBytes == 0 || cfg.Rate > 0) {
		return res, errors.New("no message was acknowledged in the measured phase")
	}
	return res, nil
}

// stopProducers stops the publishing loops and waits for what they sent,
// for at most the drain time.
func (r *runner) stopProducers() {
	if r.stop == nil {
		return
	}
	select {
	case <-r.stop:
		return // already stopped
	default:
	}
	close(r.stop)
	fctx, cancel := context.WithTimeout(context.Background(), r.cfg.Drain)
	defer cancel()
	for _, p := range r.producers {
		flush := func(ctx context.Context) error { return p.cl.Flush(ctx) }
		if p.nat != nil {
			flush = p.nat.Flush
		}
		if err := flush(fctx); err != nil {
			fmt.Fprintf(r.progress, "bench: flushing producers: %v\n", err)
			break
		}
	}
	// Unblock a Produce stuck on a full buffer of a broker that went away.
	r.prodCancel()
	r.prodWG.Wait()
}

// close releases every client; safe after a partial start.
func (r *runner) close() {
	r.stopProducers()
	for _, p := range r.producers {
		if p.nat != nil {
			cctx, cancel := context.WithTimeout(context.Background(), r.cfg.Drain)
			_ = p.nat.Close(cctx)
			cancel()
			_ = p.natCl.Close()
			continue
		}
		p.cl.Close()
	}
	if r.consCancel != nil {
		r.consCancel()
	}
	r.consWG.Wait()
	for _, c := range r.consumers {
		if c.nat != nil {
			_ = c.nat.Close()
			_ = c.natCl.Close()
			continue
		}
		c.cl.Close()
	}
}
