package logstore

import (
	"testing"
	"time"
)

// TestWritebackHold checks which pages paced writeback drops: everything
// behind the writer when nobody reads, nothing above a tailing reader's
// lowest position (in its segment or any later one) while the reader was
// seen within readerHold, never more than holdWindows windows behind the
// writer, and everything again once the hold lapsed.
func TestWritebackHold(t *testing.T) {
	const w = 8 << 20
	p := &partition{fresh: readHold{base: -1}, hold: readHold{base: -1}}
	seg := &segment{base: 100}
	now := time.Now().UnixNano()
	var dropped, synced int64
	// step writes a window and checks the drop: up to limit (-1: up to
	// what was synced before), but never keeping more than holdWindows.
	step := func(what string, limit int64) {
		t.Helper()
		seg.size += w
		j, ok := p.writebackStep(seg, w, now)
		if !ok {
			t.Fatalf("%s: no step with a full window behind the writer", what)
		}
		end := limit
		if end < 0 || end > synced {
			end = synced
		}
		if floor := synced - holdWindows*w; end < floor {
			end = floor
		}
		var from, n int64
		if end > dropped {
			from, n, dropped = dropped, end-dropped, end
		}
		if j.dropFrom != from || j.dropLen != n {
			t.Fatalf("%s: drop [%d,+%d), want [%d,+%d)", what, j.dropFrom, j.dropLen, from, n)
		}
		synced = seg.size
	}
	if _, ok := p.writebackStep(seg, w, now); ok {
		t.Fatal("a step before a full window")
	}
	step("first window", -1)
	step("no reader", -1)
	p.noteRead(100, w+4096)
	p.noteRead(100, w+1024) // the lowest read counts
	step("reader in this segment", w+1024)
	now += int64(readerHold / 2)
	step("reader not seen this window, still held", w+1024)
	p.noteRead(50, 0)
	for i := 0; i < holdWindows+2; i++ {
		step("reader in an earlier segment", 0)
	}
	if dropped <= w+1024 {
		t.Fatal("the hold was never bounded")
	}
	now += int64(readerHold) + 1
	step("hold lapsed", -1)
}
