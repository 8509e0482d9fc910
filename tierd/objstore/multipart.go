package objstore

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// PartUploader is the provider side of a part-based upload (S3 multipart,
// Azure staged blocks, filesystem part files). NewPartWriter drives it, so
// coalescing, concurrency, checksumming, retries and clean-up on failure are
// written once.
type PartUploader interface {
	// UploadPart stores part number n (from 1) with exactly data. Calls for
	// different parts run concurrently; data is not retained after return.
	UploadPart(ctx context.Context, n int, data []byte) (Part, error)
	// Complete assembles parts (sorted by number, none missing) into the
	// object. With opts.IfAbsent it must fail with ErrPreconditionFailed,
	// storing nothing, if the key exists.
	Complete(ctx context.Context, parts []Part) (ObjectInfo, error)
	// Abort discards the upload and whatever parts were stored. It may be
	// called after a failed Complete and must then succeed or be harmless.
	Abort(ctx context.Context) error
}

// Part is one uploaded part as the provider reports it.
type Part struct {
	Number int
	Size   int64
	// ETag (S3) or block ID (Azure): whatever Complete needs to name it.
	ETag string
}

// abortTimeout bounds the clean-up after a failed upload. It runs on a
// context detached from the caller's, which is often the very thing that was
// cancelled.
const abortTimeout = 30 * time.Second

// partWriter implements MultipartWriter over a PartUploader.
//
// Write fills buf; a full buf becomes a part uploaded by its own goroutine
// once one of opts.Concurrency slots is free, so Write blocks (backpressure)
// only when that many parts are in flight. Buffers are recycled through free
// so a writer holds at most Concurrency+1 parts of memory.
type partWriter struct {
	key  string
	opts MultipartOptions
	up   PartUploader
	log  *slog.Logger

	ctx    context.Context // cancelled by Abort and on the first part failure
	cancel context.CancelFunc
	sem    chan struct{}
	free   chan []byte
	wg     sync.WaitGroup

	buf     []byte
	next    int // number of the next part
	sum     hashWriter
	written int64
	state   int // writerOpen, writerClosed, writerAborted
	result  error
	info    ObjectInfo

	mu struct {
		sync.Mutex
		err   error
		parts []Part
	}
}

const (
	writerOpen = iota
	writerClosed
	writerAborted
)

type hashWriter interface {
	Write([]byte) (int, error)
	Sum32() uint32
}

var _ MultipartWriter = (*partWriter)(nil)

// NewPartWriter returns a MultipartWriter that uploads through up. Providers
// call it from NewMultipartWriter after starting the upload.
func NewPartWriter(ctx context.Context, key string, opts MultipartOptions, up PartUploader, log *slog.Logger) MultipartWriter {
	opts = opts.WithDefaults()
	if log == nil {
		log = slog.Default()
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &partWriter{
		key: key, opts: opts, up: up, log: log,
		ctx: wctx, cancel: cancel,
		sem:  make(chan struct{}, opts.Concurrency),
		free: make(chan []byte, opts.Concurrency+1),
		next: 1,
		sum:  NewCRC32C(),
	}
	return w
}

func (w *partWriter) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.err
}

func (w *partWriter) failLocked(err error) {
	if w.mu.err == nil {
		w.mu.err = err
	}
}

func (w *partWriter) Write(p []byte) (int, error) {
	if w.state != writerOpen {
		return 0, fmt.Errorf("objstore: write %q: %w", w.key, ErrClosed)
	}
	if err := w.firstErr(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		if w.buf == nil {
			select {
			case w.buf = <-w.free:
				w.buf = w.buf[:0]
			default:
				w.buf = make([]byte, 0, w.opts.PartSize)
			}
		}
		c := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf = w.buf[:len(w.buf)+c]
		w.sum.Write(p[:c])
		w.written += int64(c)
		n += c
		p = p[c:]
		if int64(len(w.buf)) == w.opts.PartSize {
			if err := w.dispatch(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// dispatch hands buf to an upload goroutine, waiting for a free slot.
func (w *partWriter) dispatch() error {
	if w.next > MaxParts {
		err := fmt.Errorf("objstore: upload %q: more than %d parts of %d bytes: %w", w.key, MaxParts, w.opts.PartSize, ErrInvalidArgument)
		w.mu.Lock()
		w.failLocked(err)
		w.mu.Unlock()
		return err
	}
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		if err := w.firstErr(); err != nil {
			return err
		}
		return fmt.Errorf("objstore: upload %q: %w", w.key, context.Cause(w.ctx))
	}
	data, n := w.buf, w.next
	w.buf = nil
	w.next++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		part, err := w.uploadPart(n, data)
		select {
		case w.free <- data:
		default:
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.failLocked(fmt.Errorf("objstore: upload %q part %d: %w", w.key, n, err))
			w.cancel() // stop the other parts: the upload is lost anyway
			return
		}
		part.Number, part.Size = n, int64(len(data))
		w.mu.parts = append(w.mu.parts, part)
	}()
	return nil
}

func (w *partWriter) uploadPart(n int, data []byte) (Part, error) {
	var part Part
	do := func(ctx context.Context) error {
		var err error
		part, err = w.up.UploadPart(ctx, n, data)
		return err
	}
	if w.opts.Retry == nil {
		return part, do(w.ctx)
	}
	return part, Retry(w.ctx, *w.opts.Retry, do)
}

func (w *partWriter) Close() error {
	switch w.state {
	case writerClosed:
		return w.result
	case writerAborted:
		return fmt.Errorf("objstore: close %q: %w", w.key, ErrClosed)
	}
	w.state = writerClosed
	w.result = w.complete()
	w.cancel()
	return w.result
}

func (w *partWriter) complete() error {
	// The last part may be short, and an empty object is one empty part:
	// S3 wants at least one part, and the others accept it.
	if w.firstErr() == nil && (len(w.buf) > 0 || w.next == 1) {
		if w.buf == nil {
			w.buf = []byte{}
		}
		_ = w.dispatch() // a failure is recorded in mu.err
	}
	w.wg.Wait()
	err := w.firstErr()
	if err == nil {
		if err = w.ctx.Err(); err != nil {
			err = fmt.Errorf("objstore: upload %q: %w", w.key, err)
		}
	}
	if err != nil {
		w.abortDetached()
		return err
	}
	w.mu.Lock()
	parts := slices.Clone(w.mu.parts)
	w.mu.Unlock()
	slices.SortFunc(parts, func(a, b Part) int { return a.Number - b.Number })
	info, err := w.up.Complete(w.ctx, parts)
	if err != nil {
		w.abortDetached()
		return fmt.Errorf("objstore: complete %q: %w", w.key, err)
	}
	info.Key = w.key
	if info.Size == 0 {
		info.Size = w.written
	}
	info.Checksum = FormatCRC32C(w.sum.Sum32())
	w.info = info
	return nil
}

// abortDetached cleans up after a failure, even if the caller's context is
// what failed.
func (w *partWriter) abortDetached() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	if err := w.up.Abort(ctx); err != nil {
		w.log.Warn("objstore: abort after failed upload", "key", w.key, "err", err)
	}
}

func (w *partWriter) Abort(ctx context.Context) error {
	switch w.state {
	case writerClosed, writerAborted:
		// Completed, or already cleaned up: a failed Close aborts itself.
		return nil
	}
	w.state = writerAborted
	w.cancel()
	w.wg.Wait()
	if err := w.up.Abort(ctx); err != nil {
		return fmt.Errorf("objstore: abort %q: %w", w.key, err)
	}
	return nil
}

func (w *partWriter) Info() ObjectInfo { return w.info }
