package logstore

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A node's partition count is bounded by two per-process kernel limits:
// open descriptors (RLIMIT_NOFILE) and memory mappings (vm.max_map_count).
// Running out of either mid-write is what hurts: pebble dies on a failed
// WAL rotation, and an index that cannot be mapped fails a roll. So log
// files are opened through a bounded cache (files.go), indexes hold a
// mapping but no descriptor, and a partition create that would take the
// mappings past their budget is refused with ErrTooManyPartitions before
// anything is written.

// liveMaps counts the index mappings the process holds. It is
// process-wide, as vm.max_map_count is.
var liveMaps atomic.Int64

func mmap(fd, size, prot int) ([]byte, error) {
	b, err := unix.Mmap(fd, 0, size, prot, unix.MAP_SHARED)
	if err == nil {
		liveMaps.Add(1)
	}
	return b, err
}

func munmap(b []byte) error {
	err := unix.Munmap(b)
	if err == nil {
		liveMaps.Add(-1)
	}
	return err
}

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit, logs
// the limit now in force and returns it. The Go runtime already raises it
// for programs that import os; a daemon still calls this at start, so the
// limit that sizes the log file cache (MaxOpenLogs) is in its log.
func RaiseFileLimit(log *slog.Logger) uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the open file limit", "err", err)
		return 0
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("cannot raise the open file limit", "soft", lim.Cur, "hard", lim.Max, "err", err)
			return lim.Cur
		}
		lim = want
	}
	log.Info("open file limit", "limit", lim.Cur, "log_files_cached", defaultMaxOpenLogs())
	return lim.Cur
}

// fileLimit is the soft RLIMIT_NOFILE, or a conservative guess.
func fileLimit() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 1024
	}
	return int(lim.Cur)
}

// fileReserve is the descriptors left to everything but log files:
// pebble's tables and WALs (two databases), client sockets, tierd's
// staging files.
const fileReserve = 1024

// defaultMaxOpenLogs is half of what the file limit leaves after the
// reserve, so that a burst of connections never meets a limit that the
// log cache has used up.
func defaultMaxOpenLogs() int {
	return max(64, (fileLimit()-fileReserve)/2)
}

// mapCount is vm.max_map_count, or the kernel's default when unreadable.
func mapCount() int64 {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 65530
}

// defaultMapBudget is how many index mappings partition creates may take
// the process to: three quarters of the kernel's limit, leaving the rest
// for the runtime, the rolls of the partitions already there and their
// sealed segments.
func defaultMapBudget() int64 { return mapCount() * 3 / 4 }

// mapsPerPartition is what a new partition maps: its active segment's
// offset and time indexes.
const mapsPerPartition = 2

// budget is the store's admission check for partition creates.
type budget struct {
	maxPartitions int   // 0: no explicit limit
	maxMaps       int64 // index mappings creates may take the process to
	partitions    atomic.Int64
}

// admit reports whether one more partition fits.
func (b *budget) admit(topic string, id int32) error {
	if n := b.partitions.Load(); b.maxPartitions > 0 && n >= int64(b.maxPartitions) {
		return fmt.Errorf("%w: %s/%d: this node hosts %d partitions, its limit (MaxPartitions)",
			ErrTooManyPartitions, topic, id, n)
	}
	if m := liveMaps.Load(); m+mapsPerPartition > b.maxMaps {
		return fmt.Errorf("%w: %s/%d: %d index mappings in use, budget %d (3/4 of vm.max_map_count)",
			ErrTooManyPartitions, topic, id, m, b.maxMaps)
	}
	return nil
}

// PartitionCapacity is how many partitions the store could hold in all,
// by its budget as it stands: those it holds plus the creates that would
// be admitted now. A store registers it with the controller, whose
// placement puts no more replicas on it. 0 means no limit applies.
func (s *Store) PartitionCapacity() int {
	if len(s.shards) == 0 || s.shards[0].budget == nil {
		return 0
	}
	b := s.shards[0].budget
	held := int(b.partitions.Load())
	capacity := held + int(max(0, (b.maxMaps-liveMaps.Load())/mapsPerPartition))
	if b.maxPartitions > 0 {
		capacity = min(capacity, b.maxPartitions)
	}
	return capacity
}
