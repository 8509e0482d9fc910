package bench

import (
	"context"
	"math"
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

// Pacer hands out a Schedule's tokens in order. It reads the clock only when
// the tokens it knew to be due run out, and sleeps only when none is due, so
// at 50,000 msg/s it neither sleeps per message nor reads the clock per
// message once it has fallen behind.
//
// A Pacer belongs to one goroutine.
type Pacer struct {
	sched  Schedule
	next   int64 // next token to hand out
	due    int64 // tokens known due at the last clock read
	now    func() time.Time
	timer  *time.Timer
	bursts int64 // clock reads that found tokens due: for tests
}

// NewPacer paces sched with the real clock.
func NewPacer(sched Schedule) *Pacer {
	return &Pacer{sched: sched, now: time.Now}
}

// Wait returns the due time of the next token, sleeping until then when it
// is in the future. It returns early with ctx's error, or with errStopped
// when stop is closed.
func (p *Pacer) Wait(ctx context.Context, stop <-chan struct{}) (time.Time, error) {
	for p.next >= p.due {
		now := p.now()
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

// Taken is how many tokens Wait has handed out.
func (p *Pacer) Taken() int64 { return p.next }
