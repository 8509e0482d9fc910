package bench

import (
	"context"
	"math"
	"sync/atomic"
	"time"
)

// Schedule is a token schedule: token n is due at
//
//	start + (n*stride + phase) / rate seconds.
//
// Producers that share a rate get the same start and rate, stride = their
// number and phase = their index, so their tokens interleave evenly and the
// sum over all of them is rate tokens a second, whatever each one's timing.
// Due times are absolute: a producer that oversleeps or stalls behind a full
// buffer owes the tokens it missed and sends them at once, so the rate over
// any longer window stays exact (no drift from sleep granularity).
type Schedule struct {
	start         time.Time
	rate          float64 // tokens per second over all sharers; > 0
	stride, phase int64
}

// NewSchedule returns the schedule of sharer phase out of stride sharers of
// rate tokens a second. rate must be positive.
func NewSchedule(start time.Time, rate float64, stride, phase int) Schedule {
	if stride < 1 {
		stride = 1
	}
	return Schedule{start: start, rate: rate, stride: int64(stride), phase: int64(phase)}
}

// offset is the time of token n after start, truncated to a nanosecond.
func (s Schedule) offset(n int64) time.Duration {
	return time.Duration(float64(n*s.stride+s.phase) * 1e9 / s.rate)
}

// At is the time token n (from 0) is due.
func (s Schedule) At(n int64) time.Time { return s.start.Add(s.offset(n)) }

// Due is how many tokens are due at now: the count of n with At(n) <= now.
func (s Schedule) Due(now time.Time) int64 {
	el := now.Sub(s.start)
	if el < 0 {
		return 0
	}
	// Estimate in floating point, then settle on the exact boundary of At
	// so that Due and At never disagree by one.
	n := int64(math.Floor((float64(el)*s.rate/1e9-float64(s.phase))/float64(s.stride))) + 1
	if n < 0 {
		n = 0
	}
	for n > 0 && s.offset(n-1) > el {
		n--
	}
	for s.offset(n) <= el {
		n++
	}
	return n
}

// SharedRate is a rate its sharers' Pacers follow while it changes: the
// sustainable-rate search (sustain.go) sets each trial's. A change starts
// a new schedule at the time of the change, so tokens a producer owed under
// the old rate are forgiven: a lower rate must not begin with the burst of
// what the higher one left unsent.
type SharedRate struct{ cur atomic.Pointer[rateEpoch] }

type rateEpoch struct {
	start time.Time
	rate  float64 // > 0
}

// NewSharedRate starts at rate (> 0) from start.
func NewSharedRate(start time.Time, rate float64) *SharedRate {
	s := &SharedRate{}
	s.Set(start, rate)
	return s
}

// Set makes rate (> 0) the rate from now on.
func (s *SharedRate) Set(now time.Time, rate float64) {
	s.cur.Store(&rateEpoch{start: now, rate: rate})
}

// Rate is the current rate.
func (s *SharedRate) Rate() float64 { return s.cur.Load().rate }

// Pacer hands out a Schedule's tokens in order. It reads the clock only when
// the tokens it knew to be due run out, and sleeps only when none is due, so
// at 50,000 msg/s it neither sleeps per message nor reads the clock per
// message once it has fallen behind.
//
// A Pacer belongs to one goroutine.
type Pacer struct {
	sched  Schedule
	shared *SharedRate // nil: sched's rate for good
	epoch  *rateEpoch  // the shared rate sched was made from
	next   int64       // next token to hand out
	due    int64       // tokens known due at the last clock read
	now    func() time.Time
	timer  *time.Timer
	bursts int64 // clock reads that found tokens due: for tests
}

// NewPacer paces sched with the real clock.
func NewPacer(sched Schedule) *Pacer {
	return &Pacer{sched: sched, now: time.Now}
}

// NewSharedPacer paces sharer phase of stride sharers of a SharedRate.
func NewSharedPacer(rate *SharedRate, stride, phase int) *Pacer {
	e := rate.cur.Load()
	return &Pacer{sched: NewSchedule(e.start, e.rate, stride, phase), shared: rate, epoch: e, now: time.Now}
}

// follow switches to the shared rate's current schedule if it changed.
// It runs at each clock read, so a change reaches a producer within one
// burst of the tokens it already knew to be due.
func (p *Pacer) follow() {
	if p.shared == nil {
		return
	}
	if e := p.shared.cur.Load(); e != p.epoch {
		p.epoch = e
		p.sched = Schedule{start: e.start, rate: e.rate, stride: p.sched.stride, phase: p.sched.phase}
		p.next, p.due = 0, 0
	}
}

// Wait returns the due time of the next token, sleeping until then when it
// is in the future. It returns early with ctx's error, or with errStopped
// when stop is closed.
func (p *Pacer) Wait(ctx context.Context, stop <-chan struct{}) (time.Time, error) {
	for p.next >= p.due {
		now := p.now()
		p.follow()
		p.due = p.sched.Due(now)
		if p.next < p.due {
			p.bursts++
			break
		}
		d := p.sched.At(p.next).Sub(now)
		if p.timer == nil {
			p.timer = time.NewTimer(d)
		} else {
			p.timer.Reset(d)
		}
		select {
		case <-p.timer.C:
		case <-stop:
			p.timer.Stop()
			return time.Time{}, errStopped
		case <-ctx.Done():
			p.timer.Stop()
			return time.Time{}, ctx.Err()
		}
	}
	t := p.sched.At(p.next)
	p.next++
	return t, nil
}

// Taken is how many tokens Wait has handed out since the schedule began
// (for a shared rate, since its last change).
func (p *Pacer) Taken() int64 { return p.next }
