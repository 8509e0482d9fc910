package catalog

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
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
}

func (d pebbleDB) close() error {
	err := d.DB.Close()
	if cerr := d.fsCloser.Close(); err == nil {
		err = cerr
	}
	return err
}

// openPebble opens (creating if needed) a pebble DB in dir. name tags log
// lines so the catalog and raft databases can be told apart.
func openPebble(dir, name string, log *slog.Logger) (pebbleDB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pebbleDB{}, fmt.Errorf("%s: create dir: %w", name, err)
	}
	log = log.With("component", name, "dir", dir)
	pl := pebbleLogger{log: log}
	fs, fsCloser := vfs.WithDiskHealthChecks(vfs.Default, diskSlowThreshold, nil, func(info vfs.DiskSlowInfo) {
		log.Warn("slow disk", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
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
				log.Error("pebble background error", "err", err)
			},
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				log.Error("pebble data corruption", "path", info.Path, "err", info.Details)
			},
		},
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		_ = fsCloser.Close()
		return pebbleDB{}, fmt.Errorf("%s: open pebble: %w", name, err)
	}
	return pebbleDB{DB: db, fsCloser: fsCloser}, nil
}

// pebbleLogger forwards pebble's printf-style logging to slog. DESIGN §5 asks
// for pebble to be quiet: its Infof chatter goes to debug, and only Errorf
// (real trouble) reaches the operator.
type pebbleLogger struct{ log *slog.Logger }

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble", "detail", fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble", "detail", fmt.Sprintf(format, args...))
}

// Fatalf is called on broken invariants, after which pebble does not expect
// to continue; panicking keeps that guarantee (as pebble's default os.Exit
// does) while still letting a test see the message.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble fatal", "detail", msg)
	panic("pebble: " + msg)
}
