package kafka

import (
	"container/list"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Incremental fetch sessions (KIP-227). A session remembers the partitions
// a consumer fetches and what it last told the consumer about each, so a
// request names only the partitions whose fetch position changed and a
// response carries only the partitions that have news (records, an error,
// or a moved high watermark or log start offset).
//
// The cache is gateway-wide, not per connection, because a client may
// reconnect and keep its session. It is bounded (FetchSessionCacheSlots):
// when full, the least recently used session not being served right now is
// evicted, and its consumer gets FETCH_SESSION_ID_NOT_FOUND and starts a
// new one. Several connections use the cache, so it sits behind a mutex.

type fetchSessions struct {
	slots int
	mu    struct {
		sync.Mutex
		nextID int32
		byID   map[int32]*fetchSession
		lru    *list.List // of *fetchSession, most recently used in front
	}
}

func newFetchSessions(slots int) *fetchSessions {
	s := &fetchSessions{slots: slots}
	s.mu.byID = map[int32]*fetchSession{}
	s.mu.lru = list.New()
	return s
}

// fetchSession is one session. Its fields other than elem and inUse belong
// to the request that holds it (inUse), so they need no lock.
type fetchSession struct {
	id    int32
	epoch int32 // the epoch the next request must carry
	elem  *list.Element
	inUse bool

	parts []*sessionPart // fetch order
	index map[sessionKey]*sessionPart
}

// sessionKey names a partition as the consumer does: by topic name before
// Fetch v13, by topic id from v13 on (the other field is zero).
type sessionKey struct {
	topic     string
	id        [16]byte
	partition int32
}

// sessionPart is a partition of a session: where the consumer fetches
// from, and what the session last sent about it (-1 before anything).
type sessionPart struct {
	key      sessionKey
	offset   int64
	maxBytes int32
	epoch    int32 // the consumer's current leader epoch, -1 for none

	sentHW, sentLSO, sentLogStart int64
}

// nextEpoch is the epoch after e; epochs wrap to 1, 0 being "new session".
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// create makes a new session and marks it in use. It returns nil when the
// cache is full of sessions in use.
func (s *fetchSessions) create() *fetchSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.byID) >= s.slots {
		for e := s.mu.lru.Back(); e != nil; e = e.Prev() {
			if old := e.Value.(*fetchSession); !old.inUse {
				s.removeLocked(old)
				break
			}
		}
		if len(s.mu.byID) >= s.slots {
			return nil
		}
	}
	for {
		s.mu.nextID++
		if s.mu.nextID <= 0 {
			s.mu.nextID = 1
		}
		if _, taken := s.mu.byID[s.mu.nextID]; !taken {
			break
		}
	}
	fs := &fetchSession{id: s.mu.nextID, epoch: 1, inUse: true, index: map[sessionKey]*sessionPart{}}
	fs.elem = s.mu.lru.PushFront(fs)
	s.mu.byID[fs.id] = fs
	return fs
}

// acquire takes session id for a request at epoch. The session's epoch
// moves on at once, so a second request at the same epoch (a replay, or a
// concurrent use) is refused.
func (s *fetchSessions) acquire(id, epoch int32) (*fetchSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.mu.byID[id]
	switch {
	case fs == nil:
		return nil, kerr.FetchSessionIDNotFound
	case fs.inUse || fs.epoch != epoch:
		return nil, kerr.InvalidFetchSessionEpoch
	}
	fs.inUse = true
	fs.epoch = nextEpoch(fs.epoch)
	s.mu.lru.MoveToFront(fs.elem)
	return fs, nil
}

// release returns a session taken by create or acquire.
func (s *fetchSessions) release(fs *fetchSession) {
	s.mu.Lock()
	fs.inUse = false
	s.mu.Unlock()
}

// remove drops session id, if it exists.
func (s *fetchSessions) remove(id int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fs := s.mu.byID[id]; fs != nil {
		s.removeLocked(fs)
	}
}

func (s *fetchSessions) removeLocked(fs *fetchSession) {
	delete(s.mu.byID, fs.id)
	s.mu.lru.Remove(fs.elem)
}

// upsert adds a partition to the session or updates its position.
func (fs *fetchSession) upsert(key sessionKey, offset int64, maxBytes, epoch int32) *sessionPart {
	if sp := fs.index[key]; sp != nil {
		sp.offset, sp.maxBytes, sp.epoch = offset, maxBytes, epoch
		return sp
	}
	sp := &sessionPart{key: key, offset: offset, maxBytes: maxBytes, epoch: epoch, sentHW: -1, sentLSO: -1, sentLogStart: -1}
	fs.index[key] = sp
	fs.parts = append(fs.parts, sp)
	return sp
}

// forget removes a partition from the session.
func (fs *fetchSession) forget(key sessionKey) {
	if fs.index[key] == nil {
		return
	}
	delete(fs.index, key)
	for i, sp := range fs.parts {
		if sp.key == key {
			fs.parts = append(fs.parts[:i], fs.parts[i+1:]...)
			break
		}
	}
}

// rotate moves the partitions that just returned data to the back, so that
// under a response byte limit every partition gets its turn (KIP-227's
// round robin).
func (fs *fetchSession) rotate(returned map[*sessionPart]bool) {
	if len(returned) == 0 || len(returned) == len(fs.parts) {
		return
	}
	keep := make([]*sessionPart, 0, len(fs.parts))
	var back []*sessionPart
	for _, sp := range fs.parts {
		if returned[sp] {
			back = append(back, sp)
		} else {
			keep = append(keep, sp)
		}
	}
	fs.parts = append(keep, back...)
}
