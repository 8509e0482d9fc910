package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Idempotent-producer state. Each partition remembers, per producer id, the
// epoch and the last few batches (sequence range and offsets), as Kafka
// does, so that a retried batch is acknowledged with its original offsets
// and a gap in sequences is refused. The state belongs to the partition's
// shard; it is snapshotted beside each new segment when the log rolls and
// rebuilt on recovery from the newest snapshot plus the batches after it.
//
// A producer that has appended nothing to a partition for
// Options.ProducerIDExpiration is forgotten there, as Kafka forgets it after
// producer.id.expiration.ms: every idempotent client (franz-go and the Java
// client are idempotent by default) gets a new producer id, so without this
// the state grew by one entry per client that ever wrote, forever.

// producerWindow is how many recent batches per producer are remembered;
// Kafka's max.in.flight.requests.per.connection for idempotence is 5.
const producerWindow = 5

type seqEntry struct {
	firstSeq, lastSeq int32
	baseOffset        int64
	lastOffset        int64
}

type producerState struct {
	epoch  int16
	n      int // valid entries in recent, oldest first
	recent [producerWindow]seqEntry
	lastTs int64 // unix ms of its last append: the broker's clock, or the batch's max timestamp on replay
}

func (st *producerState) last() *seqEntry {
	if st.n == 0 {
		return nil
	}
	return &st.recent[st.n-1]
}

func (st *producerState) add(e seqEntry) {
	if st.n == producerWindow {
		copy(st.recent[:], st.recent[1:])
		st.n--
	}
	st.recent[st.n] = e
	st.n++
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// checkProducer decides what to do with an idempotent batch: append it
// (dup == nil, err == nil), acknowledge it as a duplicate of an earlier
// append (dup != nil) or refuse it.
func (p *partition) checkProducer(h *BatchHeader) (dup *seqEntry, err error) {
	st := p.producers[h.ProducerID]
	if st == nil || h.IsControl() {
		// A marker (control batch) has no sequence: txn.go checks it.
		// Unknown producer: a new one starts at 0; a higher sequence means
		// its state was lost to retention or DeleteRecords, which Kafka
		// also accepts rather than failing a healthy producer.
		return nil, nil
	}
	lastSeq := h.BaseSequence + h.LastOffsetDelta
	switch {
	case h.ProducerEpoch < st.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, partition has %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, st.epoch)
	case h.ProducerEpoch > st.epoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	for i := 0; i < st.n; i++ {
		if e := &st.recent[i]; e.firstSeq == h.BaseSequence && e.lastSeq == lastSeq {
			return e, nil
		}
	}
	// A producer known here with no batch in its epoch (a marker began
	// the epoch: transactions v2 bump it at every end) starts at 0, as in
	// Kafka; only a producer the partition does not know at all may start
	// anywhere.
	want := int32(0)
	if last := st.last(); last != nil {
		want = nextSeq(last.lastSeq)
	}
	if h.BaseSequence != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d", ErrOutOfOrderSequence,
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, want)
	}
	return nil, nil
}

// recordProducer notes an appended batch in the producer state; ts is when
// it was appended, in unix ms.
func (p *partition) recordProducer(h *BatchHeader, ts int64) {
	if h.ProducerID < 0 {
		return
	}
	if p.producers == nil {
		p.producers = map[int64]*producerState{}
	}
	st := p.producers[h.ProducerID]
	if st == nil {
		st = &producerState{epoch: h.ProducerEpoch}
		p.producers[h.ProducerID] = st
	}
	if h.ProducerEpoch != st.epoch {
		*st = producerState{epoch: h.ProducerEpoch}
	}
	st.add(seqEntry{firstSeq: h.BaseSequence, lastSeq: h.BaseSequence + h.LastOffsetDelta,
		baseOffset: h.BaseOffset, lastOffset: h.LastOffset()})
	st.lastTs = max(st.lastTs, ts)
}

// expireProducers forgets the producers whose last append is older than
// ttl at now (unix ms). It returns how many it forgot.
func (p *partition) expireProducers(now int64, ttl time.Duration) int {
	n := 0
	for id, st := range p.producers {
		if now-st.lastTs >= ttl.Milliseconds() {
			delete(p.producers, id)
			n++
		}
	}
	return n
}

func snapshotPath(dir string, base int64) string {
	return filepath.Join(dir, segmentName(base)+".snapshot")
}

// encodeProducers serializes the state: version (3), count, then per
// producer id, epoch, last append time, entry count and entries, then the
// transaction state (txn.go); a CRC32C trails the whole. Version 1, read
// still, had no append time, and version 2 no transaction state.
func encodeProducers(m map[int64]*producerState) []byte { return encodeSnapshot(m, &txnState{}) }

func encodeSnapshot(m map[int64]*producerState, t *txnState) []byte {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := []byte{3}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		st := m[id]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(st.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(st.lastTs))
		b = appendEntries(b, st)
	}
	b = appendTxnState(b, t)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// appendEntries appends a producer's entry count and entries, the part
// every snapshot version shares.
func appendEntries(b []byte, st *producerState) []byte {
	b = append(b, byte(st.n))
	for i := 0; i < st.n; i++ {
		e := st.recent[i]
		b = binary.BigEndian.AppendUint32(b, uint32(e.firstSeq))
		b = binary.BigEndian.AppendUint32(b, uint32(e.lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(e.baseOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastOffset))
	}
	return b
}

// decodeProducers reads a snapshot; producers of a version 1 snapshot,
// which has no append times, are taken as last seen at loadTs.
func decodeProducers(b []byte, loadTs int64) (map[int64]*producerState, error) {
	m, _, err := decodeSnapshot(b, loadTs)
	return m, err
}

// decodeSnapshot reads a snapshot with its transaction state (empty
// before version 3).
func decodeSnapshot(b []byte, loadTs int64) (map[int64]*producerState, txnState, error) {
	var t txnState
	bad := func(why string) (map[int64]*producerState, txnState, error) {
		return nil, t, fmt.Errorf("%w: producer snapshot: %s", ErrCorruptSegment, why)
	}
	if len(b) < 9 {
		return bad("too short")
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return bad("checksum mismatch")
	}
	version := body[0]
	if version < 1 || version > 3 {
		return bad(fmt.Sprintf("version %d", version))
	}
	head := 11 // id, epoch, entry count
	if version >= 2 {
		head += 8 // last append time
	}
	count := binary.BigEndian.Uint32(body[1:])
	body = body[5:]
	m := make(map[int64]*producerState, min(int(count), len(body)/head)) // a corrupt count cannot make it allocate more than the input holds
	for i := uint32(0); i < count; i++ {
		if len(body) < head {
			return bad("truncated producer")
		}
		id := int64(binary.BigEndian.Uint64(body))
		st := &producerState{epoch: int16(binary.BigEndian.Uint16(body[8:])), lastTs: loadTs}
		if version >= 2 {
			st.lastTs = int64(binary.BigEndian.Uint64(body[10:]))
		}
		n := int(body[head-1])
		body = body[head:]
		if n > producerWindow || len(body) < n*24 {
			return bad("bad entry count")
		}
		for j := 0; j < n; j++ {
			st.add(seqEntry{firstSeq: int32(binary.BigEndian.Uint32(body)), lastSeq: int32(binary.BigEndian.Uint32(body[4:])),
				baseOffset: int64(binary.BigEndian.Uint64(body[8:])), lastOffset: int64(binary.BigEndian.Uint64(body[16:]))})
			body = body[24:]
		}
		m[id] = st
	}
	if version >= 3 {
		var ok bool
		if t, body, ok = readTxnState(body); !ok {
			return bad("bad transaction state")
		}
	}
	if len(body) != 0 {
		return bad("trailing bytes")
	}
	return m, t, nil
}

// producerSnapshot encodes the state as of offset base (the start of a new
// segment) and names its file; writeSnapshot saves it. The path is "" when
// there is no state to save.
func (p *partition) producerSnapshot(base int64) (path string, data []byte) {
	p.pruneAborted()
	if len(p.producers) == 0 && p.txn.empty() {
		return "", nil
	}
	return snapshotPath(p.dir, base), encodeSnapshot(p.producers, &p.txn)
}

// writeSnapshot saves a producer snapshot atomically: temp file, fsync,
// rename.
func writeSnapshot(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// rebuildProducers restores producer state after recovery: the newest
// readable snapshot at or below the active segment, then every batch after
// it, read by header only. The same headers give back the leader epochs a
// crash kept from the epoch checkpoint; it reports whether it found any.
func (p *partition) rebuildProducers(opts *Options) (epochsAdded bool) {
	entries, _ := os.ReadDir(p.dir)
	var snaps []int64
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".snapshot") && len(name) == 29 {
			var base int64
			if _, err := fmt.Sscanf(name[:20], "%d", &base); err == nil {
				snaps = append(snaps, base)
			}
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i] > snaps[j] })
	from := int64(-1)
	p.txn = txnState{}
	for _, base := range snaps {
		if base > p.leo() {
			// Taken for batches the log no longer holds (a truncation
			// a crash interrupted): once the log grew past it again, it
			// would be read as the state there.
			_ = os.Remove(snapshotPath(p.dir, base))
			continue
		}
		b, err := os.ReadFile(snapshotPath(p.dir, base))
		if err != nil {
			continue
		}
		m, t, err := decodeSnapshot(b, time.Now().UnixMilli())
		if err != nil {
			opts.Logger.Warn("skipping unreadable producer snapshot", "topic", p.topic, "partition", p.id, "base", base, "err", err)
			continue
		}
		p.producers, p.txn, from = m, t, base
		break
	}
	scratch := make([]byte, BatchHeaderSize)
	for _, seg := range p.segs {
		if seg.next <= from {
			continue
		}
		for pos := int64(0); pos < seg.size; {
			h, err := seg.readHeader(pos, scratch)
			if err != nil {
				break
			}
			if h.BaseOffset >= from {
				p.replayBatch(seg, pos, &h)
				epochsAdded = p.noteRecoveredEpoch(&h, opts.RequireRole) || epochsAdded
			}
			pos += int64(h.Length)
		}
	}
	return epochsAdded
}

// pruneSnapshots removes the snapshot files in dir of segments that no
// longer exist: those below first, the first local segment's base.
func pruneSnapshots(dir string, first int64) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".snapshot") || len(name) != 29 {
			continue
		}
		var base int64
		if _, err := fmt.Sscanf(name[:20], "%d", &base); err == nil && base < first {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}
