package logstore

import "golang.org/x/sys/unix"

// Paced writeback: each full window behind the writer is handed to the
// kernel with sync_file_range(WRITE), so dirty pages never pile up into a
// multi-second stall at the kernel's dirty limit, and the window before it
// is dropped from the page cache (fadvise DONTNEED) once no tailing reader
// has read below it. A reader far behind gets its bytes from disk instead of
// evicting the hot tail.

// wbJob is one writeback step: the ranges to write back and to drop.
type wbJob struct {
	ref               *fileRef // the log file; held until the syscalls are done
	syncFrom, syncLen int64
	dropFrom, dropLen int64
}

// writebackStep decides the next step once a full window is behind the
// writer, and moves the segment's bookkeeping as if it had run. The caller
// runs the job (inline or on the shard's writeback goroutine).
func (s *segment) writebackStep(window int64) (wbJob, bool) {
	if s.size-s.wbPos < window {
		return wbJob{}, false
	}
	j := wbJob{ref: s.log, syncFrom: s.wbPos, syncLen: s.size - s.wbPos}
	end := s.wbPos
	if s.minReadPos >= 0 && s.minReadPos < end {
		end = s.minReadPos
	}
	if end > s.dropPos {
		j.dropFrom, j.dropLen = s.dropPos, end-s.dropPos
		s.dropPos = end
	}
	s.wbPos = s.size
	s.minReadPos = -1
	return j, true
}

// run makes the two syscalls.
func (j *wbJob) run() {
	fd := int(j.ref.f.Fd())
	_ = unix.SyncFileRange(fd, j.syncFrom, j.syncLen, unix.SYNC_FILE_RANGE_WRITE)
	if j.dropLen > 0 {
		_ = unix.Fadvise(fd, j.dropFrom, j.dropLen, unix.FADV_DONTNEED)
	}
}
