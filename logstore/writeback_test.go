package logstore

import (
	"testing"
	"time"
)

// TestWritebackHold checks which pages paced writeback drops: everything
// behind the writer when nobody reads, nothing above a tailing reader's
// lowest position (in its segment or any later one) while the reader was
// seen within readerHold, and everything again once it lapsed.
func TestWritebackHold(t *testing.T) {
	const w = 8 << 20
	p := &partition{fresh: readHold{base: -1}, hold: readHold{base: -1}}
	seg := &segment{base: 100}
	now := time.Now().UnixNano()
	step := func(wantFrom, wantLen int64) {
		t.Helper()
		seg.size += w
		j, ok := p.writebackStep(seg, w, now)
		if !ok {
			t.Fatal("no step with a full window behind the writer")
		}
		if j.dropFrom != wantFrom || j.dropLen != wantLen {
			t.Fatalf("drop [%d,+%d), want [%d,+%d)", j.dropFrom, j.dropLen, wantFrom, wantLen)
		}
	}
	if _, ok := p.writebackStep(seg, w, now); ok {
		t.Fatal("a step before a full window")
	}
	step(0, 0)    // first window: synced, nothing behind it yet
	step(0, w)    // no reader: the synced window goes
	p.noteRead(100, w+4096)
	p.noteRead(100, w+1024) // the lowest read counts
	step(w, 1024) // only what lies below the reader
	now += int64(readerHold / 2)
	step(0, 0) // not seen this window, but still held
	// A reader in an earlier segment holds all of this one.
	p.noteRead(50, 0)
	step(0, 0)
	now += int64(readerHold) + 1
	seg.size += w
	j, _ := p.writebackStep(seg, w, now) // the hold lapsed
	if j.dropFrom != w+1024 || j.dropLen != 5*w-(w+1024) { // up to the last synced window
		t.Fatalf("after the hold lapsed: drop [%d,+%d)", j.dropFrom, j.dropLen)
	}
}
