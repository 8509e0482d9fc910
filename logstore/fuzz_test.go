package logstore

import (
	"bytes"
	"os"
	"testing"

	"github.com/aerostream/aerostream/logstore/logtest"
)

// FuzzValidateBatch: validation never panics, and whatever it accepts is
// internally consistent (length, count) and survives offset patching, since
// the base offset lies outside the CRC. ValidateBatchParts, given the same
// bytes cut in three parts anywhere (inside the header too), agrees.
func FuzzValidateBatch(f *testing.F) {
	f.Add(logtest.Batch(1, logtest.Record{Value: []byte("v")}), uint16(10), uint16(30))
	f.Add(logtest.Filler(7, 3, 20, 1), uint16(61), uint16(62))
	f.Add([]byte{}, uint16(0), uint16(0))
	f.Add(make([]byte, BatchHeaderSize), uint16(5), uint16(100))
	f.Fuzz(func(t *testing.T, b []byte, cut1, cut2 uint16) {
		h, err := ValidateBatch(b)
		i, j := min(int(cut1), len(b)), min(int(cut2), len(b))
		i, j = min(i, j), max(i, j)
		hp, errp := ValidateBatchParts([][]byte{b[:i], b[i:j], b[j:]})
		if (err == nil) != (errp == nil) || (err == nil && h != hp) {
			t.Fatalf("whole: %+v, %v; in parts at %d and %d: %+v, %v", h, err, i, j, hp, errp)
		}
		if err != nil {
			return
		}
		if int(h.Length) != len(b) || h.RecordCount <= 0 || h.LastOffsetDelta != h.RecordCount-1 {
			t.Fatalf("accepted inconsistent batch %+v (len %d)", h, len(b))
		}
		c := append([]byte(nil), b...)
		setBaseOffset(c, 12345, 7)
		if _, err := ValidateBatch(c); err != nil {
			t.Fatalf("patched batch rejected: %v", err)
		}
		// ValidateBatches also walks the records, which ValidateBatch
		// leaves alone.
		if _, _, err := ValidateBatches(append(c, c...)); err != nil && recordsOK(&h, c) {
			t.Fatalf("two valid batches rejected: %v", err)
		}
	})
}

// FuzzIndexValidate: index validation never panics, and an accepted offset
// index gives lookups that are monotonic and inside the log.
func FuzzIndexValidate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 16, 0}, int64(8192), uint32(3))
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0}, int64(100), uint32(3))
	f.Add([]byte{1, 2, 3}, int64(10), uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, logSize int64, target uint32) {
		n, err := validateOffsetIndex(data, logSize)
		if err == nil {
			x := &mmapIndex{data: data, width: offsetEntryWidth, entries: n}
			rel, pos := x.lookupOffset(target)
			if rel > target && n > 0 {
				t.Fatalf("lookup(%d) returned rel %d", target, rel)
			}
			if n > 0 && int64(pos) >= logSize {
				t.Fatalf("lookup returned position %d beyond log %d", pos, logSize)
			}
		}
		if n, err := validateTimeIndex(data, target); err == nil {
			x := &mmapIndex{data: data, width: timeEntryWidth, entries: n}
			if rel, ok := x.lookupTime(int64(target)); ok && rel > target {
				t.Fatalf("time lookup beyond segment")
			}
		}
	})
}

// FuzzRecoverSegment writes arbitrary bytes (often a valid log with damage)
// as a segment and recovers it: no panic, the result holds only whole valid
// contiguous batches that are a prefix of the input, and recovering again
// changes nothing.
func FuzzRecoverSegment(f *testing.F) {
	var valid []byte
	for i := 0; i < 5; i++ {
		b := logtest.Filler(int64(i), 2, 50, byte(i))
		setBaseOffset(b, int64(2*i), 0)
		valid = append(valid, b...)
	}
	f.Add(valid, uint16(0), byte(0))
	f.Add(valid, uint16(len(valid)-3), byte(0))
	f.Add(valid, uint16(200), byte(0xff))
	f.Add([]byte("not a segment at all"), uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, flip byte) {
		data = append([]byte(nil), data...)
		if int(at) < len(data) {
			data[at] ^= flip
		}
		dir := t.TempDir()
		logPath, _, _ := segmentPaths(dir, 0)
		if err := os.WriteFile(logPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := &Options{Dir: dir, Logger: quietLogger(), MaxIndexBytes: 4096, IndexIntervalBytes: 64}
		seg, err := recoverSegment(dir, 0, opts, true, true)
		if err != nil {
			t.Fatalf("recover: %v", err)
		}
		size, next := seg.size, seg.next
		seg.closeFiles()
		got, _ := os.ReadFile(logPath)
		if int64(len(got)) != size || !bytes.Equal(got, data[:size]) {
			t.Fatalf("recovered log is not a prefix of the input (%d of %d)", size, len(data))
		}
		res := scanLog(bytes.NewReader(got), int64(len(got)), 0, nil)
		if res.tornAt != nil || res.validSize != size || (res.batches > 0 && res.next != next) {
			t.Fatalf("recovered log does not rescan cleanly: %+v", res)
		}
		seg2, err := recoverSegment(dir, 0, opts, false, false)
		if err != nil {
			t.Fatalf("second recover: %v", err)
		}
		if seg2.size != size || seg2.next != next {
			t.Fatalf("second recovery differs: %d/%d vs %d/%d", seg2.size, seg2.next, size, next)
		}
		seg2.closeFiles()
	})
}

// recordsOK reports whether batch c's records pass checkRecords.
func recordsOK(h *BatchHeader, c []byte) bool {
	_, err := checkRecords(h, c)
	return err == nil
}
