package iceberg

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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
	// DefaultSmallFileSize: files under it are compacted. Bigger ones are
	// left as they are: few enough for readers, and rewriting them again
	// and again as the hour grows is what made compaction costly.
	DefaultSmallFileSize = 16 << 20
)

// Compaction merges files of one size class (sizeTier) at a time, a few
// files per group: each byte is rewritten about once per class instead
// of at every run, and a run's work is bounded.
const (
	tierBase       = 256 << 10
	maxGroupFactor = 2 // a group holds at most this many times MinInputFiles files
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
	// MinInputFiles is how many small files of one size class a table
	// partition needs before they are rewritten into one.
	MinInputFiles int
	// SmallFileSize: only files under it (and under 3/4 of
	// TargetFileSize) are compacted.
	SmallFileSize int64
	// Budget bounds one run's compaction time: no group starts after
	// it, and what is left waits for the next run. Zero is no bound.
	Budget time.Duration
	// NoCompaction and NoExpiry turn either step off.
	NoCompaction, NoExpiry bool
	Logger                 *slog.Logger

	tierBase int64 // the smallest size class's bound; tests shrink it
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
	if o.SmallFileSize <= 0 {
		o.SmallFileSize = DefaultSmallFileSize
	}
	if o.tierBase <= 0 {
		o.tierBase = tierBase
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

// compact rewrites each table partition's small files, a size class at
// a time and bin-packed to the target size, in one replace snapshot.
func compact(ctx context.Context, tbl *table.Table, opts MaintainOptions) (*table.Table, error) {
	if tbl.CurrentSnapshot() == nil {
		return tbl, nil
	}
	groups, err := planCompaction(ctx, tbl, opts)
	if err != nil || len(groups) == 0 {
		return tbl, err
	}
	carry, err := CarryOffsets(tbl.Metadata())
	if err != nil {
		return tbl, fmt.Errorf("iceberg: compaction of %v: %w", tbl.Identifier(), err)
	}
	start := time.Now()
	txn := tbl.NewTransaction()
	rewrite := txn.NewRewrite(iceberggo.Properties(carry))
	var (
		tried, done           int
		removed, added        int
		bytesBefore, bytesAft int64
	)
	for _, g := range groups {
		if tried > 0 && opts.Budget > 0 && time.Since(start) >= opts.Budget {
			break
		}
		tried++
		gr, err := executeGroup(ctx, tbl, g, opts.TargetFileSize) // maintain_pace.go
		if err != nil {
			return tbl, fmt.Errorf("iceberg: compaction of %v: %w", tbl.Identifier(), err)
		}
		if len(gr.OldDataFiles) == 0 && len(gr.NewDataFiles) == 0 {
			continue
		}
		rewrite.ApplyResult(gr)
		done++
		removed, added = removed+len(gr.OldDataFiles), added+len(gr.NewDataFiles)
		bytesBefore, bytesAft = bytesBefore+gr.BytesBefore, bytesAft+gr.BytesAfter
	}
	if done == 0 {
		return tbl, nil
	}
	if err := rewrite.Commit(ctx); err != nil {
		return tbl, fmt.Errorf("iceberg: compaction of %v: %w", tbl.Identifier(), err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return tbl, fmt.Errorf("iceberg: compaction of %v: commit: %w", tbl.Identifier(), err)
	}
	opts.Logger.Info("iceberg: compacted", "table", tbl.Identifier(),
		"groups", done, "groups_left", len(groups)-tried, "files_removed", removed, "files_added", added,
		"bytes_before", bytesBefore, "bytes_after", bytesAft, "took", time.Since(start))
	return out, nil
}

// planCompaction groups tbl's small files: per size class and table
// partition, bin-packed to the target size, at most maxGroupFactor times
// MinInputFiles files a group, smallest class first.
func planCompaction(ctx context.Context, tbl *table.Table, opts MaintainOptions) ([]table.CompactionTaskGroup, error) {
	small := min(opts.SmallFileSize, opts.TargetFileSize*3/4)
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = opts.TargetFileSize
	cfg.MinFileSizeBytes = small
	cfg.MaxFileSizeBytes = opts.TargetFileSize * 9 / 5
	cfg.MinInputFiles = uint(opts.MinInputFiles)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg: plan compaction of %v: %w", tbl.Identifier(), err)
	}
	tiers := map[int][]table.FileScanTask{}
	for _, t := range tasks {
		if n := t.File.FileSizeBytes(); n < small {
			k := sizeTier(n, opts.tierBase)
			tiers[k] = append(tiers[k], t)
		}
	}
	var groups []table.CompactionTaskGroup
	for _, k := range slices.Sorted(maps.Keys(tiers)) {
		plan, err := cfg.PlanCompaction(tiers[k])
		if err != nil {
			return nil, fmt.Errorf("iceberg: plan compaction of %v: %w", tbl.Identifier(), err)
		}
		for _, g := range plan.Groups {
			for _, c := range chunkTasks(g.Tasks, opts.MinInputFiles, maxGroupFactor*opts.MinInputFiles) {
				var size int64
				for _, t := range c {
					size += t.File.FileSizeBytes()
				}
				groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: c, TotalSizeBytes: size})
			}
		}
	}
	return groups, nil
}

// sizeTier is n's size class: class k holds files from base*4^(k-1) to
// base*4^k, class 0 those under base.
func sizeTier(n, base int64) int {
	k := 0
	for ; n >= base; n >>= 2 {
		k++
	}
	return k
}

// chunkTasks splits tasks into runs of at most most, none under least
// (the remainder joins the last run).
func chunkTasks(tasks []table.FileScanTask, least, most int) [][]table.FileScanTask {
	var out [][]table.FileScanTask
	for len(tasks) > 0 {
		n := min(most, len(tasks))
		if rest := len(tasks) - n; rest > 0 && rest < least {
			n = len(tasks)
		}
		out = append(out, tasks[:n])
		tasks = tasks[n:]
	}
	return out
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
