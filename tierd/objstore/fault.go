package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// FaultConfig says which faults a FaultBucket injects. Rates are
// probabilities in [0,1] drawn per call. The zero value injects nothing.
type FaultConfig struct {
	// Seed makes the draws repeatable; 0 picks a random seed.
	Seed uint64
	// Ops limits ErrorRate, LostReplyRate, Latency and the stalls to these
	// operations; empty means all.
	Ops []Op

	// ErrorRate fails a call before it reaches the bucket, with Err.
	ErrorRate float64
	// LostReplyRate lets a call reach the bucket and succeed there, then
	// fails it with Err: the reply was lost. This is the fault that tests
	// idempotence (a retried PutIfAbsent then finds its own object).
	LostReplyRate float64
	// Err is the injected error; nil means a 503 SlowDown-like error that
	// wraps ErrTransient. Every injected error also wraps ErrInjected.
	Err error
	// OpErrors fails every call of an operation with its error, e.g.
	// {OpPut: ErrAccessDenied} for credentials revoked mid-run.
	OpErrors map[Op]error
	// Hook, when set, is called first on every operation; a non-nil result
	// is injected as that call's error. For faults the fields cannot say
	// ("fail the third part upload").
	Hook func(ctx context.Context, op Op, key string) error

	// Latency (plus up to Jitter more) is added before every call.
	Latency time.Duration
	Jitter  time.Duration
	// StallRate stalls a call for Stall before it proceeds, or until its
	// context ends (Stall 0 means only that), as a hung connection does.
	StallRate float64
	Stall     time.Duration

	// ShortReadRate cuts a GetRange stream after a random part of it with
	// io.ErrUnexpectedEOF (a dropped connection; transient).
	ShortReadRate float64
	// TruncateRate ends a GetRange stream early with a clean io.EOF, which
	// only a length or checksum check can notice.
	TruncateRate float64
	// CorruptRate flips one byte of a GetRange stream.
	CorruptRate float64
	// ChopReads makes every Read return at most a few bytes: legal for an
	// io.Reader, and fatal for code that assumes one Read fills a buffer.
	ChopReads bool
}

// errInjectedTransient is the default injected error: what S3 answers when
// throttling, so retry paths see the error they will see in production.
var errInjectedTransient = fmt.Errorf("503 SlowDown: %w", ErrTransient)

// FaultBucket wraps a Bucket and injects the faults of its FaultConfig. The
// config can be changed while the bucket is in use, so a test can make the
// bucket fail for a while and then recover.
type FaultBucket struct {
	b        Bucket
	cfg      atomic.Pointer[FaultConfig]
	injected atomic.Int64
	mu       struct {
		sync.Mutex
		rng *rand.Rand
	}
}

var _ Bucket = (*FaultBucket)(nil)

// NewFaultBucket wraps b with the faults of cfg.
func NewFaultBucket(b Bucket, cfg FaultConfig) *FaultBucket {
	f := &FaultBucket{b: b}
	f.SetConfig(cfg)
	return f
}

// SetConfig replaces the faults for calls starting from now.
func (f *FaultBucket) SetConfig(cfg FaultConfig) {
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	f.mu.Lock()
	f.mu.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	f.mu.Unlock()
	f.cfg.Store(&cfg)
}

// Config returns the faults in force.
func (f *FaultBucket) Config() FaultConfig { return *f.cfg.Load() }

// Injected counts the faults injected so far (errors, lost replies, stalls,
// cut, truncated or corrupted reads).
func (f *FaultBucket) Injected() int64 { return f.injected.Load() }

// Unwrap returns the wrapped bucket.
func (f *FaultBucket) Unwrap() Bucket { return f.b }

func (f *FaultBucket) Name() string   { return "fault(" + f.b.Name() + ")" }
func (f *FaultBucket) String() string { return f.Name() }
func (f *FaultBucket) Close() error   { return f.b.Close() }

func (f *FaultBucket) draw(rate float64) bool {
	if rate <= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.rng.Float64() < rate
}

func (f *FaultBucket) intn(n int64) int64 {
	if n <= 0 {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.rng.Int64N(n)
}

func (f *FaultBucket) injectErr(cfg *FaultConfig, op Op, key string, base error) error {
	f.injected.Add(1)
	if base == nil {
		base = cfg.Err
	}
	if base == nil {
		base = errInjectedTransient
	}
	return fmt.Errorf("fault: %s %q: %w: %w", op, key, ErrInjected, base)
}

// before applies the faults that strike before a call reaches the bucket.
// It returns the config in force for after.
func (f *FaultBucket) before(ctx context.Context, op Op, key string) (*FaultConfig, error) {
	cfg := f.cfg.Load()
	if cfg.Hook != nil {
		if err := cfg.Hook(ctx, op, key); err != nil {
			return cfg, f.injectErr(cfg, op, key, err)
		}
	}
	if err := cfg.OpErrors[op]; err != nil {
		return cfg, f.injectErr(cfg, op, key, err)
	}
	if len(cfg.Ops) > 0 && !slices.Contains(cfg.Ops, op) {
		return cfg, nil
	}
	if d := cfg.Latency + time.Duration(f.intn(int64(cfg.Jitter))); d > 0 {
		if err := sleepCtx(ctx, d); err != nil {
			return cfg, fmt.Errorf("fault: %s %q: %w", op, key, err)
		}
	}
	if f.draw(cfg.StallRate) {
		f.injected.Add(1)
		d := cfg.Stall
		if d <= 0 {
			d = time.Duration(1<<63 - 1)
		}
		if err := sleepCtx(ctx, d); err != nil {
			return cfg, fmt.Errorf("fault: %s %q stalled: %w", op, key, err)
		}
	}
	if f.draw(cfg.ErrorRate) {
		return cfg, f.injectErr(cfg, op, key, nil)
	}
	return cfg, nil
}

// after turns a success into a lost reply.
func (f *FaultBucket) after(cfg *FaultConfig, op Op, key string, err error) error {
	if err != nil || (len(cfg.Ops) > 0 && !slices.Contains(cfg.Ops, op)) {
		return err
	}
	if f.draw(cfg.LostReplyRate) {
		return f.injectErr(cfg, op, key, nil)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *FaultBucket) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	cfg, err := f.before(ctx, OpPut, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.b.Put(ctx, key, r, size)
	return info, f.after(cfg, OpPut, key, err)
}

func (f *FaultBucket) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	cfg, err := f.before(ctx, OpPutIfAbsent, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.b.PutIfAbsent(ctx, key, r, size)
	return info, f.after(cfg, OpPutIfAbsent, key, err)
}

func (f *FaultBucket) Head(ctx context.Context, key string) (ObjectInfo, error) {
	cfg, err := f.before(ctx, OpHead, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.b.Head(ctx, key)
	return info, f.after(cfg, OpHead, key, err)
}

func (f *FaultBucket) Delete(ctx context.Context, key string) error {
	cfg, err := f.before(ctx, OpDelete, key)
	if err != nil {
		return err
	}
	return f.after(cfg, OpDelete, key, f.b.Delete(ctx, key))
}

func (f *FaultBucket) DeleteMany(ctx context.Context, keys []string) error {
	cfg, err := f.before(ctx, OpDeleteMany, "")
	if err != nil {
		return err
	}
	return f.after(cfg, OpDeleteMany, "", f.b.DeleteMany(ctx, keys))
}

func (f *FaultBucket) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if _, err := f.before(ctx, OpList, prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		for info, err := range f.b.List(ctx, prefix) {
			if !yield(info, err) || err != nil {
				return
			}
		}
	}
}

func (f *FaultBucket) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	cfg, err := f.before(ctx, OpGetRange, key)
	if err != nil {
		return nil, err
	}
	rc, err := f.b.GetRange(ctx, key, off, length)
	if err = f.after(cfg, OpGetRange, key, err); err != nil {
		if rc != nil {
			rc.Close()
		}
		return nil, err
	}
	fr := &faultReader{rc: rc, f: f, chop: cfg.ChopReads, cutAt: -1, corruptAt: -1}
	// Where a cut or corruption lands is drawn within the requested length
	// when known; for reads to the end within the first MiB, which covers
	// the objects tests use without a Head.
	span := length
	if span < 0 {
		span = 1 << 20
	}
	switch {
	case f.draw(cfg.ShortReadRate):
		fr.cutAt, fr.cutErr = f.intn(span), io.ErrUnexpectedEOF
	case f.draw(cfg.TruncateRate):
		fr.cutAt, fr.cutErr = f.intn(span), io.EOF
	}
	if f.draw(cfg.CorruptRate) {
		fr.corruptAt = f.intn(max(span, 1))
	}
	if fr.cutAt >= 0 || fr.corruptAt >= 0 {
		f.injected.Add(1)
	}
	return fr, nil
}

type faultReader struct {
	rc        io.ReadCloser
	f         *FaultBucket
	chop      bool
	pos       int64
	cutAt     int64 // -1: no cut
	cutErr    error
	corruptAt int64 // -1: no corruption
}

func (r *faultReader) Read(p []byte) (int, error) {
	if r.cutAt >= 0 {
		if r.pos >= r.cutAt {
			if errors.Is(r.cutErr, io.ErrUnexpectedEOF) {
				return 0, fmt.Errorf("fault: connection cut at byte %d: %w: %w", r.pos, ErrInjected, io.ErrUnexpectedEOF)
			}
			return 0, io.EOF
		}
		if rest := r.cutAt - r.pos; int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	if r.chop && len(p) > 1 {
		p = p[:1+r.f.intn(min(int64(len(p)), 7))]
	}
	n, err := r.rc.Read(p)
	if r.corruptAt >= r.pos && r.corruptAt < r.pos+int64(n) {
		p[r.corruptAt-r.pos] ^= 0x55
	}
	r.pos += int64(n)
	return n, err
}

func (r *faultReader) Close() error { return r.rc.Close() }

func (f *FaultBucket) NewMultipartWriter(ctx context.Context, key string, opts MultipartOptions) (MultipartWriter, error) {
	cfg, err := f.before(ctx, OpMultipartCreate, key)
	if err != nil {
		return nil, err
	}
	w, err := f.b.NewMultipartWriter(ctx, key, opts)
	if err = f.after(cfg, OpMultipartCreate, key, err); err != nil {
		if w != nil {
			_ = w.Abort(ctx)
		}
		return nil, err
	}
	return &faultWriter{w: w, f: f, ctx: ctx, key: key}, nil
}

// faultWriter injects OpMultipartWrite faults on Write (as a failed part
// upload would surface) and OpMultipartComplete faults on Close.
type faultWriter struct {
	w   MultipartWriter
	f   *FaultBucket
	ctx context.Context
	key string
	err error
}

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if _, err := w.f.before(w.ctx, OpMultipartWrite, w.key); err != nil {
		w.err = err
		return 0, err
	}
	return w.w.Write(p)
}

func (w *faultWriter) Close() error {
	if w.err != nil {
		_ = w.w.Abort(context.WithoutCancel(w.ctx))
		return w.err
	}
	cfg, err := w.f.before(w.ctx, OpMultipartComplete, w.key)
	if err != nil {
		w.err = err
		_ = w.w.Abort(context.WithoutCancel(w.ctx))
		return err
	}
	err = w.f.after(cfg, OpMultipartComplete, w.key, w.w.Close())
	if err != nil {
		w.err = err
	}
	return err
}

func (w *faultWriter) Abort(ctx context.Context) error { return w.w.Abort(ctx) }
func (w *faultWriter) Info() ObjectInfo                { return w.w.Info() }
