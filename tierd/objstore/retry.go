package objstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy is exponential backoff with full jitter: before attempt n+1
// Retry sleeps a uniformly random duration in [0, min(MaxBackoff,
// InitialBackoff*Multiplier^(n-1))]. Full jitter spreads the retries of many
// uploaders that failed together (one 503 burst hits every partition), which
// is what keeps a throttled bucket from being hammered in lockstep. The zero
// value is usable and means the defaults.
type RetryPolicy struct {
	// MaxAttempts counts the first try; 0 means 8, 1 means no retry.
	MaxAttempts int
	// InitialBackoff is the cap of the first sleep; 0 means 100ms.
	InitialBackoff time.Duration
	// MaxBackoff caps every sleep; 0 means 15s.
	MaxBackoff time.Duration
	// Multiplier grows the cap per attempt; 0 means 2.
	Multiplier float64
	// Retryable decides which errors to retry; nil means IsTransient.
	Retryable func(error) bool
	// OnRetry, when set, is told of every retry before its sleep (tierd
	// counts retries and logs here).
	OnRetry func(attempt int, err error, wait time.Duration)
	// rand returns a float in [0,1); tests pin it.
	rand func() float64
}

// Defaults of RetryPolicy.
const (
	DefaultMaxAttempts    = 8
	DefaultInitialBackoff = 100 * time.Millisecond
	DefaultMaxBackoff     = 15 * time.Second
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.InitialBackoff <= 0 {
		p.InitialBackoff = DefaultInitialBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.Multiplier < 1 {
		p.Multiplier = 2
	}
	if p.Retryable == nil {
		p.Retryable = IsTransient
	}
	if p.rand == nil {
		p.rand = rand.Float64
	}
	return p
}

// Backoff is the sleep before retry number attempt (1 for the first retry).
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	p = p.withDefaults()
	ceil := float64(p.InitialBackoff)
	for i := 1; i < attempt && ceil < float64(p.MaxBackoff); i++ {
		ceil *= p.Multiplier
	}
	ceil = min(ceil, float64(p.MaxBackoff))
	return time.Duration(p.rand() * ceil)
}

// Retry calls fn until it succeeds, returns an error the policy does not
// retry, the attempts run out or ctx ends. It returns fn's last error; when
// ctx ends during a backoff, that error wraps ctx's.
//
// fn must be safe to repeat: an upload must open a fresh reader each time.
// A conditional write needs care: if an attempt succeeded on the server but
// its answer was lost, the retry fails with ErrPreconditionFailed; tierd
// resolves that by comparing Head's size and checksum with what it sent.
func Retry(ctx context.Context, p RetryPolicy, fn func(ctx context.Context) error) error {
	p = p.withDefaults()
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(ctx); err == nil {
			return nil
		}
		if attempt >= p.MaxAttempts || !p.Retryable(err) || ctx.Err() != nil {
			return err
		}
		wait := p.Backoff(attempt)
		if p.OnRetry != nil {
			p.OnRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
		}
	}
}
