package iceberg

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Paced compaction: a group is read and rewritten a few thousand rows at
// a time, and after each step the rewrite pauses as long as the step
// took, so compaction holds about half a core in slices of a few
// milliseconds instead of a core for the whole group, beside the log's
// produce path.
const (
	compactBatchRows = 4096
	maxCompactPause  = 50 * time.Millisecond
)

// executeGroup rewrites group's files into files of about target bytes,
// paced, and returns what to apply to the rewrite. Tables of format 3
// and up go through iceberg-go's own executor, which carries row lineage.
func executeGroup(ctx context.Context, tbl *table.Table, group table.CompactionTaskGroup, target int64) (table.CompactionGroupResult, error) {
	if tbl.Metadata().Version() >= 3 {
		return table.ExecuteCompactionGroup(ctx, tbl, group,
			table.WithCompactionTargetFileSize(target), table.WithCompactionScanConcurrency(1))
	}
	sc, records, err := tbl.Scan(table.WithMaxConcurrency(1), table.WithArrowBatchSize(compactBatchRows)).ReadTasks(ctx, group.Tasks)
	if err != nil {
		return table.CompactionGroupResult{}, fmt.Errorf("read group %q: %w", group.PartitionKey, err)
	}
	res := table.CompactionGroupResult{PartitionKey: group.PartitionKey, BytesBefore: group.TotalSizeBytes}
	// A group is one table partition: the clustered writer keeps one
	// file open.
	for df, err := range table.WriteRecords(ctx, tbl, sc, paced(ctx, records), table.WithClusteredWrite(), table.WithTargetFileSize(target)) {
		if err != nil {
			return res, fmt.Errorf("write group %q: %w", group.PartitionKey, err)
		}
		res.NewDataFiles = append(res.NewDataFiles, df)
		res.BytesAfter += df.FileSizeBytes()
	}
	res.OldDataFiles = make([]iceberggo.DataFile, 0, len(group.Tasks))
	for _, t := range group.Tasks {
		res.OldDataFiles = append(res.OldDataFiles, t.File)
	}
	return res, nil
}

// paced passes records on, pausing before each as long as the work since
// the previous pause took (reading this batch, writing the one before).
func paced(ctx context.Context, records iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		t := time.NewTimer(0)
		defer t.Stop()
		last := time.Now()
		for rec, err := range records {
			if err == nil {
				t.Reset(min(time.Since(last), maxCompactPause))
				select {
				case <-ctx.Done():
					rec.Release()
					yield(nil, ctx.Err())
					return
				case <-t.C:
				}
				last = time.Now()
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}
