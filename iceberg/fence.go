package iceberg

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// Snapshot summary properties that fence committers: every snapshot
// AeroStream commits says under which leadership of the topic's partition
// 0 it was committed (its leader epoch, the node leading it, the topic's
// id). A committer refuses to commit on a table whose current snapshot
// was committed under a newer leadership of the same topic, so that once
// the new leader has committed, a deposed one that has not yet learned it
// lost partition 0 cannot commit again: the table's history has exactly
// one committer per leader epoch, in epoch order.
const (
	SummaryLeaderEpoch = "aerostream.leader-epoch"
	SummaryCommitter   = "aerostream.committer"
	SummaryTopicID     = "aerostream.topic-id"
)

// Fence is the leadership a snapshot was committed under.
type Fence struct {
	// Epoch is the leader epoch of the topic's partition 0.
	Epoch int32
	// Node is the node that committed (the partition's leader).
	Node int32
	// TopicID tells a topic from a deleted one of the same name, whose
	// epochs started again at 0; empty when unknown.
	TopicID string
}

// props are the summary properties that carry f.
func (f Fence) props() map[string]string {
	p := map[string]string{
		SummaryLeaderEpoch: strconv.FormatInt(int64(f.Epoch), 10),
		SummaryCommitter:   strconv.FormatInt(int64(f.Node), 10),
	}
	if f.TopicID != "" {
		p[SummaryTopicID] = f.TopicID
	}
	return p
}

// Fences reports whether a table last committed under f refuses a commit
// under mine: a newer leadership of the same topic.
func (f Fence) Fences(mine Fence) bool { return f.TopicID == mine.TopicID && f.Epoch > mine.Epoch }

func (f Fence) String() string {
	return fmt.Sprintf("leader epoch %d of partition 0, node %d", f.Epoch, f.Node)
}

// SnapshotFence reads the fence of snap's summary; ok is false when the
// snapshot carries none (committed before fencing, or by another tool).
func SnapshotFence(snap *table.Snapshot) (Fence, bool) {
	if snap == nil || snap.Summary == nil {
		return Fence{}, false
	}
	props := snap.Summary.Properties
	epoch, err1 := strconv.ParseInt(props[SummaryLeaderEpoch], 10, 32)
	node, err2 := strconv.ParseInt(props[SummaryCommitter], 10, 32)
	if err1 != nil || err2 != nil {
		return Fence{}, false
	}
	return Fence{Epoch: int32(epoch), Node: int32(node), TopicID: props[SummaryTopicID]}, true
}

// TableFence is the fence of meta's current snapshot, walking back
// through its parents as TableOffsets does.
func TableFence(meta table.Metadata) (Fence, bool) {
	seen := 0
	for snap := meta.CurrentSnapshot(); snap != nil && seen < 10000; seen++ {
		if f, ok := SnapshotFence(snap); ok {
			return f, true
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return Fence{}, false
}

// fence is the leadership this committer commits under, as its node sees
// it now.
func (c *committer) fence() Fence {
	st := c.run.state()
	return Fence{Epoch: st.LeaderEpoch, Node: c.m.opts.NodeID, TopicID: st.TopicID}
}

// fenced refuses to go on with tbl when a newer leadership of partition 0
// has committed to it: this node was deposed and has not learned it yet
// (the Manager stops it once it does).
func (c *committer) fenced(tbl *table.Table) error {
	mine := c.fence()
	if f, ok := TableFence(tbl.Metadata()); ok && f.Fences(mine) {
		return fmt.Errorf("%w: table %v was committed under %v, this node has %v", ErrFenced, tbl.Identifier(), f, mine)
	}
	return nil
}
