package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/aerostream/aerostream/iceberg/internal/recbatch"
	"github.com/aerostream/aerostream/logstore/ring"
)

// Fetch sizes of a committer: per partition and per request.
const (
	fetchPartitionBytes = 1 << 20
	fetchMaxBytes       = 8 << 20
	maxFetchWait        = 2 * time.Second
)

// Translation steps: the committer reads what the log gained, turns it
// into rows and hands them to the data file writer (stream.go), then
// pauses before the next read, so that on a busy topic each step is a
// bounded slice of work between produce requests rather than a wakeup
// per produce. Every step also rests at least its work time over
// restShare, and the writer encodes one step's rows before the next are
// built (rowMemory, stream.go): a table that is behind catches up on at
// most two thirds of a core, leaving the rest to produce, rather than
// holding both cores of a small machine.
const (
	stepRows     = 32 << 10
	maxStepPause = 250 * time.Millisecond
	restShare    = 2
)

// committer translates one topic into its table (and its DLQ table).
type committer struct {
	m     *Manager
	run   *topicRun
	topic string
	log   *slog.Logger
}

// loop runs sessions until ctx ends, backing off after each failure. A
// session starts from the table's offsets, so a failure loses nothing.
func (c *committer) loop(ctx context.Context) {
	backoff := 500 * time.Millisecond
	var changed time.Time // when a session last ended for a new value schema
	for ctx.Err() == nil {
		started := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, ErrSchemaChanged) && time.Since(changed) > time.Second {
			// Not a failure: the next session evolves the table. (Twice
			// in a second is one, and backs off.)
			changed = time.Now()
			c.log.Info("iceberg: value schema gained columns; evolving the table", "topic", c.topic, "err", err)
			continue
		}
		c.run.stat.failed(err)
		c.m.met.failures.WithLabelValues(c.topic).Inc()
		if time.Since(started) > time.Minute {
			backoff = 500 * time.Millisecond
		}
		c.log.Warn("iceberg committer failed; retrying from the table's offsets", "topic", c.topic, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// partState is a partition's read position and transaction filter.
type partState struct {
	read    int64             // next offset to read
	pending []ring.AbortedTxn // aborted transactions not reached yet
	seen    map[[2]int64]bool
	active  map[int64]bool // producers whose open transaction was aborted
	hw      int64
}

// session loads the table, then translates and commits until an error.
func (c *committer) session(ctx context.Context) error {
	st := c.run.state()
	cfg := c.m.cfg
	mode, err := NewMode(ModeContext{Topic: c.topic, Configs: st.Configs, Registry: c.m.opts.Registry})
	if err != nil {
		return err
	}
	want, err := mode.Schema(ctx)
	if err != nil {
		return err
	}
	spec := st.Configs[ConfigPartitionSpec]
	if spec == "" {
		spec = DefaultPartitionSpec
	}
	tbl, err := ensureTable(ctx, c.m.cat, cfg.Namespace, c.topic, c.topic, want, spec)
	if err != nil {
		return err
	}
	if tbl, err = evolveTable(ctx, tbl, want); err != nil { // mode_schema.go
		return err
	}
	if tbl, err = evolveSpec(ctx, tbl, spec); err != nil { // table.go
		return err
	}
	if err := c.fenced(tbl); err != nil { // fence.go
		return err
	}
	committed, err := TableOffsets(tbl.Metadata())
	if err != nil {
		return err
	}
	c.run.stat.loaded(tbl, committed)
	c.m.setFloors(c.topic, committed)

	dlqAction := st.Configs[ConfigInvalidAction]
	if dlqAction == "" {
		dlqAction = ActionDLQ
	}
	var (
		dlqTbl *table.Table
		dlqOff Offsets
	)
	mem := memory.DefaultAllocator
	rowMem := &rowMemory{Allocator: mem} // stream.go
	rows, err := mode.NewBuilder(tbl.Schema(), rowMem)
	if err != nil {
		return err
	}
	defer rows.Release()
	var dlq RowBuilder
	defer func() {
		if dlq != nil {
			dlq.Release()
		}
	}()

	parts := map[int32]*partState{}
	addParts := func(n int32) error {
		for p := int32(0); p < n; p++ {
			if parts[p] != nil {
				continue
			}
			next, ok := committed[p]
			if !ok {
				// Never translated: from the start of the log.
				res, err := c.m.backend.ListOffsets(ctx, c.topic, p, ring.TimestampEarliest)
				if err != nil {
					return fmt.Errorf("partition %d: log start: %w", p, err)
				}
				next = res.Offset
			}
			parts[p] = &partState{read: next, seen: map[[2]int64]bool{}, active: map[int64]bool{}, hw: -1}
		}
		return nil
	}
	if err := addParts(st.Partitions); err != nil {
		return err
	}

	var (
		pendingBytes    int64
		pendingRows     int
		dlqRows         int
		minTs           int64 = -1
		deadline              = time.Now().Add(cfg.CommitInterval)
		lastCommit            = time.Now()
		lastMaint             = time.Now()
		lastWarn        time.Time
		dec             = recbatch.NewDecoder()
		stream          *fileStream // this commit's data files; nil until its first rows
		stepPause       = min(cfg.CommitInterval/8, maxStepPause)
		refresher, _    = mode.(SchemaRefresher)
		lastRefreshWarn time.Time
		pause           = time.NewTimer(0)
		recBuf          []byte // a partition's fetched bytes, reused from step to step
		recCount        = c.m.met.records.WithLabelValues(c.topic)
		byteCount       = c.m.met.bytes.WithLabelValues(c.topic)
	)
	defer pause.Stop()
	defer func() {
		if stream != nil {
			stream.abort()
		}
	}()
	// flush hands the rows built so far to this commit's data files.
	flush := func() error {
		if rows.Rows() == 0 {
			return nil
		}
		rec := rows.Build()
		if stream == nil {
			stream = newFileStream(ctx, tbl, rec.Schema())
		}
		if err := stream.send(ctx, rec); err != nil {
			return fmt.Errorf("write data files: %w", err)
		}
		// One stage at a time: the next rows are built once the writer
		// has encoded these.
		rowMem.waitWritten(ctx, maxStepPause)
		return nil
	}
	readOffsets := func() Offsets {
		o := make(Offsets, len(parts))
		for p, ps := range parts {
			o[p] = ps.read
		}
		return o
	}
	for {
		if n := c.run.state().Partitions; n > int32(len(parts)) {
			if err := addParts(n); err != nil {
				return err
			}
		}
		now := time.Now()
		if pendingBytes >= cfg.CommitBytes || !now.Before(deadline) {
			if pendingRows > 0 || dlqRows > 0 {
				next := readOffsets()
				if dlqRows > 0 {
					if _, err := c.commitRows(ctx, dlqTbl, dlq, next, 0, 0); err != nil {
						return fmt.Errorf("commit %s%s: %w", c.topic, DLQSuffix, err)
					}
					c.m.met.dlq.WithLabelValues(c.topic).Add(float64(dlqRows))
					c.run.stat.addDLQ(dlqRows)
					dlqRows = 0
				}
				if err := flush(); err != nil {
					return err
				}
				var files []iceberg.DataFile
				if stream != nil {
					files, err = stream.finish()
					stream = nil
					if err != nil {
						return fmt.Errorf("write data files: %w", err)
					}
				}
				t, err := c.commitFiles(ctx, tbl, files, next, pendingRows, pendingBytes)
				if err != nil {
					return err
				}
				tbl, committed, lastCommit = t, next, now
				c.run.stat.committed(tbl, committed)
				c.m.setFloors(c.topic, committed)
				pendingBytes, pendingRows, minTs = 0, 0, -1
				if now.Sub(lastMaint) >= cfg.MaintainInterval {
					// Between commits, never beside one: maintenance
					// carries the offsets forward.
					// Half an interval of compaction at most: the rest
					// waits for the next run rather than delay commits.
					mo := cfg.Maintain
					mo.Logger, mo.Budget = c.log, cfg.CommitInterval/2
					if tbl, err = Maintain(ctx, tbl, mo); err != nil {
						return fmt.Errorf("maintain %s: %w", c.topic, err)
					}
					lastMaint = now
				}
			}
			deadline = now.Add(cfg.CommitInterval)
		}
		if lag := c.run.stat.setLag(parts, committed, minTs); lag > 0 && now.Sub(lastCommit) > 5*cfg.CommitInterval &&
			now.Sub(lastWarn) > cfg.CommitInterval {
			// Retention holds the untranslated records back meanwhile.
			c.log.Warn("iceberg table falls behind its topic; retention is held back", "topic", c.topic,
				"lag_records", lag, "last_commit", lastCommit)
			lastWarn = now
		}

		wait := min(time.Until(deadline), maxFetchWait)
		if wait < 0 || pendingBytes >= cfg.CommitBytes {
			wait = 0
		}
		req := &ring.FetchRequest{MinBytes: 1, MaxBytes: fetchMaxBytes, MaxWait: wait, IsolationLevel: ring.ReadCommitted}
		ids := make([]int32, 0, len(parts))
		for p := range parts {
			ids = append(ids, p)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, p := range ids {
			req.Partitions = append(req.Partitions, ring.FetchPartition{Topic: c.topic, Partition: p, Offset: parts[p].read, MaxBytes: fetchPartitionBytes})
		}
		res, err := c.m.backend.Fetch(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, ring.ErrNotLeader) || errors.Is(err, ring.ErrClosed) {
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			return fmt.Errorf("fetch: %w", err)
		}
		busyFrom := time.Now()
		fetched := 0
		for i := range res.Partitions {
			fetched += res.Partitions[i].Records.Size()
		}
		if refresher != nil && fetched > 0 {
			// Every record fetched was produced after the versions
			// registered by now: look them up before decoding.
			if err := refresher.Refresh(ctx); errors.Is(err, ErrSchemaChanged) {
				res.Release()
				return err
			} else if err != nil && time.Since(lastRefreshWarn) > cfg.CommitInterval {
				c.log.Warn("iceberg: cannot look up the value schema; decoding with the version known", "topic", c.topic, "err", err)
				lastRefreshWarn = time.Now()
			}
		}
		for i := range res.Partitions {
			pr := &res.Partitions[i]
			ps := parts[pr.Partition]
			if ps == nil {
				continue
			}
			if pr.Err != nil {
				if errors.Is(pr.Err, ring.ErrOffsetOutOfRange) && ps.read < pr.LogStartOffset {
					// Deleted under us (DeleteRecords): what is gone
					// cannot be translated; say so and go on.
					c.log.Error("iceberg: records deleted before translation; the table skips them", "topic", c.topic,
						"partition", pr.Partition, "from", ps.read, "to", pr.LogStartOffset)
					c.m.met.skipped.WithLabelValues(c.topic).Add(float64(pr.LogStartOffset - ps.read))
					ps.read = pr.LogStartOffset
				} else if !errors.Is(pr.Err, ring.ErrNotLeader) {
					c.log.Debug("iceberg fetch", "topic", c.topic, "partition", pr.Partition, "err", pr.Err)
				}
				continue
			}
			ps.hw = pr.LastStableOffset
			if ps.hw <= 0 {
				ps.hw = pr.HighWatermark
			}
			for _, a := range pr.AbortedTransactions {
				k := [2]int64{a.ProducerID, a.FirstOffset}
				if !ps.seen[k] {
					ps.seen[k] = true
					ps.pending = append(ps.pending, a)
				}
			}
			sort.Slice(ps.pending, func(i, j int) bool { return ps.pending[i].FirstOffset < ps.pending[j].FirstOffset })
			if pr.Records.Size() == 0 {
				continue
			}
			// Rows copy what they keep, so the buffer serves every step.
			recBuf, err = pr.Records.ReadAll(recBuf[:0])
			buf := recBuf
			if err != nil {
				res.Release()
				return fmt.Errorf("partition %d: read records: %w", pr.Partition, err)
			}
			for len(buf) > 0 {
				b, rest, ok, err := recbatch.NextBatch(buf)
				if err != nil {
					res.Release()
					return fmt.Errorf("partition %d: %w", pr.Partition, err)
				}
				if !ok {
					break
				}
				buf = rest
				if b.Next() <= ps.read {
					continue
				}
				if skip := ps.filterTxn(&b); skip {
					ps.read = b.Next()
					continue
				}
				recs, err := dec.Records(pr.Partition, &b)
				if err != nil {
					res.Release()
					return fmt.Errorf("partition %d: %w", pr.Partition, err)
				}
				var batchRows, batchBytes int64
				for j := range recs {
					r := &recs[j]
					if r.Offset < ps.read {
						continue
					}
					err := rows.Append(r)
					switch {
					case err == nil:
						pendingRows++
						n := int64(len(r.Key) + len(r.Value))
						for _, h := range r.Headers {
							n += int64(len(h.Key) + len(h.Value))
						}
						pendingBytes += n
						batchRows++
						batchBytes += n
						if minTs < 0 || r.Timestamp < minTs {
							minTs = r.Timestamp
						}
					case errors.Is(err, ErrUndecodable) && dlqAction == ActionDrop:
						c.m.met.dropped.WithLabelValues(c.topic).Inc()
					case errors.Is(err, ErrUndecodable):
						if dlq == nil {
							kv := keyValue{}
							dlqTbl, err = ensureTable(ctx, c.m.cat, cfg.Namespace, c.topic+DLQSuffix, c.topic, KeyValueSchema(), spec)
							if err == nil {
								dlqTbl, err = evolveSpec(ctx, dlqTbl, spec)
							}
							if err != nil {
								res.Release()
								return err
							}
							if dlqOff, err = TableOffsets(dlqTbl.Metadata()); err != nil {
								res.Release()
								return err
							}
							if dlq, err = kv.NewBuilder(dlqTbl.Schema(), mem); err != nil {
								res.Release()
								return err
							}
						}
						// A DLQ commit that landed before a failed main
						// commit already holds these rows.
						if off, ok := dlqOff[r.Partition]; !ok || r.Offset >= off {
							if err := dlq.Append(r); err != nil {
								res.Release()
								return err
							}
							dlqRows++
						}
					default:
						res.Release()
						return fmt.Errorf("partition %d offset %d: %w", r.Partition, r.Offset, err)
					}
				}
				recCount.Add(float64(batchRows))
				byteCount.Add(float64(batchBytes))
				ps.read = b.Next()
				if rows.Rows() >= stepRows {
					if err := flush(); err != nil {
						res.Release()
						return err
					}
				}
			}
		}
		res.Release()
		if err := flush(); err != nil {
			return err
		}
		var rest time.Duration
		if fetched > 0 && fetched < fetchMaxBytes/2 {
			rest = stepPause
		}
		rest = max(rest, time.Since(busyFrom)/restShare)
		if d := min(rest, time.Until(deadline)); d > 0 {
			pause.Reset(d)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-pause.C:
			}
		}
	}
}

// filterTxn reports whether batch b belongs to an aborted transaction (or
// is a control batch), keeping the partition's transaction state, as
// Kafka's consumers do with the aborted transactions of a fetch.
func (ps *partState) filterTxn(b *recbatch.Batch) bool {
	last := b.Next() - 1
	for len(ps.pending) > 0 && ps.pending[0].FirstOffset <= last {
		ps.active[ps.pending[0].ProducerID] = true
		ps.pending = ps.pending[1:]
	}
	if b.Control() {
		delete(ps.active, b.ProducerID)
		return true
	}
	return b.Transactional() && ps.active[b.ProducerID]
}

// commitFiles adds files to tbl in one snapshot whose summary carries
// next, and returns the table as committed. With no files (the records
// read were skipped, dropped or sent to the DLQ table) the snapshot is
// empty and only moves the offsets.
func (c *committer) commitFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, next Offsets, rows int, bytes int64) (*table.Table, error) {
	tx := tbl.NewTransaction()
	props := iceberg.Properties{SummaryOffsets: next.String()}
	maps.Copy(props, c.fence().props())
	var err error
	if len(files) == 0 {
		err = tx.AddFiles(ctx, nil, props, false)
	} else {
		// The files have fresh names: checking them against every
		// manifest would read the whole table's metadata each commit.
		err = tx.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck(), table.WithoutAutoNameMapping())
	}
	if err != nil {
		return nil, fmt.Errorf("add data files: %w", err)
	}
	t, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if rows > 0 {
		c.m.met.commits.WithLabelValues(c.topic).Inc()
		c.log.Debug("iceberg commit", "topic", c.topic, "rows", rows, "bytes", bytes, "files", len(files), "offsets", next.String())
	}
	return t, nil
}

// commitRows appends what b built to tbl in one snapshot whose summary
// carries next, and returns the table as committed: the DLQ table's
// path, whose rows are few.
func (c *committer) commitRows(ctx context.Context, tbl *table.Table, b RowBuilder, next Offsets, rows int, bytes int64) (*table.Table, error) {
	rec := b.Build()
	defer rec.Release()
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	tx := tbl.NewTransaction()
	props := iceberg.Properties{SummaryOffsets: next.String()}
	maps.Copy(props, c.fence().props())
	if err := tx.Append(ctx, rdr, props); err != nil {
		return nil, fmt.Errorf("write data files: %w", err)
	}
	t, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	if rows > 0 {
		c.m.met.commits.WithLabelValues(c.topic).Inc()
		c.log.Debug("iceberg commit", "topic", c.topic, "rows", rows, "bytes", bytes, "offsets", next.String())
	}
	return t, nil
}
