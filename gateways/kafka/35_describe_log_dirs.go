package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeLogDirs: v1-v4.
//
// Reports one log directory (Options.LogDir) holding every partition the
// stores have, with its size on local disk; a partition is never "future"
// and has no replica lag. A null topic list asks for everything. Total and
// usable bytes (v4) are -1: the gateway may not share a file system with
// the stores.
//
// Version notes: v2 flexible, v3 top-level error code, v4 total and usable
// bytes.

func init() { regKey(35, 1, 4, (*Gateway).handleDescribeLogDirs) }

func (g *Gateway) handleDescribeLogDirs(ctx context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = g.opts.LogDir
	dir.TotalBytes, dir.UsableBytes = -1, -1

	infos, err := g.backend.ListPartitions(ctx)
	if err != nil {
		dir.ErrorCode = errorCode(err)
		resp.Dirs = append(resp.Dirs, dir)
		return resp, nil
	}
	var want map[string]map[int32]bool
	if req.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, rt := range req.Topics {
			if want[rt.Topic] == nil {
				want[rt.Topic] = map[int32]bool{}
			}
			for _, p := range rt.Partitions {
				want[rt.Topic][p] = true
			}
		}
	}
	byTopic := map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition{}
	for _, in := range infos {
		if want != nil && !want[in.Topic][in.Partition] {
			continue
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = in.Partition, in.Size
		byTopic[in.Topic] = append(byTopic[in.Topic], p)
	}
	names := make([]string, 0, len(byTopic))
	for n := range byTopic {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := kmsg.NewDescribeLogDirsResponseDirTopic()
		t.Topic = n
		t.Partitions = byTopic[n]
		sort.Slice(t.Partitions, func(i, j int) bool { return t.Partitions[i].Partition < t.Partitions[j].Partition })
		dir.Topics = append(dir.Topics, t)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
