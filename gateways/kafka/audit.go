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
		l.mu.start, l.mu.seen = now, map[string]*auditCount{}
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
