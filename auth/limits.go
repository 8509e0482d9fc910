package auth

import (
	"sync"
	"time"
)

// Rate limits every protocol's security events share, so that Kafka, the
// native protocol and HTTP log and slow down alike.
//
// The audit log (authentication failures and denied operations) must not
// flood when a client hammers a denied operation: each key (a principal
// and client pair) gets AuditBurst lines per AuditWindow, and the lines it
// was refused are counted in the next one that gets through.
const (
	AuditBurst  = 20
	AuditWindow = time.Minute
	// auditMaxKeys bounds the keys remembered; past it the window
	// restarts for all.
	auditMaxKeys = 10000
)

// AuditLimiter decides which audit lines are written. The zero value is
// ready; it is safe for concurrent use.
type AuditLimiter struct {
	mu struct {
		sync.Mutex
		start time.Time
		seen  map[string]*auditCount
	}
}

type auditCount struct{ logged, dropped int }

// Allow reports whether a line for key may be written now, and how many
// were dropped for it since the last one written.
func (l *AuditLimiter) Allow(now time.Time, key string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.seen == nil || now.Sub(l.mu.start) >= AuditWindow || len(l.mu.seen) >= auditMaxKeys {
		// A new window: the counts of what was suppressed carry over,
		// so the first line let through says how many were.
		next := map[string]*auditCount{}
		for k, c := range l.mu.seen {
			if c.dropped > 0 && len(next) < auditMaxKeys/2 {
				next[k] = &auditCount{dropped: c.dropped}
			}
		}
		l.mu.start, l.mu.seen = now, next
	}
	c := l.mu.seen[key]
	if c == nil {
		c = &auditCount{}
		l.mu.seen[key] = c
	}
	if c.logged >= AuditBurst {
		c.dropped++
		return false, 0
	}
	c.logged++
	d := c.dropped
	c.dropped = 0
	return true, d
}

// Repeated authentication failures from one address are slowed down, as
// Kafka's connection.failed.authentication.delay.ms does, so that
// guessing passwords costs time: the failing answer waits FailDelay for
// each failure from its address in the last FailWindow beyond the first
// FailFree, at most FailMaxDelay. Only that answer waits; others, from
// anywhere, are served.
const (
	FailFree     = 3
	FailDelay    = 200 * time.Millisecond
	FailMaxDelay = 5 * time.Second
	FailWindow   = time.Minute
)

// FailureDelay counts authentication failures per address. The zero value
// is ready; it is safe for concurrent use.
type FailureDelay struct {
	mu struct {
		sync.Mutex
		start time.Time
		count map[string]int
	}
}

// Fail records a failure from host and returns how long to hold the
// answer.
func (f *FailureDelay) Fail(now time.Time, host string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.count == nil || now.Sub(f.mu.start) >= FailWindow || len(f.mu.count) >= auditMaxKeys {
		f.mu.start, f.mu.count = now, map[string]int{}
	}
	f.mu.count[host]++
	n := f.mu.count[host] - FailFree
	if n <= 0 {
		return 0
	}
	return min(time.Duration(n)*FailDelay, FailMaxDelay)
}
