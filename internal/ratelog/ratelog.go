package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Limiter lets one line per key through per interval and counts the
// rest, which the next line that passes reports.
type Limiter struct {
	interval time.Duration
	mu       struct {
		sync.Mutex
		keys map[string]*limitKey
	}
}

type limitKey struct {
	last       time.Time
	suppressed int
}

// New returns a Limiter that lets one line per key through per interval.
func New(interval time.Duration) *Limiter {
	l := &Limiter{interval: interval}
	l.mu.keys = map[string]*limitKey{}
	return l
}

// Allow reports whether a line for key may be written now, and how many
// were held back since the last one that was.
func (l *Limiter) Allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.mu.keys[key]
	if k == nil {
		if len(l.mu.keys) >= 1024 {
			clear(l.mu.keys) // keys are call sites; this only bounds a misuse
		}
		k = &limitKey{}
		l.mu.keys[key] = k
	}
	if !k.last.IsZero() && now.Sub(k.last) < l.interval {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return true, n
}

// Log writes msg at level unless a line for key was written less than the
// interval ago.
func (l *Limiter) Log(log *slog.Logger, level slog.Level, key, msg string, args ...any) {
	ok, n := l.Allow(key, time.Now())
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	log.Log(context.Background(), level, msg, args...)
}
