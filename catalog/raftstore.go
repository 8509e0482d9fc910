package catalog

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// RaftStore is the controller's durable Raft state: the replicated log and
// the stable store (current term, last vote). It is a separate pebble DB from
// the catalog because its write pattern (append, truncate from the front,
// fsync per call) and its owner (the controller) differ, and so that a
// controller-only node needs no catalog.
type RaftStore struct {
	db  pebbleDB
	log *slog.Logger

	// mu guards closed; every call holds the read lock, Close the write lock,
	// for the same reason as in Catalog.
	mu struct {
		sync.RWMutex
		closed bool
	}
}

var (
	_ raft.LogStore    = (*RaftStore)(nil)
	_ raft.StableStore = (*RaftStore)(nil)
)

// OpenRaftStore opens (creating if needed) the Raft store in dir, which must
// be a directory of its own.
func OpenRaftStore(dir string, opts Options) (*RaftStore, error) {
	log := opts.logger()
	db, err := openPebble(dir, "raftstore", log)
	if err != nil {
		return nil, err
	}
	s := &RaftStore{db: db, log: log.With("component", "raftstore")}
	s.log.Debug("raft store opened", "dir", dir)
	return s, nil
}

// Close closes the store after waiting for calls in flight. A second Close is
// a no-op; any other call after Close returns ErrClosed.
func (s *RaftStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	if err := s.db.close(); err != nil {
		return fmt.Errorf("raftstore: close: %w", err)
	}
	return nil
}

func (s *RaftStore) enter() error {
	s.mu.RLock()
	if s.mu.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// FirstIndex returns the lowest stored log index, or 0 when the log is empty.
func (s *RaftStore) FirstIndex() (uint64, error) {
	return s.edgeIndex(false)
}

// LastIndex returns the highest stored log index, or 0 when the log is empty.
func (s *RaftStore) LastIndex() (uint64, error) {
	return s.edgeIndex(true)
}

// edgeIndex reads the first or last log key. The indexes are not cached:
// raft keeps its own copy and asks rarely (startup, compaction), and reading
// them from pebble cannot go stale after a crash between write and update.
func (s *RaftStore) edgeIndex(last bool) (uint64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	prefix := []byte(raftLogPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("raftstore: index: %w", err)
	}
	var ok bool
	if last {
		ok = it.Last()
	} else {
		ok = it.First()
	}
	if !ok {
		if err := it.Close(); err != nil {
			return 0, fmt.Errorf("raftstore: index: %w", err)
		}
		return 0, nil
	}
	idx, err := parseRaftLogKey(it.Key())
	if err = closeAfter(it, err); err != nil {
		return 0, fmt.Errorf("raftstore: index: %w", err)
	}
	return idx, nil
}

// GetLog reads the entry at index into l. A missing entry returns
// raft.ErrLogNotFound unwrapped, since raft compares against it directly.
func (s *RaftStore) GetLog(index uint64, l *raft.Log) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	err := pebbleGet(s.db.DB, raftLogKey(index), raft.ErrLogNotFound, func(v []byte) error {
		return decodeRaftLog(index, v, l)
	})
	if err == raft.ErrLogNotFound {
		return err
	}
	if err != nil {
		return fmt.Errorf("raftstore: get log %d: %w", index, err)
	}
	return nil
}

// StoreLog stores one entry durably.
func (s *RaftStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs stores entries in one synced batch, so a crash keeps all or none
// of them: raft acknowledges an AppendEntries only after this returns.
func (s *RaftStore) StoreLogs(logs []*raft.Log) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	b := s.db.NewBatch()
	defer b.Close()
	var buf []byte
	for _, l := range logs {
		// Batch.Set copies, so one buffer serves every entry.
		buf = appendRaftLog(buf[:0], l)
		if err := b.Set(raftLogKey(l.Index), buf, nil); err != nil {
			return fmt.Errorf("raftstore: store logs: %w", err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: store logs: %w", err)
	}
	return nil
}

// DeleteRange deletes entries min..max inclusive, durably. It writes a single
// range tombstone, so compacting away a long prefix of the log costs the same
// as deleting one entry.
func (s *RaftStore) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	end := prefixEnd([]byte(raftLogPrefix)) // max == MaxUint64 has no max+1
	if max < math.MaxUint64 {
		end = raftLogKey(max + 1)
	}
	if err := s.db.DeleteRange(raftLogKey(min), end, pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: delete range %d..%d: %w", min, max, err)
	}
	return nil
}

// Set stores a stable-store value durably.
func (s *RaftStore) Set(key, val []byte) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.mu.RUnlock()
	if err := s.db.Set(raftKVKey(key), val, pebble.Sync); err != nil {
		return fmt.Errorf("raftstore: set %q: %w", key, err)
	}
	return nil
}

// Get returns a stable-store value, or ErrKeyNotFound (text "not found") if
// the key was never set.
func (s *RaftStore) Get(key []byte) ([]byte, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	var out []byte
	err := pebbleGet(s.db.DB, raftKVKey(key), ErrKeyNotFound, func(v []byte) error {
		out = append([]byte{}, v...) // pebble's buffer dies with the closer
		return nil
	})
	if err == ErrKeyNotFound {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: get %q: %w", key, err)
	}
	return out, nil
}

// SetUint64 stores val as 8 bytes big-endian, durably.
func (s *RaftStore) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a value written by SetUint64, or ErrKeyNotFound (text
// "not found") if the key was never set; raft treats that as zero.
func (s *RaftStore) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: get uint64 %q: %w: %d bytes", key, ErrCorruptRecord, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
