package bench

import "time"

// The highest rate consumers keep up with: OpenMessaging Benchmark's
// meaning of a workload whose producer rate is 0. Publishing without a
// limit (--rate 0 alone) measures how fast the producers get messages
// acknowledged while, on a machine the client shares with the broker, the
// consumers may fall further behind all the while; this mode measures the
// rate the whole pipeline sustains.
//
// OMB adjusts the rate during the measured phase. Here the rate is found
// first, in trials, and the run is then measured at it like a fixed-rate
// run, so the figures are not an average over a controller's oscillation
// (which depends on how each broker behaves when overloaded, not only on
// what it sustains):
//
//   - a trial holds a rate for searchSettle, then watches it for
//     searchObserve. It passes when the producers sent at least 97% of the
//     messages the rate called for (Produce blocks while the client's
//     buffer is full, so a saturated broker or client shows here), the
//     consumers received at least 99% of what was sent, and the backlog
//     at its end is under searchLag's worth of messages. The consumers'
//     margin is narrow and the watch long because consumers 2% short of a
//     rate fall only a tenth of a second behind in 5 s, which a 3% margin
//     and the backlog limit both let pass, and then keep falling behind
//     through the measured phase;
//   - the rate doubles from searchStart until a trial fails, then bisects
//     between the highest rate passed and the lowest failed, until they are
//     within searchPrecision of each other;
//   - after a failed trial the rate drops to half the highest passed one
//     until the backlog is drained (for at most searchDrainMax), so the
//     next trial does not start behind;
//   - the highest rate passed is then confirmed by a longer trial, as long
//     as the measured phase (searchConfirmMin to searchConfirmMax). A rate
//     a few percent above what the pipeline holds can pass 8 s and still
//     fall behind over a 30 s measured phase (the page cache, the disk's
//     writeback and the consumers' fetch sizes all settle over tens of
//     seconds): without a confirmation, 4 of 10 compare rounds found a
//     rate that did not hold, and with a 20 s one, a rate held for the 20 s
//     and not for the 30 s after it. A failed confirmation steps the rate
//     down by searchStepDown, drains, and confirms again, up to
//     searchMaxTrials in all.
//
// The run's warmup then starts at the confirmed rate. When the trials run
// out first, it starts at the last rate stepped down to, unconfirmed, and
// the result's held flag says whether the measured phase held it.

const (
	searchStart      = 25_000
	searchMinRate    = 1_000
	searchSettle     = time.Second
	searchObserve    = 8 * time.Second
	searchLag        = 500 * time.Millisecond
	searchPrecision  = 0.05
	searchDrainMax   = 15 * time.Second
	searchConfirmMin = 20 * time.Second
	searchConfirmMax = time.Minute
	searchStepDown   = 0.08
	searchMaxTrials  = 20
	searchSendShare  = 0.97 // of the rate, sent
	searchRecvShare  = 0.99 // of what was sent, received
)

// Trial is one rate the search tried.
type Trial struct {
	Rate     float64 `json:"rate"`
	Sent     float64 `json:"sent_rate"`
	Received float64 `json:"received_rate"`
	Backlog  int64   `json:"backlog"`
	Passed   bool    `json:"passed"`
	Confirm  bool    `json:"confirm,omitempty"` // a confirmation trial, as long as the measured phase
}

type searchPhase int

const (
	searchSettling searchPhase = iota
	searchObserving
	searchDraining
)

// rateSearch runs the trials. tick is called once a progress interval with
// the run's counters; it returns the rate for the next interval and, once
// the search is over, done.
type rateSearch struct {
	subs   int
	rate   float64 // of the trial in progress
	lo, hi float64 // highest rate passed, lowest failed; 0: none yet
	phase  searchPhase
	// confirming: the bisection is over and s.rate is being confirmed,
	// for confirm
	confirming bool
	confirm    time.Duration
	since      time.Time // the phase's start
	base       counts    // at the start of the observation
	trials     []Trial
}

// measured is the length of the run's measured phase, which a confirmation
// trial matches.
func newRateSearch(start time.Time, subscriptions int, measured time.Duration) *rateSearch {
	return &rateSearch{subs: max(subscriptions, 1), rate: searchStart, since: start,
		confirm: min(max(measured, searchConfirmMin), searchConfirmMax)}
}

// current is the rate the producers should be held to now.
func (s *rateSearch) current() float64 {
	if s.phase == searchDraining {
		return max(s.lo/2, searchMinRate)
	}
	return s.rate
}

func (s *rateSearch) tick(now time.Time, c counts, backlog int64) (rate float64, done bool) {
	el := now.Sub(s.since)
	switch s.phase {
	case searchSettling:
		if el >= searchSettle {
			s.phase, s.since, s.base = searchObserving, now, c
		}
	case searchObserving:
		if el < searchObserve || s.confirming && el < s.confirm {
			break
		}
		secs := el.Seconds()
		subs := float64(s.subs)
		t := Trial{Rate: s.rate, Sent: float64(c.sent-s.base.sent) / secs,
			Received: float64(c.consumed-s.base.consumed) / subs / secs, Backlog: backlog,
			Confirm: s.confirming}
		t.Passed = s.keptUp(s.rate, t.Sent, t.Received, backlog)
		s.trials = append(s.trials, t)
		if s.confirming {
			if t.Passed || s.rate <= searchMinRate {
				return s.result(), true
			}
			// Not held for long: step down and confirm again. lo is the
			// candidate, unconfirmed, so the drain runs below it.
			s.hi, s.rate = s.rate, max(s.rate*(1-searchStepDown), searchMinRate)
			s.lo = s.rate
			if len(s.trials) >= searchMaxTrials {
				return s.result(), true
			}
			s.phase, s.since = searchDraining, now
			break
		}
		if t.Passed {
			s.lo = s.rate
		} else {
			s.hi = s.rate
		}
		if s.hi > 0 && (s.hi-s.lo <= searchPrecision*s.hi || s.hi <= searchMinRate) {
			if s.lo < searchMinRate {
				return s.result(), true // nothing passed: the floor, as is
			}
			s.confirming, s.rate = true, s.lo
		} else if len(s.trials) >= searchMaxTrials {
			return s.result(), true
		} else if s.hi == 0 {
			s.rate *= 2
		} else {
			s.rate = (s.lo + s.hi) / 2
		}
		s.phase, s.since = searchSettling, now
		if !t.Passed {
			s.phase = searchDraining
		}
	case searchDraining:
		// Drained: a tenth of a second's worth left at the best rate.
		if backlog <= int64(float64(s.subs)*max(1000, s.lo*searchLag.Seconds()/5)) || el >= searchDrainMax {
			s.phase, s.since = searchSettling, now
		}
	}
	return s.current(), false
}

// keptUp is a trial's verdict: sent and received are rates (received per
// subscription), backlog the messages behind at the end.
func (s *rateSearch) keptUp(rate, sent, received float64, backlog int64) bool {
	return sent >= searchSendShare*rate && received >= searchRecvShare*sent &&
		float64(backlog) <= float64(s.subs)*max(1000, rate*searchLag.Seconds())
}

// held judges a whole measured phase at rate by a trial's criteria.
func (s *rateSearch) held(rate float64, measured counts, d time.Duration, backlog int64) bool {
	secs := d.Seconds()
	return s.keptUp(rate, float64(measured.sent)/secs, float64(measured.consumed)/float64(s.subs)/secs, backlog)
}

// result is the rate the run is measured at: the confirmed one, or when the
// trials ran out, the highest passed or stepped down to.
func (s *rateSearch) result() float64 {
	return max(s.lo, searchMinRate)
}
