package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// The leader-epoch cache: for each leader epoch the partition's log has
// held, the offset its first record took. A follower that returns after a
// leader change asks its new leader where its latest epoch ends there
// (OffsetForLeaderEpoch) and truncates what diverged, as Kafka does
// (KIP-101, KIP-279).
//
// The cache is kept in the partition directory as leader-epoch-checkpoint,
// in Kafka's text format: a version line (0), a count line, then one
// "epoch startOffset" line per entry. It is written whole on every change,
// to a temporary file that is synced and renamed over the old one. A new
// epoch's write runs on the chore goroutine, off the produce path; a crash
// before it leaves the log holding batches of an epoch the file lacks,
// which recovery adds back from the batches' own epoch field while it
// rebuilds the producer state (rebuildProducers reads those headers).

const (
	epochCheckpointName    = "leader-epoch-checkpoint"
	epochCheckpointVersion = 0
)

// epochEntry is one leader epoch and the offset of its first record.
type epochEntry struct {
	epoch int32
	start int64
}

func epochCheckpointPath(dir string) string { return filepath.Join(dir, epochCheckpointName) }

// latestEpoch is the newest epoch in the cache.
func (p *partition) latestEpoch() (int32, bool) {
	if len(p.epochs) == 0 {
		return -1, false
	}
	return p.epochs[len(p.epochs)-1].epoch, true
}

// startEpoch records that epoch begins at start, if it is newer than every
// epoch in the cache, and saves the cache.
func (s *shard) startEpoch(p *partition, epoch int32, start int64) {
	if e, ok := p.latestEpoch(); ok && e >= epoch {
		return
	}
	p.epochs = append(p.epochs, epochEntry{epoch: epoch, start: start})
	s.saveEpochsLater(p)
}

// saveEpochsLater writes the cache as it is now on the chore goroutine.
func (s *shard) saveEpochsLater(p *partition) {
	path, data := epochCheckpointPath(p.dir), encodeEpochs(p.epochs)
	s.later(func() {
		if err := writeFileSynced(path, data); err != nil {
			// Recovery rebuilds what the log holds from its batches.
			s.logLimited("epoch-checkpoint", "writing the leader-epoch checkpoint", "path", path, "err", err)
		}
	})
}

// endOfEpoch answers OffsetForLeaderEpoch: the largest epoch at or below
// epoch, and the start of the next one, or the log end for the latest.
func (p *partition) endOfEpoch(epoch int32) EpochEnd {
	for i := len(p.epochs) - 1; i >= 0; i-- {
		if p.epochs[i].epoch > epoch {
			continue
		}
		end := p.leo()
		if i+1 < len(p.epochs) {
			end = p.epochs[i+1].start
		}
		return EpochEnd{LeaderEpoch: p.epochs[i].epoch, EndOffset: end}
	}
	return EpochEnd{LeaderEpoch: -1, EndOffset: -1}
}

// truncateEpochs drops the entries of epochs that begin at or after end:
// no record of theirs is left.
func (p *partition) truncateEpochs(end int64) bool {
	n := len(p.epochs)
	for n > 0 && p.epochs[n-1].start >= end {
		n--
	}
	if n == len(p.epochs) {
		return false
	}
	p.epochs = p.epochs[:n]
	return true
}

// noteRecoveredEpoch adds a batch's epoch found by recovery when the cache
// lacks it (its checkpoint write was lost to a crash). Without a cache, an
// epoch of 0 is what every batch of a partition that never had a role
// carries, so it starts none, unless the store is a cluster's
// (Options.RequireRole), where every log is replicated and 0 is the first
// leader's epoch.
func (p *partition) noteRecoveredEpoch(h *BatchHeader, replicated bool) bool {
	e, ok := p.latestEpoch()
	if ok && h.LeaderEpoch > e || !ok && (h.LeaderEpoch > 0 || replicated && h.LeaderEpoch == 0) {
		p.epochs = append(p.epochs, epochEntry{epoch: h.LeaderEpoch, start: h.BaseOffset})
		return true
	}
	return false
}

// encodeEpochs renders the checkpoint.
func encodeEpochs(entries []epochEntry) []byte {
	b := make([]byte, 0, 8+len(entries)*16)
	b = strconv.AppendInt(b, epochCheckpointVersion, 10)
	b = append(b, '\n')
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.start, 10)
		b = append(b, '\n')
	}
	return b
}

// errEpochCheckpoint is the reason a checkpoint could not be read.
var errEpochCheckpoint = errors.New("corrupt leader-epoch checkpoint")

// decodeEpochs parses a checkpoint. It accepts only what encodeEpochs
// writes: the version, a count matching the lines, epochs strictly
// increasing and start offsets non-negative and never decreasing.
func decodeEpochs(b []byte) ([]epochEntry, error) {
	bad := func(line int, why string) ([]epochEntry, error) {
		return nil, fmt.Errorf("%w: line %d: %s", errEpochCheckpoint, line, why)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return bad(0, "does not end with a newline")
	}
	lines := bytes.Split(b[:len(b)-1], []byte{'\n'})
	if len(lines) < 2 {
		return bad(len(lines), "too short")
	}
	v, err := strconv.ParseInt(string(lines[0]), 10, 32)
	if err != nil || v != epochCheckpointVersion {
		return bad(1, fmt.Sprintf("version %q, want %d", lines[0], epochCheckpointVersion))
	}
	n, err := strconv.ParseInt(string(lines[1]), 10, 32)
	if err != nil || n < 0 || n != int64(len(lines)-2) {
		return bad(2, fmt.Sprintf("count %q for %d entries", lines[1], len(lines)-2))
	}
	out := make([]epochEntry, 0, n)
	for i, l := range lines[2:] {
		f := bytes.Fields(l)
		if len(f) != 2 || len(l) != len(f[0])+1+len(f[1]) {
			return bad(i+3, fmt.Sprintf("entry %q is not \"epoch offset\"", l))
		}
		e, err1 := strconv.ParseInt(string(f[0]), 10, 32)
		s, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err1 != nil || err2 != nil || e < 0 || s < 0 {
			return bad(i+3, fmt.Sprintf("entry %q", l))
		}
		if k := len(out); k > 0 && (int32(e) <= out[k-1].epoch || s < out[k-1].start) {
			return bad(i+3, fmt.Sprintf("entry %q does not follow epoch %d at %d", l, out[k-1].epoch, out[k-1].start))
		}
		out = append(out, epochEntry{epoch: int32(e), start: s})
	}
	return out, nil
}

// loadEpochs reads the partition's checkpoint at recovery and drops the
// entries past the log end. A checkpoint that cannot be parsed is
// reported, naming the file, and the cache is rebuilt from the epochs the
// log's batches carry: the partition stays available, and what it loses is
// at most the start of an epoch that has no record left.
func (p *partition) loadEpochs(s *shard) error {
	path := epochCheckpointPath(p.dir)
	_ = os.Remove(path + ".tmp")
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	}
	entries, err := decodeEpochs(b)
	if err != nil {
		s.opts.Logger.Error("unreadable leader-epoch checkpoint; rebuilding it from the log", "path", path, "err", err)
		p.epochs = nil
		p.epochsFromLog(s.opts.RequireRole)
		return writeFileSynced(path, encodeEpochs(p.epochs))
	}
	p.epochs = entries
	if leo := p.leo(); p.truncateEpochs(leo + 1) {
		s.opts.Logger.Info("leader-epoch checkpoint had epochs past the log end; dropped", "path", path, "log_end", leo)
		return writeFileSynced(path, encodeEpochs(p.epochs))
	}
	return nil
}

// epochsFromLog rebuilds the cache from the headers of every local batch.
func (p *partition) epochsFromLog(replicated bool) {
	scratch := make([]byte, BatchHeaderSize)
	for _, seg := range p.segs {
		for pos := int64(0); pos < seg.size; {
			h, err := seg.readHeader(pos, scratch)
			if err != nil {
				break
			}
			p.noteRecoveredEpoch(&h, replicated)
			pos += int64(h.Length)
		}
	}
}

// writeFileSynced replaces path with data atomically: a temporary file,
// synced, renamed over path, then the directory synced so that the rename
// survives a crash.
func writeFileSynced(path string, data []byte) error {
	if err := writeSnapshot(path, data); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
