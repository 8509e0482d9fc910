package iceberg

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	iceberggo "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
)

// Table maintenance: a busy topic commits every commit interval, and each
// commit adds a small data file per table partition and a snapshot to the
// metadata. Left alone, readers plan over thousands of tiny files and the
// metadata file grows without end. Maintain rewrites a partition's small
// files into target-size ones and expires old snapshots. It runs in the
// committer, between translation commits, so it never races a commit on
// the same table.

// Maintenance defaults, chosen for a streaming table: recent history is
// kept for time travel and for readers still planning against an older
// snapshot; files are smaller than Iceberg's 512 MiB batch default because
// the current hour keeps being compacted as it grows.
const (
	DefaultKeepSnapshots  = 10
	DefaultMaxSnapshotAge = time.Hour
	DefaultTargetFileSize = 128 << 20
	DefaultMinInputFiles  = 5
)

// MaintainOptions say how much history to keep and when files are small.
// Zero values take the defaults above.
type MaintainOptions struct {
	// KeepSnapshots is how many of the newest snapshots are always kept.
	KeepSnapshots int
	// MaxSnapshotAge: older snapshots, beyond KeepSnapshots, are expired
	// and the files only they referenced are deleted.
	MaxSnapshotAge time.Duration
	// TargetFileSize is the size compaction writes; a data file under 3/4
	// of it is small.
	TargetFileSize int64
	// MinInputFiles is how many small files a table partition needs
	// before they are rewritten into one.
	MinInputFiles int
	// NoCompaction and NoExpiry turn either step off.
	NoCompaction, NoExpiry bool
	Logger                 *slog.Logger
}

func (o MaintainOptions) withDefaults() MaintainOptions {
	if o.KeepSnapshots < 1 {
		o.KeepSnapshots = DefaultKeepSnapshots
	}
	if o.MaxSnapshotAge <= 0 {
		o.MaxSnapshotAge = DefaultMaxSnapshotAge
	}
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.MinInputFiles < 2 {
		o.MinInputFiles = DefaultMinInputFiles
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Maintain compacts tbl's small files and expires its old snapshots, and
// returns the table as committed. The compaction snapshot carries the
// table's aerostream.offsets forward unchanged, so the translator resumes
// from it as from any translation commit; expiry makes no snapshot.
func Maintain(ctx context.Context, tbl *table.Table, opts MaintainOptions) (*table.Table, error) {
	opts = opts.withDefaults()
	if !opts.NoCompaction {
		var err error
		if tbl, err = compact(ctx, tbl, opts); err != nil {
			return tbl, err
		}
	}
	if !opts.NoExpiry {
		return expire(ctx, tbl, opts)
	}
	return tbl, nil
}

// compact rewrites each table partition's small files, bin-packed to the
// target size, in one replace snapshot.
func compact(ctx context.Context, tbl *table.Table, opts MaintainOptions) (*table.Table, error) {
	if tbl.CurrentSnapshot() == nil {
		return tbl, nil
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = opts.TargetFileSize
	cfg.MinFileSizeBytes = opts.TargetFileSize * 3 / 4
	cfg.MaxFileSizeBytes = opts.TargetFileSize * 9 / 5
	cfg.MinInputFiles = uint(opts.MinInputFiles)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return tbl, fmt.Errorf("iceberg: plan compaction of %v: %w", tbl.Identifier(), err)
	}
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return tbl, fmt.Errorf("iceberg: plan compaction of %v: %w", tbl.Identifier(), err)
	}
	if len(plan.Groups) == 0 {
		return tbl, nil
	}
	carry, err := CarryOffsets(tbl.Metadata())
	if err != nil {
		return tbl, fmt.Errorf("iceberg: compaction of %v: %w", tbl.Identifier(), err)
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
	}
	start := time.Now()
	res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{
		SnapshotProps: iceberggo.Properties(carry),
		// One reader: maintenance shares the node with the log.
		GroupOptions: []table.CompactionGroupOption{
			table.WithCompactionTargetFileSize(opts.TargetFileSize),
			table.WithCompactionScanConcurrency(1),
		},
	})
	if err != nil {
		return tbl, fmt.Errorf("iceberg: compaction of %v: %w", tbl.Identifier(), err)
	}
	opts.Logger.Info("iceberg: compacted", "table", tbl.Identifier(),
		"groups", res.RewrittenGroups, "files_removed", res.RemovedDataFiles, "files_added", res.AddedDataFiles,
		"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter, "took", time.Since(start))
	if res.Table == nil {
		return tbl, nil
	}
	return res.Table, nil
}

// expire drops snapshots beyond the newest KeepSnapshots that are older
// than MaxSnapshotAge, with the files no kept snapshot references.
func expire(ctx context.Context, tbl *table.Table, opts MaintainOptions) (*table.Table, error) {
	before := len(tbl.Metadata().Snapshots())
	txn := tbl.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithRetainLast(opts.KeepSnapshots), table.WithOlderThan(opts.MaxSnapshotAge)); err != nil {
		return tbl, fmt.Errorf("iceberg: expire snapshots of %v: %w", tbl.Identifier(), err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		if out == nil {
			out = tbl
		}
		return out, fmt.Errorf("iceberg: expire snapshots of %v: %w", tbl.Identifier(), err)
	}
	if after := len(out.Metadata().Snapshots()); after < before {
		opts.Logger.Info("iceberg: expired snapshots", "table", tbl.Identifier(), "expired", before-after, "kept", after)
	}
	return out, nil
}
