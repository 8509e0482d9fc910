package logstore

import (
	"fmt"
	"os"
)

// logFiles is a shard's cache of open segment log files, least recently
// used first out. A descriptor held for every segment's life made the
// file limit the partition limit, and running into it mid-write broke
// pebble's WAL rotation, so a segment's log is opened when a write or read
// needs it and stays open only while it is among the shard's most recently
// used. Closing one here drops the cache's reference: a fetch result or a
// sync holding the file keeps it open until it lets go (fileRef).
//
// Only the shard goroutine touches it. A segment leaves the cache
// (forget) on that goroutine before any other one may close its files.
type logFiles struct {
	max        int // descriptors the cache may hold
	open       int // descriptors held: one per log, two with a writeback handle
	head, tail *segment
}

func newLogFiles(max int) *logFiles { return &logFiles{max: max} }

// adopt puts a segment that holds its log open under the cache.
func (c *logFiles) adopt(s *segment) {
	if s.files != nil || s.ref == nil {
		return
	}
	s.files = c
	c.pushFront(s)
	c.open += s.ref.descriptors()
	c.evict(s)
}

// touch marks s as just used.
func (c *logFiles) touch(s *segment) {
	if c.head == s {
		return
	}
	c.unlink(s)
	c.pushFront(s)
}

// grew counts a descriptor s's log just opened beside the first (its
// writeback handle).
func (c *logFiles) grew(s *segment) {
	c.open++
	c.evict(s)
}

// forget takes s out of the cache; it keeps the reference it holds, which
// closeFiles drops.
func (c *logFiles) forget(s *segment) {
	if s.files != c {
		return
	}
	c.unlink(s)
	if s.ref != nil {
		c.open -= s.ref.descriptors()
	}
	s.files = nil
}

// evict closes the least recently used logs until the cache is within
// bounds, sparing keep (the one being used).
func (c *logFiles) evict(keep *segment) {
	for c.open > c.max && c.tail != nil && c.tail != keep {
		s := c.tail
		c.unlink(s)
		c.open -= s.ref.descriptors()
		s.ref.release()
		s.ref = nil
		// It stays adopted: file() reopens the log and puts it back.
	}
}

func (c *logFiles) pushFront(s *segment) {
	s.lruPrev, s.lruNext = nil, c.head
	if c.head != nil {
		c.head.lruPrev = s
	}
	c.head = s
	if c.tail == nil {
		c.tail = s
	}
}

func (c *logFiles) unlink(s *segment) {
	if s.lruPrev != nil {
		s.lruPrev.lruNext = s.lruNext
	} else if c.head == s {
		c.head = s.lruNext
	}
	if s.lruNext != nil {
		s.lruNext.lruPrev = s.lruPrev
	} else if c.tail == s {
		c.tail = s.lruPrev
	}
	s.lruPrev, s.lruNext = nil, nil
}

// file returns the segment's open log, opening it when the cache had
// closed it. The reference is the segment's own: a caller that hands the
// file to another goroutine acquires one of its own first.
func (s *segment) file() (*fileRef, error) {
	if s.ref != nil {
		if s.files != nil {
			s.files.touch(s)
		}
		return s.ref, nil
	}
	f, err := os.OpenFile(s.logPath, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.logPath, err)
	}
	s.ref = newFileRef(f)
	if c := s.files; c != nil {
		c.pushFront(s)
		c.open++
		c.evict(s)
	}
	return s.ref, nil
}

// descriptors is how many descriptors the reference holds open.
func (r *fileRef) descriptors() int {
	if r.wb != nil {
		return 2
	}
	return 1
}
