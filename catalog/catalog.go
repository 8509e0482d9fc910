package catalog

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Catalog is the segment catalog. It is safe for concurrent use: pebble
// serializes writes itself, and the catalog adds locking only where it does a
// read-modify-write (SetLogStart) and to make Close wait for calls in flight.
type Catalog struct {
	db  pebbleDB
	log *slog.Logger

	// mu guards closed. Every call holds the read lock for its whole duration
	// so Close (write lock) never closes pebble under a running call, which
	// pebble would answer with a panic rather than an error.
	mu struct {
		sync.RWMutex
		closed bool
	}
	// partMu serializes writers of partition records, so SetLogStart's
	// read-modify-write cannot interleave with PutPartition or
	// DeletePartition and lose an update.
	partMu sync.Mutex
}

// Open opens the catalog stored in dir, creating it if needed. dir must not be
// shared with anything else, in particular not with OpenRaftStore.
func Open(dir string, opts Options) (*Catalog, error) {
	log := opts.logger()
	db, err := openPebble(dir, "catalog", log)
	if err != nil {
		return nil, err
	}
	c := &Catalog{db: db, log: log.With("component", "catalog")}
	c.log.Debug("catalog opened", "dir", dir)
	return c, nil
}

// Close closes the catalog after waiting for calls in flight. Closing twice
// is not an error, so deferred and explicit Close can coexist; every other
// call after Close returns ErrClosed.
func (c *Catalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil
	}
	c.mu.closed = true
	if err := c.db.close(); err != nil {
		return fmt.Errorf("catalog: close: %w", err)
	}
	c.log.Debug("catalog closed")
	return nil
}

// enter starts a call; on success the caller must defer c.mu.RUnlock().
func (c *Catalog) enter() error {
	c.mu.RLock()
	if c.mu.closed {
		c.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// PutSegment creates or replaces the record for s's segment. It is durable
// when it returns.
func (c *Catalog) PutSegment(s Segment) error { return c.putSegment(s, pebble.Sync) }

// PutSegmentUnsynced is PutSegment without waiting for the disk: the record
// is visible at once and becomes durable with the next synced write (the
// write-ahead log is ordered, so that write's sync covers it) or at Close.
// It is for records that recovery can do without: a crash may lose it, so
// nothing irreversible may be done on its strength alone (delete files only
// after a synced write that follows it).
func (c *Catalog) PutSegmentUnsynced(s Segment) error { return c.putSegment(s, pebble.NoSync) }

// Sync makes every write before it durable: the write-ahead log is
// ordered, so syncing it covers the unsynced writes that precede the sync.
// It lets a caller write unsynced on a latency-critical goroutine and wait
// for the disk on another.
func (c *Catalog) Sync() error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if err := c.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("catalog: sync: %w", err)
	}
	return nil
}

func (c *Catalog) putSegment(s Segment, sync *pebble.WriteOptions) error {
	if err := checkSegmentID(s.Topic, s.Partition, s.BaseOffset); err != nil {
		return err
	}
	if !s.State.Valid() {
		return fmt.Errorf("%w: segment state %d", ErrInvalidArgument, uint8(s.State))
	}
	if s.EndOffset < s.BaseOffset {
		return fmt.Errorf("%w: end offset %d below base offset %d", ErrInvalidArgument, s.EndOffset, s.BaseOffset)
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	key := segmentKey(s.Topic, s.Partition, s.BaseOffset)
	if err := c.db.Set(key, appendSegment(nil, &s), sync); err != nil {
		return fmt.Errorf("catalog: put segment %s/%d@%d: %w", s.Topic, s.Partition, s.BaseOffset, err)
	}
	return nil
}

// GetSegment returns the record of the segment starting at base, or an error
// wrapping ErrNotFound.
func (c *Catalog) GetSegment(topic string, partition int32, base int64) (Segment, error) {
	if err := checkSegmentID(topic, partition, base); err != nil {
		return Segment{}, err
	}
	if err := c.enter(); err != nil {
		return Segment{}, err
	}
	defer c.mu.RUnlock()
	var s Segment
	err := c.get(segmentKey(topic, partition, base), func(v []byte) (err error) {
		s, err = decodeSegment(v)
		return err
	})
	if err != nil {
		return Segment{}, fmt.Errorf("catalog: segment %s/%d@%d: %w", topic, partition, base, err)
	}
	s.Topic, s.Partition, s.BaseOffset = topic, partition, base
	return s, nil
}

// DeleteSegment removes a segment record. Deleting a record that does not
// exist is not an error: retention and tierd retry deletions after a crash
// and must not trip over their own earlier success.
func (c *Catalog) DeleteSegment(topic string, partition int32, base int64) error {
	if err := checkSegmentID(topic, partition, base); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	if err := c.db.Delete(segmentKey(topic, partition, base), pebble.Sync); err != nil {
		return fmt.Errorf("catalog: delete segment %s/%d@%d: %w", topic, partition, base, err)
	}
	return nil
}

// Segments returns every segment record of a partition in ascending base
// offset order. A partition without segments yields an empty slice, not
// ErrNotFound: segments and the partition record are separate, and an empty
// partition is normal.
func (c *Catalog) Segments(topic string, partition int32) ([]Segment, error) {
	if err := checkPartitionID(topic, partition); err != nil {
		return nil, err
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	prefix := segmentPartitionPrefix(topic, partition)
	var out []Segment
	err := c.scan(prefix, func(k, v []byte) error {
		if len(k) != len(prefix)+8 {
			return fmt.Errorf("%w: segment key %q", ErrCorruptRecord, k)
		}
		s, err := decodeSegment(v)
		if err != nil {
			return err
		}
		s.Topic, s.Partition = topic, partition
		s.BaseOffset = int64(binary.BigEndian.Uint64(k[len(prefix):]))
		if s.BaseOffset < 0 {
			return fmt.Errorf("%w: segment key %q", ErrCorruptRecord, k)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: segments of %s/%d: %w", topic, partition, err)
	}
	return out, nil
}

// PutPartition creates or replaces a partition record. It is durable when it
// returns.
func (c *Catalog) PutPartition(p Partition) error { return c.putPartition(p, pebble.Sync) }

// PutPartitionUnsynced is PutPartition without waiting for the disk, for a
// caller that makes a burst of records durable with one Sync.
func (c *Catalog) PutPartitionUnsynced(p Partition) error { return c.putPartition(p, pebble.NoSync) }

func (c *Catalog) putPartition(p Partition, sync *pebble.WriteOptions) error {
	if err := checkPartitionID(p.Topic, p.Partition); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	c.partMu.Lock()
	defer c.partMu.Unlock()
	if err := c.db.Set(partitionKey(p.Topic, p.Partition), appendPartition(nil, &p), sync); err != nil {
		return fmt.Errorf("catalog: put partition %s/%d: %w", p.Topic, p.Partition, err)
	}
	return nil
}

// GetPartition returns a partition record, or an error wrapping ErrNotFound.
func (c *Catalog) GetPartition(topic string, partition int32) (Partition, error) {
	if err := checkPartitionID(topic, partition); err != nil {
		return Partition{}, err
	}
	if err := c.enter(); err != nil {
		return Partition{}, err
	}
	defer c.mu.RUnlock()
	p, err := c.getPartition(topic, partition)
	if err != nil {
		return Partition{}, fmt.Errorf("catalog: partition %s/%d: %w", topic, partition, err)
	}
	return p, nil
}

func (c *Catalog) getPartition(topic string, partition int32) (Partition, error) {
	var p Partition
	err := c.get(partitionKey(topic, partition), func(v []byte) (err error) {
		p, err = decodePartition(v)
		return err
	})
	if err != nil {
		return Partition{}, err
	}
	p.Topic, p.Partition = topic, partition
	return p, nil
}

// Partitions returns every partition record, sorted by topic name and then
// partition number. Startup recovery calls it to learn what to open.
func (c *Catalog) Partitions() ([]Partition, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	var out []Partition
	err := c.scan([]byte(partitionPrefix), func(k, v []byte) error {
		topic, partition, err := parsePartitionKey(k)
		if err != nil {
			return err
		}
		p, err := decodePartition(v)
		if err != nil {
			return fmt.Errorf("partition %s/%d: %w", topic, partition, err)
		}
		p.Topic, p.Partition = topic, partition
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: partitions: %w", err)
	}
	// Key order puts "a.b" before "a" ('.' < '/'), so it is not name order.
	slices.SortFunc(out, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, nil
}

// DeletePartition removes a partition record and all of its segment records
// in one atomic batch, so a crash never leaves segments of a deleted
// partition behind (nor a partition that lost only some segments). Like
// DeleteSegment it is idempotent.
func (c *Catalog) DeletePartition(topic string, partition int32) error {
	if err := checkPartitionID(topic, partition); err != nil {
		return err
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	c.partMu.Lock()
	defer c.partMu.Unlock()
	prefix := segmentPartitionPrefix(topic, partition)
	b := c.db.NewBatch()
	defer b.Close()
	// A range tombstone rather than one point delete per segment: it is one
	// entry however many segments the partition had, and the trailing '/' in
	// the prefix keeps it from reaching partition 1 of the same topic or topic
	// "ab" when deleting "a".
	if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
		return fmt.Errorf("catalog: delete partition %s/%d: %w", topic, partition, err)
	}
	if err := b.Delete(partitionKey(topic, partition), nil); err != nil {
		return fmt.Errorf("catalog: delete partition %s/%d: %w", topic, partition, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("catalog: delete partition %s/%d: %w", topic, partition, err)
	}
	c.log.Debug("partition deleted", "topic", topic, "partition", partition)
	return nil
}

// SetLogStart sets the LogStartOffset of an existing partition record,
// durably. It returns an error wrapping ErrNotFound when the partition has no
// record. Whether the offset may move backwards is logstore's policy, not the
// catalog's.
func (c *Catalog) SetLogStart(topic string, partition int32, off int64) error {
	if err := checkPartitionID(topic, partition); err != nil {
		return err
	}
	if off < 0 {
		return fmt.Errorf("%w: log start offset %d", ErrInvalidArgument, off)
	}
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	c.partMu.Lock()
	defer c.partMu.Unlock()
	p, err := c.getPartition(topic, partition)
	if err != nil {
		return fmt.Errorf("catalog: set log start %s/%d: %w", topic, partition, err)
	}
	p.LogStartOffset = off
	if err := c.db.Set(partitionKey(topic, partition), appendPartition(nil, &p), pebble.Sync); err != nil {
		return fmt.Errorf("catalog: set log start %s/%d: %w", topic, partition, err)
	}
	return nil
}

// get looks key up and hands its value to decode while pebble's buffer is
// still valid; decode must copy what it keeps. A missing key is ErrNotFound.
func (c *Catalog) get(key []byte, decode func(v []byte) error) error {
	return pebbleGet(c.db.DB, key, ErrNotFound, decode)
}

// scan calls fn for every key with the given prefix, in key order. fn must
// copy what it keeps: pebble reuses key and value buffers.
func (c *Catalog) scan(prefix []byte, fn func(k, v []byte) error) error {
	return pebbleScan(c.db.DB, prefix, fn)
}

func pebbleGet(db *pebble.DB, key []byte, notFound error, decode func(v []byte) error) error {
	v, closer, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	return closeAfter(closer, decode(v))
}

func pebbleScan(db *pebble.DB, prefix []byte, fn func(k, v []byte) error) error {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.HasPrefix(it.Key(), prefix) {
			break // unreachable with the bounds above; kept as a guard
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return closeAfter(it, err)
		}
		if err := fn(it.Key(), v); err != nil {
			return closeAfter(it, err)
		}
	}
	return closeAfter(it, it.Error())
}

// closeAfter closes c and returns err, or c's close error if err is nil.
func closeAfter(c io.Closer, err error) error {
	cerr := c.Close()
	if err != nil {
		return err
	}
	return cerr
}
