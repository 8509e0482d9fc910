package iceberg

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// errStreamEnded: a step sent to a file stream whose writer already
// stopped; the writer's own error, when it has one, says why.
var errStreamEnded = errors.New("iceberg: data file writer stopped")

// fileStream writes the rows of one commit to data files while they are
// read, a record batch per translation step, so the Parquet encoding runs
// beside the log at the topic's own pace; a commit then only closes the
// files and swaps the metadata. Encoding everything at each commit was a
// burst of CPU and garbage that stalled produce on a small machine.
//
// The committer goroutine is the only caller; the writer runs in its own
// goroutine, which finish and abort wait for.
type fileStream struct {
	in     chan arrow.RecordBatch
	done   chan struct{}
	cancel context.CancelFunc
	closed bool // in is closed

	// Set by the writer goroutine before done closes.
	files []iceberg.DataFile
	err   error
}

// streamQueue is how many steps may wait for the writer: enough to ride
// out a slow file write, few enough to bound the memory they hold.
const streamQueue = 4

// newFileStream starts writing rows of schema sc (the Arrow form of tbl's
// schema) to data files of tbl, with one writer goroutine: the table's
// partitions fan out inside it rather than across cores.
func newFileStream(ctx context.Context, tbl *table.Table, sc *arrow.Schema) *fileStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &fileStream{in: make(chan arrow.RecordBatch, streamQueue), done: make(chan struct{}), cancel: cancel}
	recs := func(yield func(arrow.RecordBatch, error) bool) {
		for {
			select {
			case rec, ok := <-s.in:
				if !ok {
					return
				}
				if !yield(rec, nil) {
					return
				}
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
	}
	go func() {
		defer close(s.done)
		for df, err := range table.WriteRecords(ctx, tbl, sc, recs, table.WithMaxWriteWorkers(1)) {
			if err != nil {
				// Unblock the feeder in recs first: the writer waits
				// for it when the loop stops.
				s.err = err
				cancel()
				return
			}
			s.files = append(s.files, df)
		}
	}()
	return s
}

// send hands rec to the writer, which releases it.
func (s *fileStream) send(ctx context.Context, rec arrow.RecordBatch) error {
	select {
	case s.in <- rec:
		return nil
	case <-s.done:
		rec.Release()
		if s.err != nil {
			return s.err
		}
		return errStreamEnded
	case <-ctx.Done():
		rec.Release()
		return ctx.Err()
	}
}

// finish closes the files and returns them, to be committed.
func (s *fileStream) finish() ([]iceberg.DataFile, error) {
	if !s.closed {
		s.closed = true
		close(s.in)
	}
	<-s.done
	s.cancel()
	return s.files, s.err
}

// abort stops the writer and drops what it wrote: files no snapshot
// references, which orphan cleanup may delete.
func (s *fileStream) abort() {
	s.cancel()
	<-s.done
	if s.closed {
		return
	}
	for {
		select {
		case rec := <-s.in:
			rec.Release()
		default:
			return
		}
	}
}

// rowMemory is the allocator of the rows the committer builds. It counts
// the bytes still held, so that the committer can tell when the writer has
// encoded and released what it was sent, and wait for that before it
// builds more: translation then runs one stage at a time, on at most one
// core, and leaves the other to produce instead of competing with it.
type rowMemory struct {
	memory.Allocator
	held atomic.Int64
	// floor is what was held when the last wait ended: with nothing in
	// flight, the builder's own buffers (none right after a Build).
	floor int64
}

func (m *rowMemory) Allocate(n int) []byte {
	m.held.Add(int64(n))
	return m.Allocator.Allocate(n)
}

func (m *rowMemory) Reallocate(n int, b []byte) []byte {
	m.held.Add(int64(n - len(b)))
	return m.Allocator.Reallocate(n, b)
}

func (m *rowMemory) Free(b []byte) {
	m.held.Add(-int64(len(b)))
	m.Allocator.Free(b)
}

// writtenPoll is how often waitWritten looks at what is held: short beside
// the milliseconds a step takes to encode.
const writtenPoll = time.Millisecond

// waitWritten waits until the rows sent to the writer are released
// (what is held is back at the floor), or for limit at most: a writer that
// keeps a buffer longer, or leaves it to the garbage collector, slows
// translation by limit once, then the floor rises to what it holds.
func (m *rowMemory) waitWritten(ctx context.Context, limit time.Duration) {
	if m.held.Load() > m.floor {
		t := time.NewTicker(writtenPoll)
		end := time.Now().Add(limit)
		for m.held.Load() > m.floor && time.Now().Before(end) && ctx.Err() == nil {
			<-t.C
		}
		t.Stop()
	}
	m.floor = m.held.Load()
}
