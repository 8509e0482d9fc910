package bench

import (
	"testing"
	"time"
)

// simulate drives a rateSearch against a pipeline whose consumers keep up
// to capacity msg/s and whose producers send whatever rate they are given
// up to sendCap; beyond capacity the backlog grows by the difference.
func simulate(t *testing.T, capacity, sendCap float64) (float64, []Trial) {
	t.Helper()
	return simulateFunc(t, func(float64, int) float64 { return capacity }, sendCap)
}

// simulateFunc is simulate with a capacity that depends on the rate and on
// how many seconds it has been held.
func simulateFunc(t *testing.T, capacity func(rate float64, heldFor int) float64, sendCap float64) (float64, []Trial) {
	t.Helper()
	start := time.Unix(1000, 0)
	s := newRateSearch(start, 1, 30*time.Second)
	var c counts
	var backlog float64
	rate := s.current()
	heldFor := 0
	for sec := 1; sec <= 900; sec++ {
		sent := min(rate, sendCap)
		recv := min(capacity(rate, heldFor), sent+backlog)
		backlog += sent - recv
		c.sent += int64(sent)
		c.acked += int64(sent)
		c.consumed += int64(recv)
		r, done := s.tick(start.Add(time.Duration(sec)*time.Second), c, int64(backlog))
		if done {
			return r, s.trials
		}
		heldFor++
		if r != rate {
			heldFor = 0
		}
		rate = r
	}
	t.Fatalf("no result after 900 s: %+v", s.trials)
	return 0, nil
}

func TestRateSearchFindsWhatConsumersKeepUpWith(t *testing.T) {
	for _, tc := range []struct{ capacity, sendCap float64 }{
		{470_000, 1e9},   // consumers are the limit
		{1e9, 333_000},   // producers are the limit
		{40_000, 1e9},    // below the first doubling
		{3_000_000, 1e9}, // well above the usual
		{300_000, 290_000},
	} {
		got, trials := simulate(t, tc.capacity, tc.sendCap)
		// A trial tolerates the producers 3% short and the consumers 1%,
		// so the rate found may pass the limit by as much.
		limit := min(tc.capacity, tc.sendCap)
		if got > limit/searchSendShare/searchRecvShare || got < (1-searchPrecision)*limit*searchSendShare*searchRecvShare {
			t.Errorf("capacity %.0f, producers %.0f: found %.0f msg/s after %d trials (%+v)", tc.capacity, tc.sendCap, got, len(trials), trials)
		}
		if len(trials) >= searchMaxTrials {
			t.Errorf("capacity %.0f: the search ran out of trials", tc.capacity)
		}
	}
}

// A pipeline that carries a high rate for a few seconds and then falls
// behind (the case the confirmation is for): the 8 s trials pass rates the
// 30 s confirmation does not, and the search steps down to a rate the
// pipeline holds for long.
func TestRateSearchConfirms(t *testing.T) {
	const sustained = 450_000
	capacity := func(rate float64, heldFor int) float64 {
		if heldFor < 10 {
			return 700_000
		}
		return sustained
	}
	got, trials := simulateFunc(t, capacity, 1e9)
	if got > sustained/searchSendShare/searchRecvShare || got < (1-searchStepDown)*(1-searchPrecision)*sustained*searchSendShare*searchRecvShare {
		t.Errorf("held %d msg/s for long: found %.0f after %d trials (%+v)", sustained, got, len(trials), trials)
	}
	failed, last := 0, trials[len(trials)-1]
	for _, tr := range trials {
		if tr.Confirm && !tr.Passed {
			failed++
		}
	}
	if failed == 0 || !last.Confirm || !last.Passed || last.Rate != got {
		t.Errorf("want failed confirmations, then a confirmed rate: %+v", trials)
	}
	if len(trials) >= searchMaxTrials {
		t.Errorf("the search ran out of trials: %+v", trials)
	}
}

// A search ends on a passed confirmation at the rate it returns, and a
// confirmation is as long as the measured phase, within bounds.
func TestRateSearchResultIsConfirmed(t *testing.T) {
	for _, tc := range []struct{ measured, want time.Duration }{
		{30 * time.Second, 30 * time.Second}, {5 * time.Second, searchConfirmMin}, {time.Hour, searchConfirmMax},
	} {
		if got := newRateSearch(time.Unix(0, 0), 1, tc.measured).confirm; got != tc.want {
			t.Errorf("measured phase %v: confirmation of %v, want %v", tc.measured, got, tc.want)
		}
	}
	got, trials := simulate(t, 470_000, 1e9)
	last := trials[len(trials)-1]
	if !last.Confirm || !last.Passed || last.Rate != got {
		t.Fatalf("found %.0f, last trial %+v", got, last)
	}
}

// A pipeline that cannot even carry the floor rate ends the search there
// rather than searching forever.
func TestRateSearchFloor(t *testing.T) {
	got, trials := simulate(t, 500, 1e9)
	if got != searchMinRate || len(trials) >= searchMaxTrials {
		t.Fatalf("found %.0f after %d trials", got, len(trials))
	}
}

func TestHeld(t *testing.T) {
	s := newRateSearch(time.Unix(0, 0), 2, 30*time.Second)
	d := 10 * time.Second
	ok := counts{sent: 1_000_000, consumed: 2 * 990_000}
	if !s.held(100_000, ok, d, 20_000) {
		t.Error("a phase that kept up was judged not held")
	}
	if s.held(100_000, counts{sent: 1_000_000, consumed: 2 * 900_000}, d, 20_000) {
		t.Error("consumers 10% behind were judged to have kept up")
	}
	if s.held(100_000, counts{sent: 900_000, consumed: 2 * 900_000}, d, 0) {
		t.Error("producers 10% short were judged to have kept up")
	}
	if s.held(100_000, ok, d, 2*60_000) {
		t.Error("a backlog of 0.6 s was judged kept up")
	}
}
