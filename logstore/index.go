package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mmapIndex is a fixed-width, append-only, memory-mapped index file. The
// file is preallocated to its maximum size while the segment is active, so
// appends are plain stores into the mapping with no syscall; on seal (and on
// clean close) it is truncated to the used length. Only the owning shard
// goroutine touches it.
//
// It holds no descriptor: the mapping outlives the one it was made from,
// and the rare calls that need the file (reserve, seal) open it by path.
// Two descriptors per segment held for its life capped a node at a third
// of its file limit in partitions.
type mmapIndex struct {
	path    string
	data    []byte // the mapping; len = mapped size
	width   int    // bytes per entry
	entries int
	// reserved is how much of the file, from its start, has blocks
	// allocated by reserve; noReserve is set where the filesystem cannot
	// allocate ahead (reserve then does nothing).
	reserved  int
	noReserve bool
}

// indexReserveChunk is how far ahead reserve allocates: one fallocate per
// 8,192 offset entries, which is one per 32 MiB of log at the default
// index interval.
const indexReserveChunk = 64 << 10

const (
	offsetEntryWidth = 8  // relative offset uint32, position uint32
	timeEntryWidth   = 12 // timestamp int64, relative offset uint32
)

// openIndex maps path. When writable, the file is grown to maxBytes. The
// number of valid entries is given by the caller (it was recovered or
// validated); use countEntries on the raw mapping when unknown.
func openIndex(path string, width, maxBytes int, writable bool) (*mmapIndex, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR | os.O_CREATE
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping stays valid without it
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := int(st.Size())
	if writable {
		maxBytes -= maxBytes % width
		if size < maxBytes {
			if err := f.Truncate(int64(maxBytes)); err != nil {
				return nil, err
			}
			size = maxBytes
		}
	}
	idx := &mmapIndex{path: path, width: width}
	if size == 0 {
		return idx, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	data, err := mmap(int(f.Fd()), size, prot)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	if writable {
		// The preallocated tail is a hole. Without this hint the first
		// store into a new index faults in a whole readahead window of
		// it, zero-filled: 1.6 ms measured on ext4 (kernel 6.18), twice
		// per roll (both indexes), on the shard goroutine, so every
		// produce to the shard's partitions waited. With it a fault maps
		// one page (about 5 µs). Appends and lookups touch single pages
		// anyway. Only a hint: a failure costs speed, not correctness.
		_ = unix.Madvise(data, unix.MADV_RANDOM)
	}
	idx.data = data
	return idx, nil
}

// reserve allocates disk blocks for the index's first entries entries
// before anything stores into them. The preallocated file is sparse, and a
// store into a hole of a shared mapping makes the filesystem allocate a
// block inside a page fault; on a full disk that fault cannot fail
// politely and raises SIGBUS, which kills the process. An fallocate that
// fails returns ENOSPC instead, which the append turns into ErrStorage
// before it writes anything. Allocating the whole preallocated size up
// front would take 17.5 MiB of disk per active segment, per partition,
// whether or not the index ever fills; this takes a chunk at a time.
func (x *mmapIndex) reserve(entries int) error {
	need := min(entries*x.width, len(x.data))
	if x.noReserve || need <= x.reserved {
		return nil
	}
	to := min((need+indexReserveChunk-1)/indexReserveChunk*indexReserveChunk, len(x.data))
	f, err := os.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("reserve %d bytes of %s: %w", to-x.reserved, x.path, err)
	}
	err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, int64(x.reserved), int64(to-x.reserved))
	f.Close()
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		x.noReserve = true // as before: blocks are allocated on first store
		return nil
	case err != nil:
		return fmt.Errorf("reserve %d bytes of %s: %w", to-x.reserved, x.path, err)
	}
	x.reserved = to
	return nil
}

// maxNewEntries bounds how many entries n bytes of log can add to an index:
// an entry needs indexInterval bytes since the one before it, and every
// batch is at least a header, so reserve can be given a bound without a
// walk over the batches.
func maxNewEntries(n int64, indexInterval int) int {
	return int(n/int64(max(indexInterval, BatchHeaderSize))) + 1
}

func (x *mmapIndex) capacity() int { return len(x.data) / x.width }
func (x *mmapIndex) full() bool    { return x.entries >= x.capacity() }

func (x *mmapIndex) appendOffset(rel uint32, pos uint32) {
	o := x.entries * offsetEntryWidth
	binary.BigEndian.PutUint32(x.data[o:], rel)
	binary.BigEndian.PutUint32(x.data[o+4:], pos)
	x.entries++
}

func (x *mmapIndex) offsetAt(i int) (rel uint32, pos uint32) {
	o := i * offsetEntryWidth
	return binary.BigEndian.Uint32(x.data[o:]), binary.BigEndian.Uint32(x.data[o+4:])
}

func (x *mmapIndex) appendTime(ts int64, rel uint32) {
	o := x.entries * timeEntryWidth
	binary.BigEndian.PutUint64(x.data[o:], uint64(ts))
	binary.BigEndian.PutUint32(x.data[o+8:], rel)
	x.entries++
}

func (x *mmapIndex) timeAt(i int) (ts int64, rel uint32) {
	o := i * timeEntryWidth
	return int64(binary.BigEndian.Uint64(x.data[o:])), binary.BigEndian.Uint32(x.data[o+8:])
}

// lookupOffset returns the greatest entry with rel <= target, or (0, 0) when
// the target precedes every entry: the segment start is always a valid scan
// origin.
func (x *mmapIndex) lookupOffset(target uint32) (rel uint32, pos uint32) {
	lo, hi := 0, x.entries-1
	found := -1
	for lo <= hi {
		mid := int(uint(lo+hi) >> 1)
		r, _ := x.offsetAt(mid)
		if r <= target {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return 0, 0
	}
	return x.offsetAt(found)
}

// lookupPosition returns the position of the last entry at or below
// limit, or ok=false when every entry lies beyond it. Positions grow with
// offsets, so the entries are sorted by position too.
func (x *mmapIndex) lookupPosition(limit uint32) (pos uint32, ok bool) {
	lo, hi := 0, x.entries-1
	for lo <= hi {
		mid := int(uint(lo+hi) >> 1)
		if _, p := x.offsetAt(mid); p <= limit {
			pos, ok = p, true
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	return pos, ok
}

// lookupTime returns the relative offset of the last entry whose timestamp
// is below ts, which is a safe place to start scanning for the first batch
// with a timestamp at or after ts.
func (x *mmapIndex) lookupTime(ts int64) (rel uint32, ok bool) {
	lo, hi := 0, x.entries-1
	found := -1
	for lo <= hi {
		mid := int(uint(lo+hi) >> 1)
		t, _ := x.timeAt(mid)
		if t < ts {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return 0, false
	}
	_, r := x.timeAt(found)
	return r, true
}

// lastTime returns the newest time entry, if any.
func (x *mmapIndex) lastTime() (int64, bool) {
	if x.entries == 0 {
		return 0, false
	}
	t, _ := x.timeAt(x.entries - 1)
	return t, true
}

// validateOffsets checks that n entries are strictly increasing in both
// columns and point inside a log of logSize bytes. Used on open of sealed
// segments, so a corrupt index is rebuilt rather than trusted.
func validateOffsetIndex(data []byte, logSize int64) (int, error) {
	if len(data)%offsetEntryWidth != 0 {
		return 0, fmt.Errorf("%w: offset index size %d is not a multiple of %d", ErrCorruptIndex, len(data), offsetEntryWidth)
	}
	n := len(data) / offsetEntryWidth
	var prevRel, prevPos uint32
	for i := 0; i < n; i++ {
		o := i * offsetEntryWidth
		rel := binary.BigEndian.Uint32(data[o:])
		pos := binary.BigEndian.Uint32(data[o+4:])
		if i > 0 && (rel <= prevRel || pos <= prevPos) {
			return 0, fmt.Errorf("%w: offset index entry %d (%d,%d) not after (%d,%d)", ErrCorruptIndex, i, rel, pos, prevRel, prevPos)
		}
		if int64(pos) >= logSize {
			return 0, fmt.Errorf("%w: offset index entry %d position %d beyond log size %d", ErrCorruptIndex, i, pos, logSize)
		}
		prevRel, prevPos = rel, pos
	}
	return n, nil
}

// validateTimeIndex checks ordering of a time index: timestamps never go
// down and relative offsets strictly increase.
func validateTimeIndex(data []byte, maxRel uint32) (int, error) {
	if len(data)%timeEntryWidth != 0 {
		return 0, fmt.Errorf("%w: time index size %d is not a multiple of %d", ErrCorruptIndex, len(data), timeEntryWidth)
	}
	n := len(data) / timeEntryWidth
	var prevTs int64
	var prevRel uint32
	for i := 0; i < n; i++ {
		o := i * timeEntryWidth
		ts := int64(binary.BigEndian.Uint64(data[o:]))
		rel := binary.BigEndian.Uint32(data[o+8:])
		if i > 0 && (ts < prevTs || rel <= prevRel) {
			return 0, fmt.Errorf("%w: time index entry %d out of order", ErrCorruptIndex, i)
		}
		if rel > maxRel {
			return 0, fmt.Errorf("%w: time index entry %d offset %d beyond segment", ErrCorruptIndex, i, rel)
		}
		prevTs, prevRel = ts, rel
	}
	return n, nil
}

// trim shrinks the file to the used entries and drops the mapping's write
// access, for a segment that is sealed or closing cleanly.
func (x *mmapIndex) trim() error {
	j, err := x.seal()
	if err != nil {
		return err
	}
	return j.run()
}

// seal drops the mapping's write access and maps only the used entries; it
// returns the shrink of the file to those entries, for the caller to run
// now or on the shard's chore goroutine. The file keeps its preallocated
// size until then, which is harmless: nothing reads past the used entries,
// and recovery rebuilds a sealed index whose file was never shrunk.
func (x *mmapIndex) seal() (indexShrink, error) {
	used := x.entries * x.width
	// A descriptor of its own, so the shrink reaches this file even after
	// the index is closed, its segment removed and its base reused.
	f, err := os.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return indexShrink{}, fmt.Errorf("open %s to seal it: %w", x.path, err)
	}
	fd := int(f.Fd())
	if x.data != nil {
		if err := munmap(x.data); err != nil {
			f.Close()
			return indexShrink{}, err
		}
		x.data = nil
	}
	if used > 0 {
		data, err := mmap(fd, used, unix.PROT_READ)
		if err != nil {
			f.Close()
			return indexShrink{}, fmt.Errorf("mmap %s: %w", x.path, err)
		}
		x.data = data
	}
	return indexShrink{f: f, size: int64(used)}, nil
}

// indexShrink cuts an index file to its used entries. ext4 takes ~0.7 ms
// to truncate a freshly written index (measured on this project's VM), two
// per roll, which the produce path should not wait out.
type indexShrink struct {
	f    *os.File
	size int64
}

// run shrinks the file and closes the descriptor seal opened for it.
func (j indexShrink) run() error {
	err := j.f.Truncate(j.size)
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("shrink %s: %w", j.f.Name(), err)
	}
	return nil
}

func (x *mmapIndex) sync() error {
	if x.data == nil {
		return nil
	}
	return unix.Msync(x.data, unix.MS_SYNC)
}

func (x *mmapIndex) close() error {
	var err error
	if x.data != nil {
		err = munmap(x.data)
		x.data = nil
	}
	return err
}
