package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// High-watermark checkpoints, for cluster stores (Options.RequireRole)
// only. Without one a restarted partition's high watermark starts at its
// log end, which may hold records its leader never committed; a replica
// re-elected leader before its followers fetched would show them to
// consumers as committed. As Kafka's replication-offset-checkpoint, each
// shard writes its partitions' high watermarks every few seconds, and
// recovery starts each partition at the lower of its checkpoint and its
// log end. A checkpoint a few seconds old is lower than the truth, which
// is safe: the high watermark rises again with the followers' fetches.
//
// The files are <dir>/hw-checkpoint.<shard>: a version line (0), a count
// line, then "topic partition highWatermark" lines.

// hwCheckpointInterval is how often a shard writes its checkpoint, as
// Kafka's replica.high.watermark.checkpoint.interval.ms.
const hwCheckpointInterval = 5 * time.Second

const hwCheckpointPrefix = "hw-checkpoint."

func hwCheckpointPath(dir string, shard int) string {
	return filepath.Join(dir, hwCheckpointPrefix+strconv.Itoa(shard))
}

// checkpointHW writes the shard's high watermarks on the chore goroutine,
// when they changed since the last write.
func (s *shard) checkpointHW() {
	keys := make([]partKey, 0, len(s.parts))
	for k := range s.parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].id < keys[j].id
	})
	b := []byte("0\n")
	b = strconv.AppendInt(b, int64(len(keys)), 10)
	b = append(b, '\n')
	for _, k := range keys {
		b = append(b, k.topic...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(k.id), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, s.parts[k].hw, 10)
		b = append(b, '\n')
	}
	if bytes.Equal(b, s.lastHWCheckpoint) {
		return
	}
	s.lastHWCheckpoint = b
	path := hwCheckpointPath(s.opts.Dir, s.id)
	s.later(func() {
		if err := writeFileSynced(path, b); err != nil {
			// The next tick writes again; a restart meanwhile starts from
			// an older, lower checkpoint.
			s.logLimited("hw-checkpoint", "writing the high-watermark checkpoint", "path", path, "err", err)
		}
	})
}

var errHWCheckpoint = errors.New("corrupt high-watermark checkpoint")

// decodeHWCheckpoint parses one shard's checkpoint into into, keeping the
// highest value per partition.
func decodeHWCheckpoint(b []byte, into map[partKey]int64) error {
	bad := func(line int, why string) error { return fmt.Errorf("%w: line %d: %s", errHWCheckpoint, line, why) }
	if len(b) == 0 || b[len(b)-1] != '\n' {
		return bad(0, "does not end with a newline")
	}
	lines := strings.Split(string(b[:len(b)-1]), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return bad(1, "not version 0")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return bad(2, fmt.Sprintf("count %q for %d entries", lines[1], len(lines)-2))
	}
	for i, l := range lines[2:] {
		f := strings.Split(l, " ")
		if len(f) != 3 {
			return bad(i+3, fmt.Sprintf("%q is not \"topic partition offset\"", l))
		}
		id, err1 := strconv.ParseInt(f[1], 10, 32)
		hw, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || validName(f[0], int32(id)) != nil || hw < 0 {
			return bad(i+3, fmt.Sprintf("entry %q", l))
		}
		k := partKey{f[0], int32(id)}
		if v, ok := into[k]; !ok || hw > v {
			into[k] = hw
		}
	}
	return nil
}

// readHWCheckpoints reads every shard's checkpoint in dir. A partition may
// have moved shards since (the shard count changed), so it keeps the
// highest value found; files of shards the store no longer has are
// removed once read. An unreadable file is logged and skipped: its
// partitions start at their log end, as without checkpoints.
func readHWCheckpoints(opts *Options) map[partKey]int64 {
	out := map[partKey]int64{}
	entries, _ := os.ReadDir(opts.Dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, hwCheckpointPrefix) {
			continue
		}
		path := filepath.Join(opts.Dir, name)
		shard, err := strconv.Atoi(strings.TrimPrefix(name, hwCheckpointPrefix))
		if err != nil {
			_ = os.Remove(path) // a temporary file a crash left
			continue
		}
		b, err := os.ReadFile(path)
		if err == nil {
			err = decodeHWCheckpoint(b, out)
		}
		if err != nil {
			opts.Logger.Error("unreadable high-watermark checkpoint; its partitions start at their log end", "path", path, "err", err)
		}
		if shard >= opts.Shards {
			_ = os.Remove(path)
		}
	}
	return out
}
