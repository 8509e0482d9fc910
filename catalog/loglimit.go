package catalog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logLimiter lets one line per key through per interval and counts the
// rest, which the next line that passes reports. pebble retries a failed
// flush at once and reports every failure: on a full disk that was a
// line per attempt, gigabytes of the same message.
type logLimiter struct {
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

func newLogLimiter(interval time.Duration) *logLimiter {
	l := &logLimiter{interval: interval}
	l.mu.keys = map[string]*limitKey{}
	return l
}

// allow reports whether a line for key may be written at now, and how many
// were held back since the last one that was.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
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

// log writes msg at level unless a line for key was written less than the
// interval ago.
func (l *logLimiter) log(log *slog.Logger, level slog.Level, key, msg string, args ...any) {
	ok, n := l.allow(key, time.Now())
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	log.Log(context.Background(), level, msg, args...)
}
