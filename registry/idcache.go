package registry

import (
	"context"
	"sync"
	"time"
)

// IDCache answers "is this schema id a live version of this subject?" for
// broker-side validation, which asks it for every produced batch of a
// validated topic. Ids never change meaning, so a yes stays true until the
// version is deleted: it is kept for PositiveTTL, the delay after which a
// deleted version stops validating. A no is kept for NegativeTTL only, so
// that a schema registered just before the produce that uses it is seen
// at once while a flood of bad ids costs the controller one read per id
// per NegativeTTL.
type IDCache struct {
	reg         *Registry
	positiveTTL time.Duration
	negativeTTL time.Duration
	now         func() time.Time

	mu struct {
		sync.Mutex
		entries map[idKey]idEntry
	}
}

type idKey struct {
	subject string
	id      int32
}

type idEntry struct {
	ok      bool
	expires time.Time
}

// Cache bounds.
const (
	PositiveTTL = 30 * time.Second
	NegativeTTL = time.Second
	// maxIDEntries bounds the cache; beyond it, it starts again empty.
	maxIDEntries = 1 << 16
)

// NewIDCache returns a cache over r.
func NewIDCache(r *Registry) *IDCache {
	c := &IDCache{reg: r, positiveTTL: PositiveTTL, negativeTTL: NegativeTTL, now: time.Now}
	c.mu.entries = map[idKey]idEntry{}
	return c
}

// SubjectHasID says whether id is a live version of subject.
func (c *IDCache) SubjectHasID(ctx context.Context, subject string, id int32) (bool, error) {
	k := idKey{subject, id}
	now := c.now()
	c.mu.Lock()
	e, hit := c.mu.entries[k]
	c.mu.Unlock()
	if hit && now.Before(e.expires) {
		return e.ok, nil
	}
	ok, err := c.reg.SubjectHasID(ctx, subject, id)
	if err != nil {
		return false, err
	}
	ttl := c.negativeTTL
	if ok {
		ttl = c.positiveTTL
	}
	c.mu.Lock()
	if len(c.mu.entries) >= maxIDEntries {
		clear(c.mu.entries)
	}
	c.mu.entries[k] = idEntry{ok: ok, expires: now.Add(ttl)}
	c.mu.Unlock()
	return ok, nil
}
