package kafka

import (
	"sync"
	"time"
)

// The audit log: authentication failures and denied operations, one log
// line each with the principal, the client's address, the operation and
// the resource, under the "audit" key. A client hammering a denied
// operation must not flood the log, so each (principal, client) pair gets
// auditBurst lines per auditWindow, and the lines it was refused are
// counted in the next one that gets through.
const (
	auditBurst  = 20
	auditWindow = time.Minute
	// auditMaxKeys bounds the pairs remembered; past it the window
	// restarts for all.
	auditMaxKeys = 10000
)

type auditLimiter struct {
	mu struct {
		sync.Mutex
		start time.Time
		seen  map[string]*auditCount
	}
}

type auditCount struct{ logged, dropped int }

// allow reports whether a line for key may be written now, and how many
// were dropped for it since the last one written.
func (l *auditLimiter) allow(now time.Time, key string) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.seen == nil || now.Sub(l.mu.start) >= auditWindow || len(l.mu.seen) >= auditMaxKeys {
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
	if c.logged >= auditBurst {
		c.dropped++
		return false, 0
	}
	c.logged++
	d := c.dropped
	c.dropped = 0
	return true, d
}

// audit logs a denied operation, or a failed authentication when err is
// set.
func (g *Gateway) audit(rc *reqCtx, operation, resourceType, resource string, err error) {
	principal, client := rc.s.principal(), rc.s.clientHost()
	ok, dropped := g.auditLimit.allow(g.now(), principal+"|"+client)
	if !ok {
		return
	}
	args := []any{"audit", true, "principal", principal, "client", client, "operation", operation}
	if resourceType != "" {
		args = append(args, "resource_type", resourceType, "resource", resource)
	}
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	if err != nil {
		g.log.Warn("authentication failed", append(args, "err", err)...)
		return
	}
	g.log.Warn("operation denied", args...)
}

// Repeated authentication failures from one address are slowed down, as
// Kafka's connection.failed.authentication.delay.ms does, so that
// guessing passwords costs time: the failing connection's answer waits
// authFailDelay for each failure from its address in the last
// authFailWindow beyond the first authFailFree, at most authFailMaxDelay.
// Only that connection waits; others, from anywhere, are served.
const (
	authFailFree     = 3
	authFailDelay    = 200 * time.Millisecond
	authFailMaxDelay = 5 * time.Second
	authFailWindow   = time.Minute
)

type authFailures struct {
	mu struct {
		sync.Mutex
		start time.Time
		count map[string]int
	}
}

// fail records a failure from host and returns how long to hold the
// answer.
func (f *authFailures) fail(now time.Time, host string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.count == nil || now.Sub(f.mu.start) >= authFailWindow || len(f.mu.count) >= auditMaxKeys {
		f.mu.start, f.mu.count = now, map[string]int{}
	}
	f.mu.count[host]++
	n := f.mu.count[host] - authFailFree
	if n <= 0 {
		return 0
	}
	return min(time.Duration(n)*authFailDelay, authFailMaxDelay)
}
