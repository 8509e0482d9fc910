package iceberg

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
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
