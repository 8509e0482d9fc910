package ring

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpora under testdata/fuzz")

func seedRequests() []*request {
	cfg := PartitionConfig{SegmentBytes: 1 << 20, SegmentMs: time.Hour, RetentionMs: -1, RetentionBytes: 5 << 30, MaxMessageBytes: 1 << 20}
	return []*request{
		{Op: OpDescribe, Corr: 1},
		{Op: OpHello, Corr: 1, Shard: 3, RingVersion: 1},
		{Op: OpProduce, Corr: 2, Timeout: 5 * time.Second, Topic: "orders", Partition: 7, Acks: -1, Records: []byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x31rest-of-a-batch")},
		{Op: OpFetch, Corr: 3, Timeout: 30 * time.Second, Fetch: FetchRequest{MinBytes: 1, MaxBytes: 50 << 20, MaxWait: 500 * time.Millisecond, Partitions: []FetchPartition{
			{Topic: "orders", Partition: 7, Offset: 1234, MaxBytes: 1 << 20},
			{Topic: "audit", Partition: 0, Offset: 0, MaxBytes: 1 << 20},
			// A follower's fetch: its node id and the epoch it follows.
			{Topic: "orders", Partition: 8, Offset: 99, MaxBytes: 1 << 20, FollowerID: 12, LeaderEpoch: 3},
		}}},
		{Op: OpFetch, Corr: 4},
		{Op: OpFetch, Corr: 15, Fetch: FetchRequest{IsolationLevel: ReadCommitted, Partitions: []FetchPartition{{Topic: "orders", Partition: 1, Offset: 5, MaxBytes: 1 << 20}}}},
		{Op: OpTxnMarker, Corr: 16, Topic: "orders", Partition: 3, Marker: TxnMarker{Topic: "orders", Partition: 3, ProducerID: 65537, ProducerEpoch: 4, Commit: true, CoordinatorEpoch: 2}},
		{Op: OpListOffsets, Corr: 5, Topic: "orders", Partition: 1, Timestamp: TimestampMaxTimestamp},
		{Op: OpCreatePartition, Corr: 6, Topic: "orders", Partition: 2, Config: cfg},
		{Op: OpDeletePartition, Corr: 7, Topic: "orders", Partition: 2},
		{Op: OpDescribePartition, Corr: 8, Topic: "orders", Partition: 2},
		{Op: OpListPartitions, Corr: 9},
		{Op: OpDeleteRecords, Corr: 10, Topic: "orders", Partition: 2, Before: -1},
		{Op: OpCancel, Corr: 3},
		{Op: OpOffsetForLeaderEpoch, Corr: 11, Topic: "orders", Partition: 2, Epoch: 7},
		{Op: OpProduceBatch, Corr: 17, Timeout: 5 * time.Second, Parts: []ProducePart{
			{ProduceRequest: ProduceRequest{Topic: "orders", Partition: 7, Acks: 1, Records: []byte("batch-a")}},
			{ProduceRequest: ProduceRequest{Topic: "audit", Partition: 0, Acks: 1, Records: []byte("batch-b")}},
		}},
	}
}

func seedResponses() []*response {
	info := PartitionInfo{Topic: "orders", Partition: 2, LogStartOffset: 10, HighWatermark: 99, LogEndOffset: 100, Size: 4096, Segments: 2,
		Config: PartitionConfig{SegmentBytes: 1 << 20, SegmentMs: time.Hour, RetentionMs: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20}}
	return []*response{
		{Op: OpDescribe, Corr: 1, RingVersion: 1, Shards: 4, MaxPayload: DefaultMaxPayloadBytes},
		{Op: OpHello, Corr: 1},
		{Op: OpProduce, Corr: 2, Produce: ProduceResult{BaseOffset: 42, LogAppendTime: -1, LogStartOffset: 0}},
		{Op: OpFetch, Corr: 3, Fetch: FetchResult{Partitions: []FetchPartitionResult{
			// In parts, as a cold read over chunk boundaries is: the wire
			// carries them as one run of bytes.
			{Topic: "orders", Partition: 7, HighWatermark: 2000, LogStartOffset: 0, Records: Records{Bytes: []byte("batch-"), More: [][]byte{[]byte("by"), []byte("tes")}}},
			{Topic: "audit", Partition: 0, Err: errorFor(6, "offset out of range: 5 not in [10, 20]"), HighWatermark: 20, LogStartOffset: 10, Records: Records{Bytes: []byte{}}},
		}}},
		{Op: OpListOffsets, Corr: 5, Offset: OffsetResult{Offset: 17, Timestamp: 1_700_000_000_000}},
		{Op: OpProduceBatch, Corr: 17, Parts: []ProducePart{
			{Result: ProduceResult{BaseOffset: 42, LogAppendTime: -1, LogStartOffset: 0}},
			{Err: errorFor(codeOf(ErrUnknownPartition), "unknown partition: audit/9"), Result: ProduceResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1}},
		}},
		{Op: OpCreatePartition, Corr: 6},
		{Op: OpDescribePartition, Corr: 8, Info: info},
		{Op: OpListPartitions, Corr: 9, Infos: []PartitionInfo{info, info}},
		{Op: OpDeleteRecords, Corr: 10, LogStart: 50},
		{Op: OpProduce, Corr: 11, Code: 3, Msg: "record batch crc mismatch: computed 1, header 2"},
		{Op: OpError, Corr: 0, Code: 33, Msg: "ring frame too large: payload of 4294967295 bytes, limit 134217728"},
		{Op: OpOffsetForLeaderEpoch, Corr: 12, EpochEnd: EpochEnd{LeaderEpoch: 5, EndOffset: 1234}},
		{Op: OpOffsetForLeaderEpoch, Corr: 13, EpochEnd: EpochEnd{LeaderEpoch: -1, EndOffset: -1}},
		{Op: OpFetch, Corr: 14, Code: 23, Msg: "fenced leader epoch: follower 12 at epoch 2, partition at 3"},
		{Op: OpFetch, Corr: 15, Fetch: FetchResult{Partitions: []FetchPartitionResult{
			{Topic: "orders", Partition: 1, HighWatermark: 30, LogStartOffset: 0, LastStableOffset: 12,
				AbortedTransactions: []AbortedTxn{{ProducerID: 65537, FirstOffset: 3, LastOffset: 9}}, Records: Records{Bytes: []byte("committed")}},
		}}},
		{Op: OpTxnMarker, Corr: 16, MarkerAt: 77},
		{Op: OpTxnMarker, Corr: 17, MarkerAt: -1},
	}
}

func TestRequestsRoundTrip(t *testing.T) {
	for _, r := range seedRequests() {
		frame := appendRequest(nil, r)
		op, payload, rest, err := decodeFrame(frame, DefaultMaxPayloadBytes)
		if err != nil || len(rest) != 0 || op != r.Op {
			t.Fatalf("%v: frame decode: %v %v %d", r.Op, op, err, len(rest))
		}
		got, err := decodeRequest(op, payload)
		if err != nil {
			t.Fatalf("%v: %v", r.Op, err)
		}
		if r.Op == OpFetch && len(r.Fetch.Partitions) == 0 {
			r.Fetch.Partitions = nil
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("%v: decoded\n%+v\nwant\n%+v", r.Op, got, r)
		}
	}
}

func TestResponsesRoundTrip(t *testing.T) {
	for _, r := range seedResponses() {
		frame := appendResponse(nil, r)
		op, payload, _, err := decodeFrame(frame, DefaultMaxPayloadBytes)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeResponse(op, payload)
		if err != nil {
			t.Fatalf("%v: %v", r.Op, err)
		}
		if again := appendResponse(nil, got); !bytes.Equal(again, frame) {
			t.Fatalf("%v: re-encoding differs", r.Op)
		}
		if r.Op == OpFetch && r.Code == 0 && r.Corr == 15 {
			p := got.Fetch.Partitions[0]
			if p.LastStableOffset != 12 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0] != (AbortedTxn{ProducerID: 65537, FirstOffset: 3, LastOffset: 9}) {
				t.Fatalf("read_committed fetch decoded as %+v", p)
			}
		} else if r.Op == OpFetch && r.Code == 0 {
			p := got.Fetch.Partitions
			if string(p[0].Records.Bytes) != "batch-bytes" || p[0].Err != nil || !errors.Is(p[1].Err, ErrOffsetOutOfRange) {
				t.Fatalf("fetch decoded as %+v", p)
			}
		}
		if r.Code != 0 && (got.err() == nil || got.err().Error() != r.Msg) {
			t.Fatalf("%v: error %v, want %q", r.Op, got.err(), r.Msg)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	seen := map[int16]bool{}
	for _, e := range errorCodes {
		if seen[e.code] || e.code == codeNone || e.code == codeUnknown {
			t.Fatalf("code %d reused", e.code)
		}
		seen[e.code] = true
		wrapped := fmt.Errorf("partition x/1: %w", e.err)
		code, msg := wireError(wrapped)
		if code != e.code {
			t.Fatalf("%v maps to %d, want %d", e.err, code, e.code)
		}
		back := errorFor(code, msg)
		if !errors.Is(back, e.err) || back.Error() != wrapped.Error() {
			t.Fatalf("code %d came back as %v", code, back)
		}
	}
	// Every store sentinel has a code.
	for _, s := range []error{ErrCorruptBatch, ErrBadMagic, ErrBadCRC, ErrInvalidProducer, ErrMessageTooLarge,
		ErrOffsetOutOfRange, ErrUnknownPartition, ErrPartitionExists, ErrCorruptSegment, ErrCorruptIndex,
		ErrNotLocal, ErrStorage, ErrInvalidRequest, ErrClosed, context.Canceled, context.DeadlineExceeded,
		ErrNotLeader, ErrNotEnoughReplicas, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch, ErrCompactedNoKey} {
		if codeOf(s) <= 0 {
			t.Fatalf("%v has no wire code", s)
		}
	}
	back := errorFor(codeOf(errors.New("disk on fire")), "disk on fire")
	if !errors.Is(back, ErrRemote) || back.Error() != "disk on fire" {
		t.Fatalf("unknown error came back as %v", back)
	}
	if errorFor(123, "from the future") == nil || !errors.Is(errorFor(123, ""), ErrRemote) {
		t.Fatal("an unknown code must still be an error")
	}
	// A long message is cut to the bound.
	if _, msg := wireError(errors.New(string(make([]byte, 10*maxErrorMessage)))); len(msg) != maxErrorMessage {
		t.Fatalf("message of %d bytes", len(msg))
	}
}

func TestParseHeader(t *testing.T) {
	for _, tc := range []struct {
		h    []byte
		want error
	}{
		{[]byte{0xAE, 4, 0x80, 0, 0, 0, 12}, nil},
		{[]byte{0xAE, 4, 0x80, 0, 0, 0}, ErrProtocol},
		{[]byte{0xAD, 4, 0x80, 0, 0, 0, 12}, ErrProtocol},
		{[]byte{0xAE, 1, 0x80, 0, 0, 0, 12}, ErrProtocol}, // the release before follower fetch
		{[]byte{0xAE, 2, 0x80, 0, 0, 0, 12}, ErrProtocol}, // the release before transactions
		{[]byte{0xAE, 3, 0x80, 0, 0, 0, 12}, ErrProtocol}, // the release before ProduceBatch
		{[]byte{0xAE, 5, 0x80, 0, 0, 0, 12}, ErrProtocol},
		{[]byte{0xAE, 4, 0x80, 0, 0, 4, 1}, ErrFrameTooLarge},
	} {
		_, _, err := parseHeader(tc.h, 1024)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Fatalf("% x: %v, want %v", tc.h, err, tc.want)
		}
	}
}

// The server's zero-copy layout of a fetch response is byte for byte what
// appendResponse would have encoded from the same records in memory.
func TestFetchResponsePartsMatchEncoding(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	content := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	f.Write(content)
	res := &FetchResult{Partitions: []FetchPartitionResult{
		{Topic: "a", Partition: 1, HighWatermark: 9, Records: Records{File: f, Pos: 100, Len: 5000}},
		{Topic: "b", Partition: 2, Err: fmt.Errorf("x: %w", ErrUnknownPartition)},
		{Topic: "c", Partition: 3, HighWatermark: 4, Records: Records{Bytes: []byte("co"), More: [][]byte{[]byte("ld")}}},
	}}
	c := &serverConn{cfg: serverConfig{maxPayload: 1 << 20}}
	msg, ok := c.fetchResponse(77, res)
	if !ok {
		t.Fatal("fetch response did not fit")
	}
	// Written as the write goroutine writes it, to a socket.
	w, r := net.Pipe()
	c.nc, c.srv = w, &Server{}
	errc := make(chan error, 1)
	go func() {
		bw := bufio.NewWriter(w)
		err := c.writeMsg(bw, msg)
		if err == nil {
			err = bw.Flush()
		}
		w.Close()
		errc <- err
	}()
	got, _ := io.ReadAll(r)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	mem := &response{Op: OpFetch, Corr: 77, Fetch: FetchResult{Partitions: append([]FetchPartitionResult(nil), res.Partitions...)}}
	mem.Fetch.Partitions[0].Records = Records{Bytes: content[100:5100]}
	if want := appendResponse(nil, mem); !bytes.Equal(got, want) {
		t.Fatalf("zero-copy layout (%d bytes) differs from encoding (%d bytes)", len(got), len(want))
	}
	c.cfg.maxPayload = 4000
	if _, ok := c.fetchResponse(77, res); ok {
		t.Fatal("a response over the frame limit was laid out")
	}
}

func TestSendRange(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i * 7)
	}
	f.Write(content)
	const pos, n = 12345, 2<<20 + 17

	check := func(t *testing.T, w, r net.Conn, wantSendfile bool) {
		got := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(io.LimitReader(r, n))
			got <- b
		}()
		sent, copied, err := SendRange(w, f, pos, n)
		if err != nil {
			t.Fatal(err)
		}
		if sent+copied != n || (wantSendfile && copied != 0) || (!wantSendfile && sent != 0) {
			t.Fatalf("sent %d with sendfile and %d copied, want %d (sendfile %v)", sent, copied, n, wantSendfile)
		}
		if !bytes.Equal(<-got, content[pos:pos+n]) {
			t.Fatal("received bytes differ from the file range")
		}
	}
	t.Run("tcp", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		w, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		r, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		check(t, w, r, true)
		// The file's own offset is untouched: other readers share it.
		if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(content)) {
			t.Fatalf("file offset moved to %d", off)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		w, r := net.Pipe() // no descriptor: copied through a buffer
		defer w.Close()
		defer r.Close()
		check(t, w, r, false)
	})
	t.Run("short file", func(t *testing.T) {
		w, r := net.Pipe()
		defer w.Close()
		defer r.Close()
		go io.Copy(io.Discard, r)
		if _, _, err := SendRange(w, f, int64(len(content))-10, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("range past the end of the file: %v", err)
		}
	})
}

// Fuzz targets. Each decoder must never panic, and whatever it accepts must
// encode back to exactly the input: accepted encodings are canonical.

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range frameSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		op, payload, rest, err := decodeFrame(data, 1<<16)
		if err != nil {
			return
		}
		if frame := append(appendHeader(nil, op, len(payload)), payload...); !bytes.Equal(frame, data[:len(data)-len(rest)]) {
			t.Fatalf("frame re-encodes differently")
		}
		// The stream reader agrees with the buffer decoder.
		sop, spayload, serr := readFrame(bytes.NewReader(data), 1<<16)
		if serr != nil || sop != op || !bytes.Equal(spayload, payload) {
			t.Fatalf("readFrame: %v %v, decodeFrame: %v", sop, serr, op)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range seedRequests() {
		frame := appendRequest(nil, r)
		f.Add(byte(r.Op), frame[headerSize:])
	}
	f.Fuzz(func(t *testing.T, op byte, payload []byte) {
		r, err := decodeRequest(Opcode(op), payload)
		if err != nil {
			return
		}
		if frame := appendRequest(nil, r); !bytes.Equal(frame[headerSize:], payload) || frame[2] != op {
			t.Fatalf("%v request re-encodes differently", Opcode(op))
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	for _, r := range seedResponses() {
		frame := appendResponse(nil, r)
		f.Add(byte(r.Op), frame[headerSize:])
	}
	f.Fuzz(func(t *testing.T, op byte, payload []byte) {
		r, err := decodeResponse(Opcode(op), payload)
		if err != nil {
			return
		}
		_ = r.err()
		if frame := appendResponse(nil, r); !bytes.Equal(frame[headerSize:], payload) || frame[2] != op {
			t.Fatalf("%v response re-encodes differently", Opcode(op))
		}
	})
}

func frameSeeds() [][]byte {
	var out [][]byte
	for _, r := range seedRequests() {
		out = append(out, appendRequest(nil, r))
	}
	two := append(appendRequest(nil, seedRequests()[0]), appendRequest(nil, seedRequests()[1])...)
	return append(out,
		two,
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		[]byte{0xAE, frameVersion, 0x82, 0xFF, 0xFF, 0xFF, 0xFF},
		[]byte{0xAE, frameVersion, 0x80, 0x00, 0x00, 0x00, 0x0C, 0x00},
		[]byte{0xAE, 0x01, 0x80, 0x00, 0x00, 0x00, 0x00}, // an older peer's
	)
}

// TestSeedCorpora checks that the committed corpora exist and hold the
// seeds above; -update-corpus rewrites them.
func TestSeedCorpora(t *testing.T) {
	corpora := map[string][][]any{}
	for _, s := range frameSeeds() {
		corpora["FuzzDecodeFrame"] = append(corpora["FuzzDecodeFrame"], []any{s})
	}
	for _, r := range seedRequests() {
		corpora["FuzzDecodeRequest"] = append(corpora["FuzzDecodeRequest"], []any{byte(r.Op), appendRequest(nil, r)[headerSize:]})
	}
	for _, r := range seedResponses() {
		corpora["FuzzDecodeResponse"] = append(corpora["FuzzDecodeResponse"], []any{byte(r.Op), appendResponse(nil, r)[headerSize:]})
	}
	for name, seeds := range corpora {
		dir := filepath.Join("testdata", "fuzz", name)
		for i, vals := range seeds {
			var b bytes.Buffer
			b.WriteString("go test fuzz v1\n")
			for _, v := range vals {
				switch v := v.(type) {
				case byte:
					fmt.Fprintf(&b, "byte(%q)\n", v)
				case []byte:
					fmt.Fprintf(&b, "[]byte(%q)\n", v)
				}
			}
			path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
			if *updateCorpus {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, b.Bytes()) {
				t.Fatalf("%s is missing or stale (%v); run go test -run TestSeedCorpora -update-corpus", path, err)
			}
		}
	}
}
