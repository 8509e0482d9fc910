package catalog

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Seed corpora for the fuzz targets live in testdata/fuzz/<Target>/; the
// f.Add seeds below repeat the essential shapes so `go test` without
// -fuzz exercises them even if the files are missing.

func segmentSeeds() []Segment {
	full := fullSegment()
	full.Topic, full.Partition, full.BaseOffset = "", 0, 0
	return []Segment{
		{State: StateActive},
		full,
		{EndOffset: math.MaxInt64, Bytes: math.MinInt64, MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64,
			State: StateDeleting, ObjectSize: math.MaxInt64, Epoch: math.MinInt32, UploadedAt: math.MaxInt64},
		{EndOffset: 256, Bytes: 255, State: StateUploading, SegmentID: "id", Epoch: math.MaxInt32},
	}
}

func partitionSeeds() []Partition {
	return []Partition{
		{},
		{LogStartOffset: 98765, Config: []byte("cleanup.policy=delete\x00retention.ms=604800000"), CreatedAt: 1732870000000000000},
		{LogStartOffset: math.MaxInt64, CreatedAt: math.MinInt64, Config: []byte{0xff}},
	}
}

func raftLogSeeds() []*raft.Log {
	return []*raft.Log{
		{Type: raft.LogNoop},
		{Term: 3, Type: raft.LogCommand, Data: []byte("set x=1"), AppendedAt: time.Unix(1732870000, 123456789)},
		{Term: math.MaxUint64, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}, Extensions: []byte("chunk"), AppendedAt: time.Unix(-62135596800+1, 999999999)},
	}
}

func FuzzDecodeSegment(f *testing.F) {
	for _, s := range segmentSeeds() {
		f.Add(appendSegment(nil, &s))
	}
	f.Add([]byte{})
	f.Add([]byte{segmentVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSegment(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("decode error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		enc := appendSegment(nil, &s)
		s2, err := decodeSegment(enc)
		if err != nil {
			t.Fatalf("re-decode of %x: %v", enc, err)
		}
		if s2 != s {
			t.Fatalf("round trip: %+v != %+v", s2, s)
		}
	})
}

func FuzzDecodePartition(f *testing.F) {
	for _, p := range partitionSeeds() {
		f.Add(appendPartition(nil, &p))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePartition(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("decode error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		enc := appendPartition(nil, &p)
		p2, err := decodePartition(enc)
		if err != nil {
			t.Fatalf("re-decode of %x: %v", enc, err)
		}
		if !reflect.DeepEqual(p2, p) {
			t.Fatalf("round trip: %+v != %+v", p2, p)
		}
	})
}

func FuzzDecodeRaftLog(f *testing.F) {
	for _, l := range raftLogSeeds() {
		f.Add(appendRaftLog(nil, l))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeRaftLog(42, b, &l); err != nil {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("decode error %v does not wrap ErrCorruptRecord", err)
			}
			return
		}
		if l.Index != 42 {
			t.Fatalf("index %d, want 42", l.Index)
		}
		var l2 raft.Log
		if err := decodeRaftLog(42, appendRaftLog(nil, &l), &l2); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if !logsEqual(&l, &l2) {
			t.Fatalf("round trip: %+v != %+v", l2, l)
		}
	})
}

// TestCodecRejects checks the specific ways a value can be bad: every
// truncation of a valid record, trailing bytes, unknown version, unknown
// state, out-of-range epoch, and a length prefix larger than the record.
func TestCodecRejects(t *testing.T) {
	full := fullSegment()
	segEnc := appendSegment(nil, &full)
	part := partitionSeeds()[1]
	partEnc := appendPartition(nil, &part)
	logEnc := appendRaftLog(nil, raftLogSeeds()[1])

	for i := range segEnc {
		if _, err := decodeSegment(segEnc[:i]); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("segment truncated to %d bytes: %v", i, err)
		}
	}
	for i := range partEnc {
		if _, err := decodePartition(partEnc[:i]); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("partition truncated to %d bytes: %v", i, err)
		}
	}
	for i := range logEnc {
		var l raft.Log
		if err := decodeRaftLog(1, logEnc[:i], &l); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("raft log truncated to %d bytes: %v", i, err)
		}
	}

	bad := map[string][]byte{
		"trailing byte":   append(bytes.Clone(segEnc), 0),
		"unknown version": append([]byte{segmentVersion2 + 1}, segEnc[1:]...),
		"state 0":         {segmentVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"state 7":         {segmentVersion, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0},
		"epoch > int32":   {segmentVersion, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 0},
		"huge length":     {segmentVersion, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"varint overflow": {segmentVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for name, b := range bad {
		if _, err := decodeSegment(b); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("segment %s: %v, want ErrCorruptRecord", name, err)
		}
	}
	// The all-zero record with a valid state does decode, proving the bad
	// cases above fail for the reason named and not for their length.
	if _, err := decodeSegment([]byte{segmentVersion, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Errorf("minimal valid segment: %v", err)
	}
	var l raft.Log
	if err := decodeRaftLog(1, []byte{raftLogVersion, 0, 0, 0, 0, 2}, &l); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("raft log bad time flag: %v", err)
	}
	if err := decodeRaftLog(1, []byte{raftLogVersion, 0, 0, 0, 0, 1, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03}, &l); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("raft log nanos >= 1e9: %v", err)
	}
	if _, err := decodePartition(append(bytes.Clone(partEnc), 1)); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("partition trailing byte: %v", err)
	}
}

// TestDecodeDoesNotAlias checks that decoded byte slices are copies, since
// pebble reuses the buffers values are decoded from.
func TestDecodeDoesNotAlias(t *testing.T) {
	p := Partition{Config: []byte("abc")}
	enc := appendPartition(nil, &p)
	got, err := decodePartition(enc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range enc {
		enc[i] = 0
	}
	if string(got.Config) != "abc" {
		t.Fatalf("Config aliases the input buffer: %q", got.Config)
	}
	lenc := appendRaftLog(nil, &raft.Log{Data: []byte("d"), Extensions: []byte("e")})
	var l raft.Log
	if err := decodeRaftLog(1, lenc, &l); err != nil {
		t.Fatal(err)
	}
	for i := range lenc {
		lenc[i] = 0
	}
	if string(l.Data) != "d" || string(l.Extensions) != "e" {
		t.Fatalf("raft log aliases the input buffer: %q %q", l.Data, l.Extensions)
	}
}

// TestSegmentMaxTimestampOffset: version 2 keeps the offset of the max
// timestamp's record; a version 1 record, written before it was kept,
// reads back as not knowing it rather than as offset 0.
func TestSegmentMaxTimestampOffset(t *testing.T) {
	s := Segment{EndOffset: 10, MaxTimestamp: 5, State: StateSealed}
	if _, ok := s.MaxTimestampOffset(); ok {
		t.Fatal("a segment built without it knows its max timestamp offset")
	}
	s.SetMaxTimestampOffset(0)
	got, err := decodeSegment(appendSegment(nil, &s))
	if err != nil {
		t.Fatal(err)
	}
	if off, ok := got.MaxTimestampOffset(); !ok || off != 0 {
		t.Fatalf("round trip: offset %d, known %v; want 0, true", off, ok)
	}
	v1, err := decodeSegment([]byte{segmentVersion, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v1.MaxTimestampOffset(); ok {
		t.Fatal("a version 1 record knows a max timestamp offset")
	}
}
