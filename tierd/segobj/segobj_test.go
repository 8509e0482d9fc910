package segobj

import (
	"bytes"
	"errors"
	"testing"
)

func bundleTail(logBytes int64, idx, tidx []byte) []byte {
	tail := append(append([]byte{}, idx...), tidx...)
	return NewTrailer(logBytes, idx, tidx).Append(tail)
}

func TestTrailerRoundTrip(t *testing.T) {
	idx, tidx := []byte("0123456789abcdef"), []byte("timeindex-bytes-xyz!")
	tail := bundleTail(1<<20, idx, tidx)
	tr, err := ParseTrailer(tail)
	if err != nil {
		t.Fatal(err)
	}
	if tr.LogBytes != 1<<20 || tr.IndexBytes != 16 || tr.TimeIndexBytes != 20 || tr.ObjectSize() != 1<<20+16+20+TrailerSize {
		t.Fatalf("trailer %+v", tr)
	}
	gi, gt, err := SplitTail(tail, 1<<20)
	if err != nil || !bytes.Equal(gi, idx) || !bytes.Equal(gt, tidx) {
		t.Fatalf("SplitTail = %q, %q, %v", gi, gt, err)
	}
	// Empty indexes (a segment with no index entry yet) are legal.
	if _, _, err := SplitTail(bundleTail(100, nil, nil), 100); err != nil {
		t.Fatal(err)
	}
}

func TestSplitTailRejects(t *testing.T) {
	idx, tidx := []byte("0123456789abcdef"), []byte("timeindex")
	good := bundleTail(4096, idx, tidx)
	cases := map[string]struct {
		tail []byte
		log  int64
	}{
		"short":            {good[:TrailerSize-1], 4096},
		"other log length": {good, 4095},
		"index bit flip":   {flip(good, 3), 4096},
		"trailer bit flip": {flip(good, len(good)-TrailerSize+2), 4096},
		"magic":            {flip(good, len(good)-1), 4096},
		"extra byte":       {append([]byte{0}, good...), 4096},
		"missing byte":     {good[1:], 4096},
	}
	for name, c := range cases {
		if _, _, err := SplitTail(c.tail, c.log); !errors.Is(err, ErrBadObject) {
			t.Errorf("%s: err = %v, want ErrBadObject", name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0x10
	return c
}

func TestKeys(t *testing.T) {
	if got := Objects("t/0/00000000000000000000-ab.seg"); len(got) != 1 {
		t.Errorf("bundle objects %v", got)
	}
	got := Objects("t/0/00000000000000000000-ab.log")
	want := []string{"t/0/00000000000000000000-ab.index", "t/0/00000000000000000000-ab.timeindex", "t/0/00000000000000000000-ab.log"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("legacy objects %v", got)
	}
	if LegacyIndexKey("a.seg") != "" || LegacyIndexKey("a.log") != "a.index" {
		t.Error("LegacyIndexKey")
	}
	if !IsSegment("a.seg") || !IsSegment("a.log") || IsSegment("a.index") || !IsBundle("a.seg") || IsBundle("a.log") {
		t.Error("IsSegment/IsBundle")
	}
}

// FuzzSplitTail: any bytes get an answer, never a panic, and what is
// accepted re-encodes to itself.
func FuzzSplitTail(f *testing.F) {
	f.Add(bundleTail(4096, []byte("01234567"), []byte("abc")), int64(4096))
	f.Add(bundleTail(0, nil, nil), int64(0))
	f.Add([]byte("AeroSeg1"), int64(1))
	f.Fuzz(func(t *testing.T, tail []byte, logBytes int64) {
		idx, tidx, err := SplitTail(tail, logBytes)
		if err != nil {
			return
		}
		if again := bundleTail(logBytes, idx, tidx); !bytes.Equal(again, tail) {
			t.Fatalf("accepted %x, which re-encodes as %x", tail, again)
		}
	})
}
