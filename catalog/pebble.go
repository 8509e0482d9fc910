package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/aerostream/aerostream/internal/ratelog"
)

// Tuning. Both databases hold metadata only (thousands of small records, not
// data), so they get a small cache and memtable instead of pebble's defaults,
// which are sized for a database that owns the machine.
const (
	pebbleCacheSize    = 8 << 20
	pebbleMemTableSize = 4 << 20
	pebbleMaxOpenFiles = 256
	// diskSlowThreshold is pebble's own default: a write or sync stuck this
	// long is worth a warning, since every catalog and raft write syncs.
	diskSlowThreshold = 5 * time.Second
)

// pebbleDB is an open pebble DB plus the disk-health-checking filesystem
// under it, which has its own ticker goroutine and must be closed after the
// DB. We wrap the filesystem ourselves instead of letting pebble do it
// because pebble v2.1 does not close its wrapper when Open fails (a locked
// directory, say), which would leak that goroutine.
type pebbleDB struct {
	*pebble.DB
	fsCloser io.Closer
	closing  chan struct{} // closed first in close: ends a full disk's backoff
}

func (d pebbleDB) close() error {
	close(d.closing)
	err := d.DB.Close()
	if cerr := d.fsCloser.Close(); err == nil {
		err = cerr
	}
	return err
}

// minFreeBytes is the room a database needs to open: replaying its WAL
// may flush a memtable, and opening writes a new WAL and manifest.
const minFreeBytes = pebbleMemTableSize + 1<<20

// openPebble opens (creating if needed) a pebble DB in dir. name tags log
// lines so the catalog and raft databases can be told apart. On a disk
// without room it fails at once with ErrDiskFull: pebble would open, then
// retry its flush without pause for as long as the disk stays full.
func openPebble(dir, name string, log *slog.Logger) (pebbleDB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return pebbleDB{}, fmt.Errorf("%w: %s: create dir %s: %w", ErrDiskFull, name, dir, err)
		}
		return pebbleDB{}, fmt.Errorf("%s: create dir: %w", name, err)
	}
	if err := checkFree(dir, minFreeBytes); err != nil {
		return pebbleDB{}, fmt.Errorf("%s: %w", name, err)
	}
	log = log.With("component", name, "dir", dir)
	limit := ratelog.New(time.Second)
	pl := pebbleLogger{log: log, limit: limit}
	closing := make(chan struct{})
	full := &fullDiskBackoff{closing: closing}
	fs, fsCloser := vfs.WithDiskHealthChecks(vfs.Default, diskSlowThreshold, nil, func(info vfs.DiskSlowInfo) {
		limit.Log(log, slog.LevelWarn, "slow disk", "slow disk", "path", info.Path, "op", info.OpType.String(),
			"duration", info.Duration)
	})
	opts := &pebble.Options{
		FS:                 fs,
		CacheSize:          pebbleCacheSize,
		MemTableSize:       pebbleMemTableSize,
		MaxOpenFiles:       pebbleMaxOpenFiles,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pl,
		// pebble's default listener turns corruption into Fatalf; we would
		// rather log it and let the failing read return its error, so the
		// caller can rebuild from the bucket manifest instead of the process
		// dying.
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				limit.Log(log, slog.LevelError, "background", "pebble background error", "err", err)
				full.failed(err)
			},
			FlushEnd: func(info pebble.FlushInfo) {
				if info.Err == nil {
					full.reset()
				}
			},
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				limit.Log(log, slog.LevelError, "corruption", "pebble data corruption", "path", info.Path,
					"err", info.Details)
			},
		},
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		_ = fsCloser.Close()
		if errors.Is(err, syscall.ENOSPC) {
			return pebbleDB{}, fmt.Errorf("%w: %s: open pebble in %s: %w", ErrDiskFull, name, dir, err)
		}
		return pebbleDB{}, fmt.Errorf("%s: open pebble: %w", name, err)
	}
	return pebbleDB{DB: db, fsCloser: fsCloser, closing: closing}, nil
}

// checkFree fails with ErrDiskFull when the filesystem holding dir has
// fewer than need bytes for an unprivileged writer.
func checkFree(dir string, need uint64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // not knowing is no reason to refuse; pebble will say
	}
	if free := st.Bavail * uint64(st.Bsize); free < need {
		return fmt.Errorf("%w: %s has %d bytes free, opening needs %d: %w", ErrDiskFull, dir, free, need, syscall.ENOSPC)
	}
	return nil
}

// fullDiskBackoff slows pebble's retries of a flush or compaction that
// failed for want of space. pebble reschedules a failed flush at once
// (its own TODO says to back off), which on a full disk kept a core busy
// and the log growing. The pause runs inside pebble's background error
// callback, so it holds that flush back; it ends early when the database
// closes.
type fullDiskBackoff struct {
	closing <-chan struct{}
	fails   atomic.Int32
}

func (b *fullDiskBackoff) failed(err error) {
	if !errors.Is(err, syscall.ENOSPC) {
		return
	}
	n := b.fails.Add(1)
	d := min(10*time.Millisecond<<min(n, 10), time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.closing:
	}
}

func (b *fullDiskBackoff) reset() { b.fails.Store(0) }

// pebbleLogger forwards pebble's printf-style logging to slog. DESIGN §5 asks
// for pebble to be quiet: its Infof chatter goes to debug, and only Errorf
// (real trouble) reaches the operator.
type pebbleLogger struct {
	log   *slog.Logger
	limit *ratelog.Limiter
}

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble", "detail", fmt.Sprintf(format, args...))
	}
}

// Errorf is rate-limited per format: the same failure repeats per retry.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.limit.Log(l.log, slog.LevelError, format, "pebble", "detail", fmt.Sprintf(format, args...))
}

// Fatalf is called on broken invariants, after which pebble does not expect
// to continue; panicking keeps that guarantee (as pebble's default os.Exit
// does) while still letting a test see the message.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble fatal", "detail", msg)
	panic("pebble: " + msg)
}
