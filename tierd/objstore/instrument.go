package objstore

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"
)

// Event is one finished Bucket operation, as an Observer sees it.
type Event struct {
	Op Op
	// Bucket is the bucket's Name.
	Bucket string
	// Key is the object key, or the prefix for OpList; empty for
	// OpDeleteMany. Observers derive the topic from it (object keys are
	// <topic>/<partition>/...) or from values tierd put in the context.
	Key string
	// Bytes moved: uploaded for OpPut, OpPutIfAbsent and
	// OpMultipartComplete (the whole upload, reported once at Close; there
	// is no event per Write), read by the caller for OpGetRange (reported
	// when the reader is closed).
	Bytes int64
	// Objects counts the keys of OpList and OpDeleteMany, which the stores
	// bill per page of 1000.
	Objects int
	// Parts is the number of part uploads of an OpMultipartComplete: the
	// upload cost Parts+2 requests (create, parts, complete), which is what
	// a per-request bill counts.
	Parts    int
	Duration time.Duration
	// Err is the operation's error, nil on success. For OpGetRange it is
	// the first read error other than io.EOF.
	Err error
}

// Observer receives an Event per operation. It is called synchronously on
// the caller's goroutine, so it must be cheap (bump counters, observe a
// histogram). ctx is the operation's context.
type Observer interface {
	Observe(ctx context.Context, ev Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, ev Event)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, ev Event) { f(ctx, ev) }

// instrumented reports every operation of b to obs. Metrics hang off this
// wrapper rather than the providers, so one implementation counts the same
// way for all of them and the providers stay free of metrics code.
type instrumented struct {
	b    Bucket
	obs  Observer
	name string
}

var _ Bucket = (*instrumented)(nil)

// Instrumented returns b reporting each operation to obs.
func Instrumented(b Bucket, obs Observer) Bucket {
	return &instrumented{b: b, obs: obs, name: b.Name()}
}

func (i *instrumented) Name() string   { return i.name }
func (i *instrumented) String() string { return i.name }
func (i *instrumented) Close() error   { return i.b.Close() }

// Unwrap returns the wrapped bucket.
func (i *instrumented) Unwrap() Bucket { return i.b }

func (i *instrumented) report(ctx context.Context, ev Event, start time.Time) {
	ev.Bucket = i.name
	ev.Duration = time.Since(start)
	i.obs.Observe(ctx, ev)
}

func (i *instrumented) Put(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	start := time.Now()
	info, err := i.b.Put(ctx, key, r, size)
	i.report(ctx, Event{Op: OpPut, Key: key, Bytes: info.Size, Err: err}, start)
	return info, err
}

func (i *instrumented) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) (ObjectInfo, error) {
	start := time.Now()
	info, err := i.b.PutIfAbsent(ctx, key, r, size)
	i.report(ctx, Event{Op: OpPutIfAbsent, Key: key, Bytes: info.Size, Err: err}, start)
	return info, err
}

func (i *instrumented) Head(ctx context.Context, key string) (ObjectInfo, error) {
	start := time.Now()
	info, err := i.b.Head(ctx, key)
	i.report(ctx, Event{Op: OpHead, Key: key, Err: err}, start)
	return info, err
}

func (i *instrumented) Delete(ctx context.Context, key string) error {
	start := time.Now()
	err := i.b.Delete(ctx, key)
	i.report(ctx, Event{Op: OpDelete, Key: key, Err: err}, start)
	return err
}

func (i *instrumented) DeleteMany(ctx context.Context, keys []string) error {
	start := time.Now()
	err := i.b.DeleteMany(ctx, keys)
	i.report(ctx, Event{Op: OpDeleteMany, Objects: len(keys), Err: err}, start)
	return err
}

func (i *instrumented) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		start := time.Now()
		ev := Event{Op: OpList, Key: prefix}
		defer func() { i.report(ctx, ev, start) }()
		for info, err := range i.b.List(ctx, prefix) {
			if err != nil {
				ev.Err = err
			} else {
				ev.Objects++
			}
			if !yield(info, err) || err != nil {
				return
			}
		}
	}
}

func (i *instrumented) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	start := time.Now()
	rc, err := i.b.GetRange(ctx, key, off, length)
	if err != nil {
		i.report(ctx, Event{Op: OpGetRange, Key: key, Err: err}, start)
		return nil, err
	}
	return &observedReader{rc: rc, done: func(n int64, err error) {
		i.report(ctx, Event{Op: OpGetRange, Key: key, Bytes: n, Err: err}, start)
	}}, nil
}

// observedReader reports once, at Close, so Bytes is what the caller read
// and Duration covers the whole transfer.
type observedReader struct {
	rc   io.ReadCloser
	n    int64
	err  error
	once sync.Once
	done func(n int64, err error)
}

func (r *observedReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

func (r *observedReader) Close() error {
	err := r.rc.Close()
	r.once.Do(func() { r.done(r.n, r.err) })
	return err
}

func (i *instrumented) NewMultipartWriter(ctx context.Context, key string, opts MultipartOptions) (MultipartWriter, error) {
	start := time.Now()
	w, err := i.b.NewMultipartWriter(ctx, key, opts)
	i.report(ctx, Event{Op: OpMultipartCreate, Key: key, Err: err}, start)
	if err != nil {
		return nil, err
	}
	return &observedWriter{w: w, i: i, ctx: ctx, key: key, start: start, partSize: opts.WithDefaults().PartSize}, nil
}

type observedWriter struct {
	w        MultipartWriter
	i        *instrumented
	ctx      context.Context
	key      string
	start    time.Time
	partSize int64
	n        int64
	done     bool
}

func (w *observedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *observedWriter) Close() error {
	err := w.w.Close()
	if !w.done {
		w.done = true
		parts := int((w.n + w.partSize - 1) / w.partSize)
		w.i.report(w.ctx, Event{Op: OpMultipartComplete, Key: w.key, Bytes: w.n, Parts: max(parts, 1), Err: err}, w.start)
	}
	return err
}

func (w *observedWriter) Abort(ctx context.Context) error {
	if w.done {
		return w.w.Abort(ctx)
	}
	w.done = true
	start := time.Now()
	err := w.w.Abort(ctx)
	w.i.report(ctx, Event{Op: OpMultipartAbort, Key: w.key, Bytes: w.n, Err: err}, start)
	return err
}

func (w *observedWriter) Info() ObjectInfo { return w.w.Info() }
