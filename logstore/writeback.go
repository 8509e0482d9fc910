package logstore

import "golang.org/x/sys/unix"

// paceWriteback starts writeback of each full window behind the writer with
// sync_file_range(WRITE), so dirty pages never pile up into a multi-second
// stall at the kernel's dirty limit, and drops from the page cache the
// window before it once no tailing reader has read below it. A reader far
// behind gets its bytes from disk instead of evicting the hot tail.
func (s *segment) paceWriteback(window int64) {
	if s.size-s.wbPos < window {
		return
	}
	fd := int(s.log.f.Fd())
	_ = unix.SyncFileRange(fd, s.wbPos, s.size-s.wbPos, unix.SYNC_FILE_RANGE_WRITE)
	end := s.wbPos
	if s.minReadPos >= 0 && s.minReadPos < end {
		end = s.minReadPos
	}
	if end > s.dropPos {
		_ = unix.Fadvise(fd, s.dropPos, end-s.dropPos, unix.FADV_DONTNEED)
		s.dropPos = end
	}
	s.wbPos = s.size
	s.minReadPos = -1
}
