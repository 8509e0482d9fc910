package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenOnFullDiskFailsFast: a catalog opened on a filesystem with no
// room fails at once with ErrDiskFull wrapping ENOSPC. A restart on a
// full disk once opened, then retried pebble's flush without pause at
// full CPU, writing a log line per attempt. Once space is freed it opens
// with its records.
func TestOpenOnFullDiskFailsFast(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it mounts a tmpfs (make test runs as root in CI)")
	}
	dir := filepath.Join(t.TempDir(), "db")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	c, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	seg := Segment{Topic: "t", Partition: 0, BaseOffset: 0, EndOffset: 10, State: StateSealed, MinTimestamp: -1, MaxTimestamp: -1}
	if err := c.PutSegment(seg); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	page := make([]byte, 64<<10)
	for {
		if _, err := f.Write(page); err != nil {
			break
		}
	}
	f.Close()

	_, err = Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("open on a full disk: %v, want ErrDiskFull wrapping ENOSPC", err)
	}
	if _, err := OpenRaftStore(filepath.Join(dir, "raft"), Options{Logger: slog.New(slog.DiscardHandler)}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("raft store open on a full disk: %v, want ErrDiskFull", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	c, err = Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("open once space is back: %v", err)
	}
	defer c.Close()
	if _, err := c.GetSegment("t", 0, 0); err != nil {
		t.Fatalf("the record written before: %v", err)
	}
}

// TestFullDiskBackoff: pebble's background errors for want of space are
// counted (each one pauses the retry longer, up to a second), other
// errors are not, a good flush resets the count, and a closing database
// ends a pause at once.
func TestFullDiskBackoff(t *testing.T) {
	closing := make(chan struct{})
	close(closing)
	b := &fullDiskBackoff{closing: closing}
	b.failed(errors.New("some other failure"))
	if n := b.fails.Load(); n != 0 {
		t.Fatalf("a failure other than ENOSPC counted: %d", n)
	}
	for i := 0; i < 3; i++ {
		b.failed(fmt.Errorf("flush: %w", syscall.ENOSPC))
	}
	if n := b.fails.Load(); n != 3 {
		t.Fatalf("%d ENOSPC failures counted, want 3", n)
	}
	b.reset()
	if n := b.fails.Load(); n != 0 {
		t.Fatalf("after a good flush: %d", n)
	}
}
