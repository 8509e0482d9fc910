package logstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"time"
)

// Transactions, partition side. A transaction coordinator (in a gateway)
// decides commit or abort; the store keeps, per partition, what Kafka's
// log layer keeps:
//
//   - the ongoing transactions: per producer id, the offset of its first
//     transactional batch not yet ended by a marker. The last stable
//     offset (LSO) is the smallest of them, capped by the high watermark;
//     a read_committed consumer reads no further;
//   - the aborted transactions (Kafka's .txnindex): producer id, first
//     offset and the offset of the abort marker, which a read_committed
//     fetch returns so the client drops those records. It lives in memory,
//     one entry per aborted transaction still in the log (entries below the
//     log start are dropped), and is saved in the producer snapshot taken
//     at each roll, so recovery reads it back and replays only the batches
//     after the snapshot, as for the idempotent-producer state;
//   - markers: control batches (attributes bit 5) that only WriteTxnMarker
//     writes, never a client's produce.
//
// A marker for a producer with no ongoing transaction in the partition is
// not written: it would end nothing, and a coordinator that retries its
// markers after a crash must not add a second one. A marker whose epoch is
// older than the partition's for that producer is refused
// (ErrInvalidProducerEpoch): it comes from a fenced coordinator round.

// Isolation levels of a fetch, as Kafka's.
const (
	ReadUncommitted int8 = 0
	ReadCommitted   int8 = 1
)

// Control record types (the key of a control record), as Kafka's.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// AbortedTxn is one aborted transaction: its producer, its first offset in
// the partition and the offset of its abort marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
}

// TxnMarker asks for a commit or abort marker in one partition.
type TxnMarker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
}

// maxAbortedPerFetch bounds the aborted list of one fetch result; a
// consumer needs only those that overlap what it reads, and a client
// reads at most a few megabytes per partition at a time.
const maxAbortedPerFetch = 10000

// txnState is a partition's transaction state. It belongs to the shard
// goroutine, like the rest of the partition.
type txnState struct {
	ongoing map[int64]int64 // producer id -> first offset of its open transaction
	aborted []AbortedTxn    // ascending LastOffset
}

func (t *txnState) empty() bool { return len(t.ongoing) == 0 && len(t.aborted) == 0 }

// lso is the last stable offset: the high watermark, or the first offset
// of the oldest transaction still open if that is lower.
func (p *partition) lso() int64 {
	l := p.hw
	for _, first := range p.txn.ongoing {
		l = min(l, first)
	}
	return max(l, p.logStart)
}

// noteTxnData notes a transactional data batch: it opens its producer's
// transaction in this partition unless one is open already.
func (p *partition) noteTxnData(h *BatchHeader) {
	if !h.IsTransactional() || h.IsControl() || h.ProducerID < 0 {
		return
	}
	if p.txn.ongoing == nil {
		p.txn.ongoing = map[int64]int64{}
	}
	if _, ok := p.txn.ongoing[h.ProducerID]; !ok {
		p.txn.ongoing[h.ProducerID] = h.BaseOffset
	}
}

// noteTxnMarker applies a marker at h.BaseOffset of type typ: it closes
// the producer's transaction, records it as aborted if it was, and moves
// the partition's view of the producer's epoch up to the marker's, which
// fences batches of older epochs.
func (p *partition) noteTxnMarker(h *BatchHeader, typ int16, ts int64) {
	first, open := p.txn.ongoing[h.ProducerID]
	if open {
		delete(p.txn.ongoing, h.ProducerID)
		if typ == controlAbort {
			p.txn.aborted = append(p.txn.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: h.BaseOffset})
		}
	}
	if p.producers == nil {
		p.producers = map[int64]*producerState{}
	}
	st := p.producers[h.ProducerID]
	switch {
	case st == nil:
		p.producers[h.ProducerID] = &producerState{epoch: h.ProducerEpoch, lastTs: ts}
	case h.ProducerEpoch > st.epoch:
		*st = producerState{epoch: h.ProducerEpoch, lastTs: max(st.lastTs, ts)}
	default:
		st.lastTs = max(st.lastTs, ts)
	}
	p.pruneAborted()
}

// pruneAborted drops the aborted transactions that ended below the log
// start: no fetch can reach them.
func (p *partition) pruneAborted() {
	i := sort.Search(len(p.txn.aborted), func(i int) bool { return p.txn.aborted[i].LastOffset >= p.logStart })
	if i > 0 {
		p.txn.aborted = slices.Delete(p.txn.aborted, 0, i)
	}
}

// abortedIn returns the aborted transactions a read of [from, to) must
// know of: those whose marker is at or after from and that began before to.
func (p *partition) abortedIn(from, to int64) []AbortedTxn {
	a := p.txn.aborted
	i := sort.Search(len(a), func(i int) bool { return a[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(a) && len(out) < maxAbortedPerFetch; i++ {
		if a[i].FirstOffset < to {
			out = append(out, a[i])
		}
	}
	return out
}

// checkMarker decides whether a marker for h's producer is written: not
// when the producer has no open transaction here (open false), and never
// with an epoch older than the partition's for that producer.
func (p *partition) checkMarker(h *BatchHeader) (open bool, err error) {
	if st := p.producers[h.ProducerID]; st != nil && h.ProducerEpoch < st.epoch {
		return false, fmt.Errorf("%w: marker for producer %d epoch %d, partition has epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, st.epoch)
	}
	_, open = p.txn.ongoing[h.ProducerID]
	return open, nil
}

// noteBatch applies one appended batch (b holds it whole) to the
// transaction state: replication and recovery both come through here.
func (p *partition) noteBatch(h *BatchHeader, b []byte, ts int64) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return
	}
	if !h.IsControl() {
		p.noteTxnData(h)
		return
	}
	typ, err := controlType(b)
	if err != nil {
		return // not a marker we can read; Kafka skips unknown control types too
	}
	p.noteTxnMarker(h, typ, ts)
}

// replayTxn is noteBatch for recovery, which has only the header: a
// control batch's record is read from the segment.
func (p *partition) replayTxn(seg *segment, pos int64, h *BatchHeader) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return
	}
	if !h.IsControl() {
		p.noteTxnData(h)
		return
	}
	if h.Length > 1<<16 {
		return // a marker is under a hundred bytes
	}
	ref, err := seg.file()
	if err != nil {
		return
	}
	b := make([]byte, h.Length)
	if _, err := ref.f.ReadAt(b, pos); err != nil {
		return
	}
	p.noteBatch(h, b, h.MaxTimestamp)
}

// controlType reads the type of the control record that batch b holds.
// Control batches are never compressed; their one record's key is a
// version (int16) and a type (int16).
func controlType(b []byte) (int16, error) {
	bad := func(why string) (int16, error) {
		return 0, fmt.Errorf("%w: control batch: %s", ErrCorruptBatch, why)
	}
	if len(b) < BatchHeaderSize+1 {
		return bad("no record")
	}
	r := b[BatchHeaderSize:]
	var fields [3]int64 // record length, then after the attributes byte: timestamp delta, offset delta
	for i := range fields {
		if i == 1 {
			if len(r) < 1 {
				return bad("truncated record")
			}
			r = r[1:] // record attributes
		}
		v, n := binary.Varint(r)
		if n <= 0 {
			return bad("bad varint")
		}
		fields[i] = v
		r = r[n:]
	}
	klen, n := binary.Varint(r)
	if n <= 0 || klen < 4 || int64(len(r)-n) < klen {
		return bad("key too short")
	}
	key := r[n:]
	return int16(binary.BigEndian.Uint16(key[2:])), nil
}

// buildMarker encodes a marker as Kafka writes it: a control batch of one
// record whose key is (version 0, type) and whose value is (version 0,
// coordinator epoch).
func buildMarker(m *TxnMarker, ts int64) []byte {
	typ := controlAbort
	if m.Commit {
		typ = controlCommit
	}
	var rec []byte
	rec = append(rec, 0)                        // attributes
	rec = binary.AppendVarint(rec, 0)           // timestamp delta
	rec = binary.AppendVarint(rec, 0)           // offset delta
	rec = binary.AppendVarint(rec, 4)           // key length
	rec = binary.BigEndian.AppendUint16(rec, 0) // key version
	rec = binary.BigEndian.AppendUint16(rec, uint16(typ))
	rec = binary.AppendVarint(rec, 6)           // value length
	rec = binary.BigEndian.AppendUint16(rec, 0) // value version
	rec = binary.BigEndian.AppendUint32(rec, uint32(m.CoordinatorEpoch))
	rec = binary.AppendVarint(rec, 0) // headers
	body := binary.AppendVarint(nil, int64(len(rec)))
	body = append(body, rec...)

	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(BatchHeaderSize-batchLogOverhead+len(body)))
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrTransactional|attrControl))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(m.ProducerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(m.ProducerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crcTable))
	return b
}

// WriteTxnMarker writes a commit or abort marker to a partition and
// returns once it is durable under the flush policy (as acks=all), with
// the marker's offset, or -1 when there was nothing to end (see the
// comment at the top of txn.go).
func (s *Store) WriteTxnMarker(ctx context.Context, m TxnMarker) (int64, error) {
	if err := validName(m.Topic, m.Partition); err != nil {
		return 0, err
	}
	if m.ProducerID < 0 || m.ProducerEpoch < 0 {
		return 0, fmt.Errorf("%w: marker for producer %d epoch %d", ErrInvalidRequest, m.ProducerID, m.ProducerEpoch)
	}
	r := getRequest(reqProduce)
	r.topic, r.partition, r.acks = m.Topic, m.Partition, -1
	r.appendedAt = time.Now()
	r.records = buildMarker(&m, r.appendedAt.UnixMilli())
	r.marker = true
	if err := s.call(ctx, s.shardFor(m.Topic, m.Partition), r); err != nil {
		if !isCtxErr(err) {
			putRequest(r)
		}
		return 0, err
	}
	off := r.produced.BaseOffset
	putRequest(r)
	return off, nil
}

// checkProduceTxn is produce's check of a batch's transaction fields: a
// control batch only comes from WriteTxnMarker (marker), and a marker with
// nothing to end is answered without a write (skip).
func (p *partition) checkProduceTxn(h *BatchHeader, marker bool) (skip bool, err error) {
	if h.IsControl() != marker {
		if marker {
			return false, fmt.Errorf("%w: a marker must be a control batch", ErrInvalidRequest)
		}
		return false, fmt.Errorf("%w: control batches are written by the transaction coordinator only", ErrCorruptBatch)
	}
	if !marker {
		return false, nil
	}
	open, err := p.checkMarker(h)
	return !open, err
}

// noteAppendTxn updates the producer and transaction state for a batch of
// producer h just appended (b holds it whole): a marker ends a
// transaction, any other batch counts in its producer's sequences and may
// open one.
func (p *partition) noteAppendTxn(h *BatchHeader, b []byte, ts int64) {
	if h.IsControl() {
		p.noteBatch(h, b, ts)
		return
	}
	p.recordProducer(h, ts)
	p.noteTxnData(h)
}

// replayBatch is noteAppendTxn for recovery, from the header at pos.
func (p *partition) replayBatch(seg *segment, pos int64, h *BatchHeader) {
	if !h.IsControl() {
		p.recordProducer(h, h.MaxTimestamp)
	}
	p.replayTxn(seg, pos, h)
}

// appendTxnState appends the transaction state to a producer snapshot:
// the open transactions (count, then producer id and first offset, by
// producer id) and the aborted ones (count, then producer id, first and
// last offset, in log order).
func appendTxnState(b []byte, t *txnState) []byte {
	ids := make([]int64, 0, len(t.ongoing))
	for id := range t.ongoing {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint64(b, uint64(t.ongoing[id]))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(t.aborted)))
	for _, a := range t.aborted {
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	}
	return b
}

// readTxnState reads what appendTxnState wrote and returns the rest.
func readTxnState(b []byte) (txnState, []byte, bool) {
	var t txnState
	if len(b) < 4 {
		return t, b, false
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n)*16 > uint64(len(b)) {
		return t, b, false
	}
	if n > 0 {
		t.ongoing = make(map[int64]int64, n)
	}
	for i := uint32(0); i < n; i++ {
		t.ongoing[int64(binary.BigEndian.Uint64(b))] = int64(binary.BigEndian.Uint64(b[8:]))
		b = b[16:]
	}
	if len(b) < 4 {
		return t, b, false
	}
	n = binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n)*24 > uint64(len(b)) {
		return t, b, false
	}
	for i := uint32(0); i < n; i++ {
		a := AbortedTxn{ProducerID: int64(binary.BigEndian.Uint64(b)), FirstOffset: int64(binary.BigEndian.Uint64(b[8:])),
			LastOffset: int64(binary.BigEndian.Uint64(b[16:]))}
		if len(t.aborted) > 0 && a.LastOffset < t.aborted[len(t.aborted)-1].LastOffset {
			return t, b, false
		}
		t.aborted = append(t.aborted, a)
		b = b[24:]
	}
	return t, b, true
}

// lsoLimit caps limit, how far into seg a consumer may read, at the batch
// holding the last stable offset: a read_committed consumer gets nothing
// of a transaction still open.
func (p *partition) lsoLimit(seg *segment, limit int64, scratch []byte) (int64, error) {
	lso := p.lso()
	switch {
	case seg.next <= lso:
		return limit, nil
	case seg.base >= lso:
		return 0, nil
	}
	pos, err := seg.findPosition(lso, limit, scratch)
	if err != nil {
		return 0, err
	}
	return min(pos, limit), nil
}

// readCommitted finishes a read_committed read of p: the aborted
// transactions it needs, and, when it stopped at an open transaction
// below the high watermark, a wait for the next move (a marker moves it).
func (p *partition) readCommitted(r *request, fp *FetchPartition, res *FetchPartitionResult) {
	res.AbortedTransactions = p.abortedIn(fp.Offset, res.LastStableOffset)
	if r.wantWait && res.Records.Size() == 0 && fp.Offset >= res.LastStableOffset && fp.Offset < p.hw {
		r.waits = append(r.waits, p.waitChanFor(false))
	}
}

// batchesBefore cuts a cold read (whole batches in parts back to back) at
// the first batch whose base offset is end or past it, as lsoLimit and
// hwLimit cut a hot read. A batch too short to show its header is left
// for the client to drop, as any partial batch is.
func batchesBefore(parts [][]byte, end int64) [][]byte {
	var hdr [12]byte // base offset and length
	i, at := 0, 0    // the part and the position in it where the next batch starts
	for i < len(parts) {
		n, pi, pat := 0, i, at
		for n < len(hdr) && pi < len(parts) {
			c := copy(hdr[n:], parts[pi][pat:])
			n += c
			if pat += c; pat == len(parts[pi]) {
				pi, pat = pi+1, 0
			}
		}
		if n < len(hdr) {
			return parts
		}
		if int64(binary.BigEndian.Uint64(hdr[:8])) >= end {
			out := append([][]byte(nil), parts[:i]...)
			if at > 0 {
				out = append(out, parts[i][:at])
			}
			return out
		}
		skip := 12 + int(int32(binary.BigEndian.Uint32(hdr[8:])))
		if skip < 12 {
			return parts
		}
		for skip > 0 && i < len(parts) {
			c := min(skip, len(parts[i])-at)
			skip -= c
			if at += c; at == len(parts[i]) {
				i, at = i+1, 0
			}
		}
	}
	return parts
}
