package logstore

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Paced writeback: each full window behind the writer is handed to the
// kernel with sync_file_range(WRITE), so dirty pages never pile up into a
// multi-second stall at the kernel's dirty limit, and the window before it
// is dropped from the page cache (fadvise DONTNEED) once no tailing reader
// needs it and it has left the shard's cache tail (cacheTail). A reader
// needs what lies above the lowest position it was seen at: a consumer
// lagging a little behind the producers reads each window somewhat later
// than it was written, and dropping those pages under it
// sends its fetches to the disk. So the lowest read position is held for
// readerHold after it was last seen, even through windows the reader did not
// touch, as long as it is within holdWindows of the writer; a reader gone
// for longer no longer pins anything, and a reader further behind pins
// nothing either: it gets its bytes from disk, and keeping a tail it will
// not read before the writer has moved on would only grow the page cache.
//
// What such a reader brings back from the disk is dropped again once it is
// sent (Records.uncache): left cached, those pages grew the page cache by
// the lagging consumers' read rate, each one a fresh page, and on the VM
// this was measured on fresh pages are what make pwrite and the client's
// socket reads costly. At full load (aerostream bench, rate max: consumers
// fall behind) dropping them raised the publish rate from 561-596k msg/s to
// 633-661k (three runs each, alternated) and took the broker from 72-79%
// of a core to 68-69%.

// holdWindows is the reach of a hold, in writeback windows behind the
// writer (64 MiB a partition at the default 8 MiB): a reader further behind
// than that reads from disk and holds nothing.
//
// Unbounded, the page cache grew by the whole ingest rate while consumers
// lagged, and on the 2-core Firecracker VM this was measured on, pwrite
// became three times as costly (pprof at full load: shard.produce from
// 1.7 s to 5.3 s of CPU in 10 s, publish rate down a fifth), probably
// because every fresh guest page is backed by the host on first touch,
// while pages dropped and reused stay cheap.
//
// The reach was 2 windows, and a reader beyond it still kept those 2
// cached; with 8 kept that way, full load (consumers seconds behind) lost a
// fifth of its publish rate. But 2 windows are one second of a partition
// taking 16 MiB/s (500,000 msg/s of 1 KiB over 32 partitions), so a
// consumer held up for longer than that fell to the disk. Now readers out
// of reach keep nothing, which at full load took the broker from 73-75% of
// a core to 61-62% at the same publish rate (two runs each, alternated),
// and the reach can be 8 windows, four seconds at that rate.
const holdWindows = 8

// readerHold is how long the lowest position a reader was seen at keeps
// the pages above it cached: longer than a consumer's pause between fetches
// (a rebalance, a slow poll loop), short enough that a consumer that went
// away releases them soon.
const readerHold = 30 * time.Second

// cacheTail delays the drops writeback decides on, so that the last
// budget bytes written on a shard stay in the page cache: a consumer
// replaying a backlog written minutes ago (a new consumer group, a job
// catching up) reads them from memory, as it would from Kafka, instead of
// from a disk slower than the client. Beyond the budget the oldest ranges
// are dropped, so the page cache stops growing there and its pages are
// reused rather than fresh. The shard goroutine owns it.
type cacheTail struct {
	budget int64 // bytes; 0 drops at once
	held   int64 // bytes in q
	q      []tailRange
	head   int // q[head:] is the queue; the front is compacted away as it grows
}

// tailRange is a range writeback may drop, waiting its turn.
type tailRange struct {
	p          *partition
	seg        *segment
	from, size int64
}

// admit queues the drop range of j (writebackStep's choice), clears it from
// j, and returns the oldest ranges now over the budget, to be dropped. The
// returned slice is valid until the next call.
func (c *cacheTail) admit(p *partition, seg *segment, j *wbJob) []tailRange {
	if j.dropLen <= 0 {
		return nil
	}
	if c.head > 0 && c.head >= len(c.q)/2 {
		n := copy(c.q, c.q[c.head:])
		clear(c.q[n:])
		c.q, c.head = c.q[:n], 0
	}
	c.q = append(c.q, tailRange{p: p, seg: seg, from: j.dropFrom, size: j.dropLen})
	c.held += j.dropLen
	j.dropFrom, j.dropLen = 0, 0
	start := c.head
	for c.held > c.budget && c.head < len(c.q) {
		c.held -= c.q[c.head].size
		c.head++
	}
	return c.q[start:c.head]
}

// wbJob is one writeback step: the range to start writing back, the range
// to wait for (what earlier steps started), and the range to drop.
type wbJob struct {
	p                 *partition // whose failed a failure sets; nothing else of it is touched
	ref               *fileRef   // the log file (set by queueWriteback); held until the syscalls are done
	syncFrom, syncLen int64
	waitFrom, waitLen int64
	dropFrom, dropLen int64
	barrier           chan struct{} // set alone: closed when every job before it has run
}

// readHold is the lowest position readers of a partition were seen at,
// (segment base, byte position): a reader there still needs every page
// above it, in its segment and in all later ones.
type readHold struct {
	base, pos int64 // -1: none
	until     int64 // unix nanoseconds when the hold lapses unless seen again
}

// lower reports whether (base, pos) lies below the hold, or the hold is empty.
func (h *readHold) lower(base, pos int64) bool {
	return h.base < 0 || base < h.base || (base == h.base && pos < h.pos)
}

// noteRead records a fetch served from (base, pos) since the last step.
func (p *partition) noteRead(base, pos int64) {
	if p.fresh.lower(base, pos) {
		p.fresh.base, p.fresh.pos = base, pos
	}
}

// writebackStep decides the next step once a full window is behind the
// writer of p's segment s, and moves the bookkeeping as if it had run. The
// caller runs the job (inline or on the shard's writeback goroutine). now
// is the time in nanoseconds, for the reader hold.
func (p *partition) writebackStep(s *segment, window, now int64) (wbJob, bool) {
	if s.size-s.wbPos < window {
		return wbJob{}, false
	}
	j := wbJob{p: p, syncFrom: s.wbPos, syncLen: s.size - s.wbPos,
		waitFrom: s.wbWait, waitLen: s.wbPos - s.wbWait}
	s.wbWait = s.wbPos
	switch {
	case p.fresh.base >= 0:
		p.hold = readHold{base: p.fresh.base, pos: p.fresh.pos, until: now + int64(readerHold)}
		p.fresh.base = -1
	case p.hold.base >= 0 && now >= p.hold.until:
		p.hold.base = -1
	}
	// A reader more than holdWindows behind the writer (below reach)
	// holds nothing. One in an earlier segment counts as at this one's
	// start: it needs all of this segment, if any.
	end, reach := s.wbPos, s.wbPos-holdWindows*window
	switch {
	case p.hold.base < 0 || p.hold.base > s.base:
	case p.hold.base < s.base:
		if reach <= 0 {
			end = s.tailPos
		}
	case p.hold.pos < end && p.hold.pos >= reach:
		end = p.hold.pos
	}
	if end > s.tailPos {
		j.dropFrom, j.dropLen = s.tailPos, end-s.tailPos
		s.tailPos = end
	}
	s.wbPos = s.size
	return j, true
}

// finalWriteback is the last step for a segment that stops taking
// writes (a roll): it starts the writeback of the rest and waits for all
// of it not yet waited for, so a failure in the segment's last window
// reaches the partition too.
func (p *partition) finalWriteback(s *segment) (wbJob, bool) {
	if s.wbWait >= s.size {
		return wbJob{}, false
	}
	j := wbJob{p: p, syncFrom: s.wbPos, syncLen: s.size - s.wbPos,
		waitFrom: s.wbWait, waitLen: s.size - s.wbWait}
	s.wbPos, s.wbWait = s.size, s.size
	return j, true
}

// run starts the writeback of the sync range, waits for the wait range
// (started a step earlier, so usually no wait at all) and drops the drop
// range, which lies below what has been waited for. The wait is what
// learns whether a write failed: pages dropped after a failed write would
// be read back from the disk as whatever it holds there. It returns the
// failure, and then drops nothing.
func (j *wbJob) run() error {
	f := j.ref.wb
	if f == nil {
		f = j.ref.f
	}
	fd := int(f.Fd())
	if j.syncLen > 0 {
		if err := unix.SyncFileRange(fd, j.syncFrom, j.syncLen, unix.SYNC_FILE_RANGE_WRITE); err != nil {
			return fmt.Errorf("writeback of %s, bytes %d-%d: %w", f.Name(), j.syncFrom, j.syncFrom+j.syncLen, err)
		}
	}
	if j.waitLen > 0 {
		const wait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
		if err := unix.SyncFileRange(fd, j.waitFrom, j.waitLen, wait); err != nil {
			return fmt.Errorf("writeback of %s, bytes %d-%d: %w", f.Name(), j.waitFrom, j.waitFrom+j.waitLen, err)
		}
	}
	if j.dropLen > 0 && j.p != nil && j.p.failed.Load() != nil {
		// A cache tail drop after a failed write (see above).
		return nil
	}
	if j.dropLen > 0 {
		// Only a hint: pages it leaves cached cost memory, not correctness.
		_ = unix.Fadvise(fd, j.dropFrom, j.dropLen, unix.FADV_DONTNEED)
	}
	return nil
}

// defaultCacheTailBytes is a quarter of the machine's memory: a backlog of
// that size replays from memory, and the rest stays for everything else.
func defaultCacheTailBytes() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 1 << 30
	}
	return int64(si.Totalram) * int64(si.Unit) / 4
}
