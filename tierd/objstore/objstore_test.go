package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the run if an upload goroutine outlives its writer
// (DESIGN §6.6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestMemBucketAcceptance(t *testing.T) {
	b := NewMemBucket()
	AcceptanceTest(t, b)
	if n := b.(*memBucket).Uploads(); n != 0 {
		t.Errorf("%d multipart uploads left open", n)
	}
}

// The wrappers must pass the suite too when they inject nothing: they sit
// between tierd and every provider.
func TestWrappersAcceptance(t *testing.T) {
	var events atomic.Int64
	obs := ObserverFunc(func(context.Context, Event) { events.Add(1) })
	b := Instrumented(NewFaultBucket(NewMemBucket(), FaultConfig{}), obs)
	AcceptanceTest(t, b)
	if events.Load() == 0 {
		t.Error("observer saw no events")
	}
}

func TestValidateKey(t *testing.T) {
	for _, k := range []string{"a", "a/b/c", "topic/0/00000000000000000000-abc.log", "a.b", "..a", "a..", "ü"} {
		if err := ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v", k, err)
		}
	}
	for _, k := range []string{"", "/a", "a/", "a//b", ".", "..", "a/./b", "a/../b", "\xff", "a\x00", strings.Repeat("k", MaxKeyLen+1)} {
		if err := ValidateKey(k); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidArgument", k, err)
		}
	}
}

func TestJoinPrefix(t *testing.T) {
	for _, tc := range []struct{ prefix, key, want string }{
		{"", "k", "k"}, {"p", "k", "p/k"}, {"/p/", "k", "p/k"}, {"a/b/", "k/x", "a/b/k/x"},
	} {
		if got := JoinPrefix(tc.prefix, tc.key); got != tc.want {
			t.Errorf("JoinPrefix(%q, %q) = %q, want %q", tc.prefix, tc.key, got, tc.want)
		}
	}
}

func TestChecksumFormat(t *testing.T) {
	// The CRC32C check value of "123456789" is 0xe3069283.
	if got := ChecksumOf([]byte("123456789")); got != "crc32c:e3069283" {
		t.Errorf("ChecksumOf = %q", got)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestIsTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("503: %w", ErrTransient), true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{io.ErrUnexpectedEOF, true},
		{timeoutErr{}, true},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), true},
		{context.Canceled, false},
		{fmt.Errorf("%w: %w", context.Canceled, ErrTransient), false},
		{fmt.Errorf("x: %w", ErrNotFound), false},
		{fmt.Errorf("x: %w", ErrPreconditionFailed), false},
		{fmt.Errorf("x: %w", ErrAccessDenied), false},
		{fmt.Errorf("x: %w", ErrBucketNotFound), false},
		{ShortError("k", 1, 2), false},
		{errors.New("something else"), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	for code, want := range map[int]bool{200: false, 404: false, 403: false, 408: true, 429: true, 500: true, 503: true} {
		if HTTPStatusTransient(code) != want {
			t.Errorf("HTTPStatusTransient(%d) != %v", code, want)
		}
	}
}

func TestRetry(t *testing.T) {
	fast := RetryPolicy{InitialBackoff: time.Microsecond, MaxBackoff: time.Millisecond}
	t.Run("transient then success", func(t *testing.T) {
		calls, retries := 0, 0
		p := fast
		p.OnRetry = func(int, error, time.Duration) { retries++ }
		err := Retry(context.Background(), p, func(context.Context) error {
			calls++
			if calls < 3 {
				return fmt.Errorf("503: %w", ErrTransient)
			}
			return nil
		})
		if err != nil || calls != 3 || retries != 2 {
			t.Fatalf("err %v, calls %d, retries %d", err, calls, retries)
		}
	})
	t.Run("permanent is not retried", func(t *testing.T) {
		calls := 0
		err := Retry(context.Background(), fast, func(context.Context) error {
			calls++
			return fmt.Errorf("x: %w", ErrAccessDenied)
		})
		if !errors.Is(err, ErrAccessDenied) || calls != 1 {
			t.Fatalf("err %v, calls %d", err, calls)
		}
	})
	t.Run("attempts run out", func(t *testing.T) {
		calls := 0
		p := fast
		p.MaxAttempts = 4
		err := Retry(context.Background(), p, func(context.Context) error {
			calls++
			return ErrTransient
		})
		if !errors.Is(err, ErrTransient) || calls != 4 {
			t.Fatalf("err %v, calls %d", err, calls)
		}
	})
	t.Run("context ends the backoff", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		p := RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, rand: func() float64 { return 1 }}
		start := time.Now()
		err := Retry(ctx, p, func(context.Context) error { return ErrTransient })
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTransient) || time.Since(start) > 10*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
	})
}

func TestBackoffGrowsAndCaps(t *testing.T) {
	p := RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, rand: func() float64 { return 1 }}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	// Full jitter: the draw scales the whole interval.
	p.rand = func() float64 { return 0.25 }
	if got := p.Backoff(3); got != 100*time.Millisecond {
		t.Errorf("jittered Backoff(3) = %v", got)
	}
	var zero RetryPolicy
	for i := 1; i < 100; i++ {
		if d := zero.Backoff(i); d < 0 || d > DefaultMaxBackoff {
			t.Fatalf("Backoff(%d) = %v out of [0, %v]", i, d, DefaultMaxBackoff)
		}
	}
}

// recordingUploader checks how NewPartWriter drives a PartUploader.
type recordingUploader struct {
	mu        sync.Mutex
	sizes     map[int]int
	inflight  int
	maxFlight int
	failPart  int   // fail this part number...
	failTimes int   // ...this many times
	failErr   error // with this error
	aborted   bool
	completed bool
	delay     time.Duration
}

func (u *recordingUploader) UploadPart(ctx context.Context, n int, data []byte) (Part, error) {
	u.mu.Lock()
	u.inflight++
	u.maxFlight = max(u.maxFlight, u.inflight)
	fail := n == u.failPart && u.failTimes > 0
	if fail {
		u.failTimes--
	}
	u.mu.Unlock()
	defer func() { u.mu.Lock(); u.inflight--; u.mu.Unlock() }()
	if u.delay > 0 {
		if err := sleepCtx(ctx, u.delay); err != nil {
			return Part{}, err
		}
	}
	if fail {
		return Part{}, u.failErr
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sizes[n] = len(data)
	return Part{ETag: fmt.Sprint(n)}, nil
}

func (u *recordingUploader) Complete(_ context.Context, parts []Part) (ObjectInfo, error) {
	for i, p := range parts {
		if p.Number != i+1 || p.ETag != fmt.Sprint(p.Number) {
			return ObjectInfo{}, fmt.Errorf("parts out of order: %+v", parts)
		}
	}
	u.completed = true
	return ObjectInfo{ETag: "done"}, nil
}

func (u *recordingUploader) Abort(context.Context) error { u.aborted = true; return nil }

func TestPartWriterCoalescesAndBoundsConcurrency(t *testing.T) {
	u := &recordingUploader{sizes: map[int]int{}, delay: 5 * time.Millisecond}
	w := NewPartWriter(context.Background(), "k", MultipartOptions{PartSize: 1, Concurrency: 3}, u, nil)
	total := 7*MinPartSize + 12345
	data := bytes.Repeat([]byte("abcdefg"), total/7+1)[:total]
	for len(data) > 0 {
		n := min(4093, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(u.sizes) != 8 {
		t.Fatalf("%d parts, want 8: %v", len(u.sizes), u.sizes)
	}
	for n := 1; n <= 7; n++ {
		if u.sizes[n] != MinPartSize {
			t.Errorf("part %d is %d bytes, want %d (PartSize is raised to MinPartSize)", n, u.sizes[n], MinPartSize)
		}
	}
	if u.sizes[8] != 12345 {
		t.Errorf("last part %d bytes", u.sizes[8])
	}
	if u.maxFlight > 3 || u.maxFlight < 2 {
		t.Errorf("max in flight %d, want 2..3", u.maxFlight)
	}
	if w.Info().Size != int64(total) || !u.completed || u.aborted {
		t.Errorf("info %+v completed %v aborted %v", w.Info(), u.completed, u.aborted)
	}
}

func TestPartWriterFailureAborts(t *testing.T) {
	u := &recordingUploader{sizes: map[int]int{}, failPart: 2, failTimes: 100, failErr: fmt.Errorf("403: %w", ErrAccessDenied)}
	w := NewPartWriter(context.Background(), "k", MultipartOptions{Concurrency: 1, Retry: &RetryPolicy{InitialBackoff: time.Microsecond}}, u, nil)
	data := make([]byte, 4*DefaultPartSize)
	_, werr := w.Write(data)
	err := w.Close()
	if !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("Close = %v (write %v), want the part's error", err, werr)
	}
	if !u.aborted || u.completed {
		t.Errorf("aborted %v completed %v", u.aborted, u.completed)
	}
	if err2 := w.Close(); err2 != err {
		t.Errorf("second Close = %v, want %v", err2, err)
	}
	if u.failTimes != 99 {
		t.Errorf("a permanent error was retried (%d tries)", 100-u.failTimes)
	}
}

func TestPartWriterRetriesTransientPart(t *testing.T) {
	u := &recordingUploader{sizes: map[int]int{}, failPart: 1, failTimes: 2, failErr: fmt.Errorf("503: %w", ErrTransient)}
	w := NewPartWriter(context.Background(), "k", MultipartOptions{Retry: &RetryPolicy{InitialBackoff: time.Microsecond}}, u, nil)
	if _, err := w.Write(make([]byte, DefaultPartSize+1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if u.failTimes != 0 || len(u.sizes) != 2 {
		t.Errorf("failTimes left %d, parts %v", u.failTimes, u.sizes)
	}
}

func TestMemMultipartEnforcesPartFloor(t *testing.T) {
	b := NewMemBucket().(*memBucket)
	ctx := context.Background()
	up := &memUploader{b: b, id: "x", key: "k"}
	b.mu.uploads["x"] = &memUpload{key: "k", parts: map[int][]byte{}}
	for n := 1; n <= 2; n++ {
		if _, err := up.UploadPart(ctx, n, []byte("tiny")); err != nil {
			t.Fatal(err)
		}
	}
	_, err := up.Complete(ctx, []Part{{Number: 1}, {Number: 2}})
	if !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Complete with a small non-last part: %v", err)
	}
}

func TestFaultBucketErrors(t *testing.T) {
	ctx := context.Background()
	f := NewFaultBucket(NewMemBucket(), FaultConfig{Seed: 1, ErrorRate: 1})
	_, err := f.Put(ctx, "k", strings.NewReader("x"), 1)
	if !errors.Is(err, ErrInjected) || !IsTransient(err) {
		t.Fatalf("injected Put error = %v", err)
	}
	f.SetConfig(FaultConfig{})
	if _, err := f.Head(ctx, "k"); !IsNotFound(err) {
		t.Fatalf("a failed injected Put stored the object: %v", err)
	}
	// Per-operation errors, permanent ones included.
	f.SetConfig(FaultConfig{OpErrors: map[Op]error{OpHead: ErrAccessDenied}})
	if _, err := f.Head(ctx, "k"); !errors.Is(err, ErrAccessDenied) || IsTransient(err) {
		t.Fatalf("OpErrors Head = %v", err)
	}
	if _, err := f.Put(ctx, "k", strings.NewReader("x"), 1); err != nil {
		t.Fatalf("Put with only Head faulted: %v", err)
	}
	// A lost reply: the write happened, the caller was told it failed.
	f.SetConfig(FaultConfig{LostReplyRate: 1, Ops: []Op{OpPutIfAbsent}})
	_, err = f.PutIfAbsent(ctx, "lost", strings.NewReader("y"), 1)
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("lost reply = %v", err)
	}
	f.SetConfig(FaultConfig{})
	if _, err := f.Head(ctx, "lost"); err != nil {
		t.Fatalf("a lost reply did not store: %v", err)
	}
	// A hook picks its victims.
	f.SetConfig(FaultConfig{Hook: func(_ context.Context, op Op, key string) error {
		if op == OpDelete && key == "k" {
			return ErrTransient
		}
		return nil
	}})
	if err := f.Delete(ctx, "k"); !errors.Is(err, ErrInjected) {
		t.Fatalf("hooked Delete = %v", err)
	}
	if err := f.Delete(ctx, "lost"); err != nil {
		t.Fatalf("unhooked Delete = %v", err)
	}
	if f.Injected() != 4 {
		t.Errorf("Injected() = %d, want 4", f.Injected())
	}
}

func TestFaultBucketStallAndLatency(t *testing.T) {
	f := NewFaultBucket(NewMemBucket(), FaultConfig{StallRate: 1})
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err := f.Head(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("stalled Head = %v after %v", err, time.Since(start))
	}
	f.SetConfig(FaultConfig{StallRate: 1, Stall: 20 * time.Millisecond, Latency: 10 * time.Millisecond})
	start = time.Now()
	if _, err := f.Head(context.Background(), "k"); !IsNotFound(err) {
		t.Fatalf("Head after a bounded stall = %v", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("stall+latency took %v, want >= 30ms", d)
	}
}

func TestFaultBucketReads(t *testing.T) {
	ctx := context.Background()
	inner := NewMemBucket()
	data := bytes.Repeat([]byte("0123456789"), 10_000)
	if _, err := inner.Put(ctx, "k", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	read := func(cfg FaultConfig) ([]byte, error) {
		f := NewFaultBucket(inner, cfg)
		rc, err := f.GetRange(ctx, "k", 0, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	got, err := read(FaultConfig{ShortReadRate: 1, Seed: 7})
	if !errors.Is(err, io.ErrUnexpectedEOF) || !IsTransient(err) || len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
		t.Errorf("short read: %d bytes, %v", len(got), err)
	}
	got, err = read(FaultConfig{TruncateRate: 1, Seed: 7})
	if err != nil || len(got) >= len(data) || !bytes.Equal(got, data[:len(got)]) {
		t.Errorf("truncated read: %d bytes, %v", len(got), err)
	}
	got, err = read(FaultConfig{CorruptRate: 1, Seed: 7})
	if err != nil || len(got) != len(data) || bytes.Equal(got, data) {
		t.Errorf("corrupted read: %d bytes equal=%v, %v", len(got), bytes.Equal(got, data), err)
	}
	got, err = read(FaultConfig{ChopReads: true})
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("chopped read: %d bytes, %v", len(got), err)
	}
}

func TestFaultBucketMultipart(t *testing.T) {
	ctx := context.Background()
	inner := NewMemBucket()
	f := NewFaultBucket(inner, FaultConfig{OpErrors: map[Op]error{OpMultipartComplete: ErrTransient}})
	w, err := f.NewMultipartWriter(ctx, "mp", MultipartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrInjected) {
		t.Fatalf("Close = %v", err)
	}
	if _, err := inner.Head(ctx, "mp"); !IsNotFound(err) {
		t.Errorf("failed complete stored the object: %v", err)
	}
	if n := inner.(*memBucket).Uploads(); n != 0 {
		t.Errorf("%d uploads left open", n)
	}
}

func TestInstrumentedEvents(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var evs []Event
	b := Instrumented(NewMemBucket(), ObserverFunc(func(_ context.Context, ev Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}))
	if _, err := b.Put(ctx, "t/0/a", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	rc, err := b.GetRange(ctx, "t/0/a", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(rc)
	rc.Close()
	rc.Close() // reported once
	_, _ = b.Head(ctx, "missing")
	for range b.List(ctx, "t/") {
	}
	w, _ := b.NewMultipartWriter(ctx, "t/0/b", MultipartOptions{})
	_, _ = w.Write(make([]byte, DefaultPartSize+1))
	_ = w.Close()
	_ = b.DeleteMany(ctx, []string{"t/0/a", "t/0/b"})

	want := []Event{
		{Op: OpPut, Key: "t/0/a", Bytes: 5},
		{Op: OpGetRange, Key: "t/0/a", Bytes: 3},
		{Op: OpHead, Key: "missing"},
		{Op: OpList, Key: "t/", Objects: 1},
		{Op: OpMultipartCreate, Key: "t/0/b"},
		{Op: OpMultipartComplete, Key: "t/0/b", Bytes: DefaultPartSize + 1, Parts: 2},
		{Op: OpDeleteMany, Objects: 2},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		if ev.Op != w.Op || ev.Key != w.Key || ev.Bytes != w.Bytes || ev.Objects != w.Objects || ev.Parts != w.Parts || ev.Bucket != b.Name() {
			t.Errorf("event %d = %+v, want %+v", i, ev, w)
		}
		if (ev.Op == OpHead) != (ev.Err != nil) {
			t.Errorf("event %d error %v", i, ev.Err)
		}
	}
}
