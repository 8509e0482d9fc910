package native

import (
	"encoding/binary"
	"errors"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
	"github.com/aerostream/aerostream/logstore/ring"
)

// A push is built from the store's answer without copying records: the
// frame's fields go in a buffer of the push's own, the records as file
// ranges (sendfile) or the store's bytes. What a push needs per frame (the
// Response, that buffer, the fetch result it pins) lives in a pushOut that
// the connection writer hands back to its subscription once the push is
// written, so a subscription under load allocates next to nothing per push.

// pushOut is one push in flight: its Response and what the Response holds
// until it is written.
type pushOut struct {
	resp gateways.Response
	res  ring.FetchResult // released with the push
	head []byte           // the frame's fields; records are sent from res
	cuts []pushCut
	done func()        // po.release, bound once
	home chan *pushOut // its subscription's free pushes
}

// pushCut ends a partition's fields in head; rc's first n bytes follow.
type pushCut struct {
	end int
	rc  *ring.Records
	n   int
}

// freePushes is how many written pushes a subscription keeps for reuse:
// at a follower's pace one or two are in flight at a time.
const freePushes = 8

// pushOut returns a free push of sc's subscription, or a new one.
func (sc *pushScan) pushOut() *pushOut {
	if sc.free == nil {
		sc.free = make(chan *pushOut, freePushes)
	}
	select {
	case po := <-sc.free:
		return po
	default:
	}
	po := &pushOut{head: make([]byte, 0, 1024), home: sc.free}
	po.done = po.release
	return po
}

// release runs once the push is written or dropped, on the connection's
// writer: it hands po back to its subscription (which may have ended: then
// po goes with the channel).
func (po *pushOut) release() {
	po.res.Release()
	po.res = ring.FetchResult{}
	clear(po.cuts)
	po.cuts = po.cuts[:0]
	po.resp.Reset()
	select {
	case po.home <- po:
	default:
	}
}

// pushScan is a subscription's scratch, owned by its goroutine: the fetch
// it repeats, a window of records for reading batch headers, and its
// written pushes.
type pushScan struct {
	req  ring.FetchRequest
	win  [scanWindow]byte
	free chan *pushOut
}

// scanWindow is how much of a file the header scan reads at once: a
// window holds many small batches' headers, where one read per header
// would cost a syscall per batch (a batch per record or two at a follower's
// pace).
const scanWindow = 8 << 10

// pushFrame builds a push of whole batches from res, moving the
// subscription's offsets past them. It returns nil (and releases res) when
// there is nothing to push, and failed when a partition answered an error
// (pushed, and the end of the subscription). Otherwise the push holds res
// until it is written (po.resp's release).
func (s *session) pushFrame(sub *subscription, res ring.FetchResult, sc *pushScan) (po *pushOut, spent int, failed bool) {
	po = sc.pushOut()
	b := wire.AppendHeader(po.head[:0], wire.OpSubscribe, 0)
	b = wire.AppendHead(b, ok(sub.id))
	countAt := len(b)
	b = wire.AppendU16(b, 0) // partition count, below
	po.res = res
	total, count := 0, 0
	for i := range po.res.Partitions {
		pr := &po.res.Partitions[i]
		fp := wire.FetchedPartition{TopicID: sub.ids[i], Partition: pr.Partition, Code: codeFor(pr.Err), HighWatermark: pr.HighWatermark, LogStartOffset: pr.LogStartOffset}
		n, next := 0, int64(-1)
		if pr.Err == nil {
			n, next = sc.wholeBatches(&pr.Records)
			if n == 0 {
				continue
			}
		} else {
			failed = true
		}
		b = wire.AppendFetchedHead(b, &fp, n)
		c := pushCut{end: len(b), n: n}
		if n > 0 {
			c.rc = &pr.Records
			sub.parts[i].Offset = next
		}
		po.cuts = append(po.cuts, c)
		total += n
		count++
	}
	po.head = b
	if count == 0 {
		po.release()
		return nil, 0, false
	}
	binary.BigEndian.PutUint16(b[countAt:], uint16(count))
	binary.BigEndian.PutUint32(b[3:], uint32(len(b)-wire.HeaderSize+total))
	resp := &po.resp
	prev := 0
	for _, c := range po.cuts {
		resp.AddBytes(b[prev:c.end])
		prev = c.end
		if c.rc != nil {
			addRecords(resp, c.rc, c.n)
		}
	}
	resp.OnRelease(po.done)
	return po, total, failed
}

// addRecords adds the first n bytes of rc to resp.
func addRecords(resp *gateways.Response, rc *ring.Records, n int) {
	if rc.File != nil {
		resp.AddFile(rc.File, rc.Pos, n)
		return
	}
	for i := -1; i < len(rc.More) && n > 0; i++ {
		chunk := rc.Bytes
		if i >= 0 {
			chunk = rc.More[i]
		}
		k := min(n, len(chunk))
		resp.AddBytes(chunk[:k])
		n -= k
	}
}

// wholeBatches returns how many bytes of rc are whole batches, and the
// offset after the last of them, reading only the batches' headers.
func (sc *pushScan) wholeBatches(rc *ring.Records) (int, int64) {
	size := rc.Size()
	pos, next := 0, int64(-1)
	// The window holds rc's bytes [at, at+held).
	at, held := 0, 0
	for pos+wire.BatchHeaderSize <= size {
		if pos+27 > at+held {
			n := min(len(sc.win), size-pos)
			if readRecords(rc, pos, sc.win[:n]) != nil {
				break
			}
			at, held = pos, n
		}
		hdr := sc.win[pos-at : pos-at+27]
		n := 12 + int(int32(binary.BigEndian.Uint32(hdr[8:])))
		if n < wire.BatchHeaderSize || pos+n > size {
			break
		}
		next = int64(binary.BigEndian.Uint64(hdr)) + int64(int32(binary.BigEndian.Uint32(hdr[23:]))) + 1
		pos += n
	}
	return pos, next
}

// readRecords reads len(dst) bytes of rc from off.
func readRecords(rc *ring.Records, off int, dst []byte) error {
	if rc.File != nil {
		k, err := rc.File.ReadAt(dst, rc.Pos+int64(off))
		if k == len(dst) {
			return nil
		}
		if err == nil {
			err = errors.New("short read")
		}
		return err
	}
	got := 0
	for i := -1; i < len(rc.More); i++ {
		chunk := rc.Bytes
		if i >= 0 {
			chunk = rc.More[i]
		}
		if off >= len(chunk) {
			off -= len(chunk)
			continue
		}
		got += copy(dst[got:], chunk[off:])
		off = 0
		if got == len(dst) {
			return nil
		}
	}
	return errors.New("past the end")
}
