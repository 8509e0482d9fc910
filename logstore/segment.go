package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aerostream/aerostream/catalog"
	"golang.org/x/sys/unix"
)

// segment is one file of a partition's log plus its two sparse indexes. It
// is owned by its partition's shard goroutine; only the log file handle is
// shared (reference-counted) with fetch results in flight. The log is open
// only while the shard's file cache keeps it (files.go): use file(), not
// ref.
type segment struct {
	base int64 // first offset the segment may hold
	next int64 // offset after the last batch written
	size int64 // bytes written to the log

	// durable is the log size the high watermark covers: readers never see
	// bytes past it.
	durable int64

	logPath string
	ref     *fileRef // nil while the cache has the log closed
	idx     *mmapIndex
	tidx    *mmapIndex
	sealed  bool
	created time.Time

	minTs, maxTs int64
	maxTsOffset  int64 // the last offset of the batch holding maxTs
	sinceIndex   int   // log bytes since the last offset index entry

	// maxTsExact is the offset of the record holding maxTs, found by
	// exactMaxTsOffset for the batch ending at maxTsExactOf.
	maxTsExact, maxTsExactOf int64
	maxTsExactSet            bool

	// files is the shard's log file cache holding this segment (nil for
	// one outside it, which keeps its log open until closeFiles).
	files            *logFiles
	lruPrev, lruNext *segment

	// cloud is the segment's cloud pointer (SegmentID, ObjectKey, ...) as
	// recorded in the catalog; ObjectKey is empty until tierd uploads it.
	cloud catalog.Segment

	// Paced writeback state (see writeback.go).
	wbPos   int64 // sync_file_range has been started up to here
	wbWait  int64 // a job that waits for writeback has been made up to here
	dropPos int64 // page cache dropped up to here
	tailPos int64 // handed to the shard's cache tail (cacheTail) up to here
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

func parseSegmentName(name string) (int64, bool) {
	if !strings.HasSuffix(name, ".log") || len(name) != 24 {
		return 0, false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	return base, err == nil && base >= 0
}

func segmentPaths(dir string, base int64) (log, index, timeindex string) {
	p := filepath.Join(dir, segmentName(base))
	return p + ".log", p + ".index", p + ".timeindex"
}

// createSegment makes a new, empty active segment.
func createSegment(dir string, base int64, opts *Options) (*segment, error) {
	logPath, idxPath, tidxPath := segmentPaths(dir, base)
	f, err := os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, next: base, logPath: logPath, ref: newFileRef(f), created: time.Now(),
		minTs: -1, maxTs: -1, maxTsOffset: -1}
	// Stale indexes from an earlier incarnation of this base must not be
	// reused; O_TRUNC on the log alone would leave them pointing at nothing.
	_ = os.Remove(idxPath)
	_ = os.Remove(tidxPath)
	if s.idx, err = openIndex(idxPath, offsetEntryWidth, opts.MaxIndexBytes, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	if s.tidx, err = openIndex(tidxPath, timeEntryWidth, opts.MaxIndexBytes/offsetEntryWidth*timeEntryWidth, true); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// appendBatches writes buf, which holds whole validated batches with offsets
// already assigned, and indexes them. It allocates nothing.
//
// The segment's state changes only once all of buf is written. A write can
// be short: on a disk that fills up, pwrite writes what fits and returns
// that count without an error (the error comes on the next call). Taking a
// short write for a whole one advanced the size past the end of the file,
// so the next append left a hole of zeros that consumers read as batches
// failing their CRC. On failure the caller truncates the file back to the
// segment's size.
func (s *segment) appendBatches(buf []byte, indexInterval int) error {
	pos := s.size
	// The indexes' blocks for what buf can add are allocated before the
	// log write, so a full disk fails here, with nothing written, rather
	// than in a page fault (see reserve).
	if err := s.reserveIndexes(int64(len(buf)), indexInterval); err != nil {
		return err
	}
	ref, err := s.file()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	fd := int(ref.f.Fd())
	for n := 0; n < len(buf); {
		w, err := unix.Pwrite(fd, buf[n:], pos+int64(n))
		if err == nil && w == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return fmt.Errorf("%w: append to %s at byte %d: %w", ErrStorage, s.logPath, pos+int64(n), err)
		}
		n += w
	}
	for off := 0; off < len(buf); {
		b := buf[off:]
		length := int(binary.BigEndian.Uint32(b[offBatchLength:])) + batchLogOverhead
		base := int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
		lastDelta := int64(int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])))
		maxTs := int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
		s.indexBatch(base, base+lastDelta, pos+int64(off), maxTs, length, indexInterval)
		off += length
	}
	s.size += int64(len(buf))
	return nil
}

// reserveIndexes allocates the blocks of the entries that n more bytes of
// log can add to either index (see mmapIndex.reserve).
func (s *segment) reserveIndexes(n int64, indexInterval int) error {
	k := maxNewEntries(n, indexInterval)
	if err := s.idx.reserve(s.idx.entries + k); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := s.tidx.reserve(s.tidx.entries + k); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}

// indexBatch records a batch in the in-memory stats and, every
// indexInterval bytes, in the sparse indexes.
func (s *segment) indexBatch(base, last, pos int64, maxTs int64, length, indexInterval int) {
	if s.minTs < 0 || (maxTs >= 0 && maxTs < s.minTs) {
		s.minTs = maxTs
	}
	if maxTs > s.maxTs {
		s.maxTs = maxTs
		s.maxTsOffset = last
	}
	if s.sinceIndex >= indexInterval && !s.idx.full() && !s.tidx.full() {
		rel := uint32(base - s.base)
		s.idx.appendOffset(rel, uint32(pos))
		if t, ok := s.tidx.lastTime(); !ok || s.maxTs > t {
			s.tidx.appendTime(s.maxTs, uint32(s.maxTsOffset-s.base))
		}
		s.sinceIndex = 0
	}
	s.sinceIndex += length
	s.next = last + 1
}

// indexFull reports that the indexes cannot take more entries, which forces
// a roll just as Kafka's segment.index.bytes does.
func (s *segment) indexFull() bool { return s.idx.full() || s.tidx.full() }

// readHeader reads the fixed batch header at pos into scratch.
func (s *segment) readHeader(pos int64, scratch []byte) (BatchHeader, error) {
	ref, err := s.file()
	if err != nil {
		return BatchHeader{}, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	n, err := ref.f.ReadAt(scratch[:BatchHeaderSize], pos)
	if n < BatchHeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return BatchHeader{}, fmt.Errorf("%w: %s at %d: %v", ErrCorruptSegment, s.logPath, pos, err)
	}
	h, err := ParseBatchHeader(scratch)
	if err != nil {
		return h, fmt.Errorf("%w: %s at %d: %v", ErrCorruptSegment, s.logPath, pos, err)
	}
	return h, nil
}

// findPosition returns the position of the batch holding offset, scanning
// forward from the sparse index entry at or below it. limit bounds the scan
// (the durable size).
func (s *segment) findPosition(offset, limit int64, scratch []byte) (int64, error) {
	_, p := s.idx.lookupOffset(uint32(offset - s.base))
	pos := int64(p)
	for pos < limit {
		h, err := s.readHeader(pos, scratch)
		if err != nil {
			return 0, err
		}
		if h.LastOffset() >= offset {
			return pos, nil
		}
		pos += int64(h.Length)
	}
	return limit, nil
}

// wholeBatchesEnd returns the end of the last batch that starts at or
// after start (a batch boundary) and ends by limit, or start when the
// first batch alone passes limit. It starts from the sparse index entry
// nearest below limit, so it reads a few headers, not every one.
func (s *segment) wholeBatchesEnd(start, limit int64, scratch []byte) (int64, error) {
	pos := start
	if p, ok := s.idx.lookupPosition(uint32(limit)); ok && int64(p) > pos {
		pos = int64(p)
	}
	for pos < limit {
		h, err := s.readHeader(pos, scratch)
		if err != nil {
			return 0, err
		}
		if pos+int64(h.Length) > limit {
			break
		}
		pos += int64(h.Length)
	}
	return pos, nil
}

// findTimestamp returns the first offset whose timestamp is at or after
// ts, with that timestamp, or ok=false when none in this segment. Inside an
// uncompressed batch the records are walked to find the exact record, as
// Kafka does; a compressed batch is answered with its base offset and max
// timestamp, since the store never decompresses.
func (s *segment) findTimestamp(ts, limit int64, scratch []byte) (off, foundTs int64, ok bool, err error) {
	pos := int64(0)
	if rel, ok := s.tidx.lookupTime(ts); ok {
		_, p := s.idx.lookupOffset(rel)
		pos = int64(p)
	}
	for pos < limit {
		h, err := s.readHeader(pos, scratch)
		if err != nil {
			return 0, 0, false, err
		}
		if h.MaxTimestamp >= ts {
			if h.Compression() == 0 {
				body := make([]byte, h.Length)
				if _, err := s.ref.f.ReadAt(body, pos); err == nil { // readHeader opened it
					if o, t, found := recordAtTime(body, &h, ts); found {
						return o, t, true, nil
					}
				}
			}
			return h.BaseOffset, h.MaxTimestamp, true, nil
		}
		pos += int64(h.Length)
	}
	return 0, 0, false, nil
}

// seal trims the indexes and marks the segment immutable.
func (s *segment) seal() error {
	shrinks, err := s.sealLater()
	for _, j := range shrinks {
		if jerr := j.run(); err == nil {
			err = jerr
		}
	}
	return err
}

// sealLater seals the segment's indexes and returns the shrinks of their
// files, which must run before anything reads the files themselves (tierd
// uploads them).
func (s *segment) sealLater() ([]indexShrink, error) {
	if s.sealed {
		return nil, nil
	}
	// The time index is sparse, so its last entry may predate the max
	// timestamp; recovery reads the segment's max from that entry. Kafka
	// appends the same final entry when a segment stops taking writes.
	if t, ok := s.tidx.lastTime(); s.maxTs >= 0 && (!ok || s.maxTs > t) && !s.tidx.full() {
		if err := s.tidx.reserve(s.tidx.entries + 1); err == nil {
			s.tidx.appendTime(s.maxTs, uint32(s.maxTsOffset-s.base))
		}
	}
	j1, err := s.idx.seal()
	if err != nil {
		return nil, err
	}
	j2, err := s.tidx.seal()
	if err != nil {
		return []indexShrink{j1}, err
	}
	s.sealed = true
	return []indexShrink{j1, j2}, nil
}

// syncData makes the log and the index mappings durable.
func (s *segment) syncData() error {
	ref, err := s.file()
	if err != nil {
		return err
	}
	if err := unix.Fdatasync(int(ref.f.Fd())); err != nil {
		return err
	}
	if err := s.idx.sync(); err != nil {
		return err
	}
	return s.tidx.sync()
}

func (s *segment) closeFiles() {
	if s.idx != nil {
		_ = s.idx.close()
	}
	if s.tidx != nil {
		_ = s.tidx.close()
	}
	if s.files != nil {
		s.files.forget(s)
	}
	if s.ref != nil {
		s.ref.release()
		s.ref = nil
	}
}

// remove closes the segment and unlinks its files. Readers holding a
// reference keep the log readable until they release it.
func (s *segment) remove() error {
	s.closeFiles()
	_, idx, tidx := segmentPaths(filepath.Dir(s.logPath), s.base)
	var first error
	for _, p := range []string{s.logPath, idx, tidx} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// scanResult is what a full scan of a log file finds.
type scanResult struct {
	validSize int64 // bytes of whole, CRC-valid, contiguous batches
	next      int64 // offset after the last valid batch
	batches   int
	tornAt    error // why the scan stopped early, nil if the file ended cleanly
}

// scanLog reads r from the start and validates every batch: header, length,
// CRC32C and offset contiguity. visit is called for each valid batch with
// its header and position. The scan stops at the first invalid batch, which
// is where a torn tail begins.
func scanLog(r io.ReaderAt, size int64, base int64, visit func(h *BatchHeader, pos int64)) scanResult {
	res := scanResult{next: base}
	buf := make([]byte, 0, 1<<20)
	var hdr [BatchHeaderSize]byte
	pos := int64(0)
	for pos < size {
		if size-pos < BatchHeaderSize {
			res.tornAt = fmt.Errorf("%w: %d trailing bytes at %d", ErrCorruptSegment, size-pos, pos)
			break
		}
		if _, err := r.ReadAt(hdr[:], pos); err != nil {
			res.tornAt = fmt.Errorf("%w: read at %d: %v", ErrCorruptSegment, pos, err)
			break
		}
		h, err := ParseBatchHeader(hdr[:])
		if err != nil {
			res.tornAt = fmt.Errorf("%w: at %d: %v", ErrCorruptSegment, pos, err)
			break
		}
		if int64(h.Length) > size-pos {
			res.tornAt = fmt.Errorf("%w: batch at %d needs %d bytes, %d left", ErrCorruptSegment, pos, h.Length, size-pos)
			break
		}
		// Offsets only go up; a compacted segment has gaps (cleaner.go).
		if res.batches > 0 && h.BaseOffset < res.next || res.batches == 0 && h.BaseOffset < base {
			res.tornAt = fmt.Errorf("%w: batch at %d has offset %d, expected %d", ErrCorruptSegment, pos, h.BaseOffset, res.next)
			break
		}
		if cap(buf) < int(h.Length) {
			buf = make([]byte, h.Length)
		}
		buf = buf[:h.Length]
		if _, err := r.ReadAt(buf, pos); err != nil {
			res.tornAt = fmt.Errorf("%w: read at %d: %v", ErrCorruptSegment, pos, err)
			break
		}
		if err := checkStoredFields(&h); err != nil {
			res.tornAt = fmt.Errorf("%w: at %d: %v", ErrCorruptSegment, pos, err)
			break
		}
		if crc32.Checksum(buf[offAttributes:], crcTable) != h.CRC {
			res.tornAt = fmt.Errorf("%w: crc mismatch in batch at %d", ErrCorruptSegment, pos)
			break
		}
		if visit != nil {
			visit(&h, pos)
		}
		res.batches++
		res.next = h.NextOffset()
		pos += int64(h.Length)
		res.validSize = pos
	}
	return res
}

// recoverSegment opens an existing segment. When full is set (the active
// segment, or one whose indexes failed validation) it scans and validates
// every batch, truncates a torn tail and rebuilds both indexes from the log.
// Otherwise it trusts the log and validates the indexes, falling back to a
// full recovery if they are corrupt or missing.
func recoverSegment(dir string, base int64, opts *Options, full, active bool) (*segment, error) {
	logPath, idxPath, tidxPath := segmentPaths(dir, base)
	f, err := os.OpenFile(logPath, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &segment{base: base, next: base, logPath: logPath, ref: newFileRef(f), created: st.ModTime(),
		minTs: -1, maxTs: -1, maxTsOffset: -1}
	if !full {
		if err := s.loadSealedIndexes(idxPath, tidxPath, st.Size(), opts); err == nil {
			return s, nil
		} else {
			opts.Logger.Warn("rebuilding segment indexes", "segment", logPath, "err", err)
		}
	}
	if err := s.rebuild(idxPath, tidxPath, st.Size(), opts, active); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// loadSealedIndexes maps and validates the indexes of a sealed segment and
// recovers its stats from the last batch, without reading the whole log.
func (s *segment) loadSealedIndexes(idxPath, tidxPath string, size int64, opts *Options) error {
	var err error
	if s.idx, err = openIndex(idxPath, offsetEntryWidth, 0, false); err != nil {
		return err
	}
	if s.tidx, err = openIndex(tidxPath, timeEntryWidth, 0, false); err != nil {
		return err
	}
	if s.idx.entries, err = validateOffsetIndex(s.idx.data, size); err != nil {
		return err
	}
	if size == 0 {
		return nil
	}
	// Walk from the last index entry to the end to learn the end offset
	// and check that the index agrees with the log.
	scratch := make([]byte, BatchHeaderSize)
	pos := int64(0)
	var wantRel uint32
	if s.idx.entries > 0 {
		wantRel, _ = s.idx.offsetAt(s.idx.entries - 1)
		_, p := s.idx.offsetAt(s.idx.entries - 1)
		pos = int64(p)
	}
	first := true
	for pos < size {
		h, err := s.readHeader(pos, scratch)
		if err != nil {
			return err
		}
		if first && s.idx.entries > 0 && h.BaseOffset != s.base+int64(wantRel) {
			return fmt.Errorf("%w: index entry points at offset %d, log has %d", ErrCorruptIndex, s.base+int64(wantRel), h.BaseOffset)
		}
		first = false
		if pos+int64(h.Length) > size {
			return fmt.Errorf("%w: batch at %d overruns sealed segment", ErrCorruptSegment, pos)
		}
		s.next = h.NextOffset()
		pos += int64(h.Length)
	}
	if s.tidx.entries, err = validateTimeIndex(s.tidx.data, uint32(s.next-s.base)); err != nil {
		return err
	}
	if t, ok := s.tidx.lastTime(); ok {
		s.maxTs = t
		_, rel := s.tidx.timeAt(s.tidx.entries - 1)
		s.maxTsOffset = s.base + int64(rel)
	}
	s.size, s.durable, s.wbPos, s.wbWait, s.dropPos = size, size, size, size, 0
	s.sealed = true
	return nil
}

// rebuild scans the log, truncates a torn tail and writes fresh indexes.
func (s *segment) rebuild(idxPath, tidxPath string, size int64, opts *Options, active bool) error {
	if s.idx != nil {
		s.idx.close()
	}
	if s.tidx != nil {
		s.tidx.close()
	}
	_ = os.Remove(idxPath)
	_ = os.Remove(tidxPath)
	var err error
	if s.idx, err = openIndex(idxPath, offsetEntryWidth, opts.MaxIndexBytes, true); err != nil {
		return err
	}
	if s.tidx, err = openIndex(tidxPath, timeEntryWidth, opts.MaxIndexBytes/offsetEntryWidth*timeEntryWidth, true); err != nil {
		return err
	}
	// As in appendBatches: on a full disk, recovery fails with ErrStorage
	// rather than dying of SIGBUS at every start.
	if err := s.reserveIndexes(size, opts.IndexIntervalBytes); err != nil {
		return err
	}
	res := scanLog(s.ref.f, size, s.base, func(h *BatchHeader, pos int64) {
		s.indexBatch(h.BaseOffset, h.LastOffset(), pos, h.MaxTimestamp, int(h.Length), opts.IndexIntervalBytes)
	})
	if res.tornAt != nil {
		opts.Logger.Warn("truncating torn segment tail", "segment", s.logPath, "valid_bytes", res.validSize,
			"file_bytes", size, "reason", res.tornAt)
		if err := s.ref.f.Truncate(res.validSize); err != nil {
			return err
		}
	}
	if res.batches > 0 {
		s.next = res.next
	}
	s.size, s.durable, s.wbPos, s.wbWait = res.validSize, res.validSize, res.validSize, res.validSize
	if !active {
		return s.seal()
	}
	return nil
}

// recordAtTime walks the records of an uncompressed batch and returns the
// offset and timestamp of the first one at or after ts. It reads only the
// varints it needs and gives up (found=false) on anything malformed.
func recordAtTime(batch []byte, h *BatchHeader, ts int64) (off, recTs int64, found bool) {
	b := batch[BatchHeaderSize:]
	for i := int32(0); i < h.RecordCount; i++ {
		l, n := binary.Varint(b)
		if n <= 0 || l < 0 || int64(len(b)-n) < l {
			return 0, 0, false
		}
		rec := b[n : n+int(l)]
		b = b[n+int(l):]
		if len(rec) < 1 {
			return 0, 0, false
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			return 0, 0, false
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			return 0, 0, false
		}
		if t := h.BaseTimestamp + tsDelta; t >= ts {
			return h.BaseOffset + offDelta, t, true
		}
	}
	return 0, 0, false
}
