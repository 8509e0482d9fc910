package controller

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// fsmWithTopics builds an FSM holding n topics of 3 partitions over three
// stores, a third of them with configs of their own.
func fsmWithTopics(b *testing.B, n int) *FSM {
	f := NewFSM(nil)
	for id := int32(1); id <= 3; id++ {
		registerStore(b, f, id)
	}
	const batch = 500
	for i := 0; i < n; i += batch {
		cmd := &cmdCreateTopics{}
		for j := i; j < min(i+batch, n); j++ {
			t := cmdNewTopic{Name: fmt.Sprintf("topic-%06d", j), ID: newTopicID(), Partitions: 3, ReplicationFactor: 1}
			if j%3 == 0 {
				t.Configs = map[string]string{"retention.ms": "3600000", "segment.bytes": "1048576"}
			}
			cmd.Topics = append(cmd.Topics, t)
		}
		if r := applyCmd(b, f, cmd); r.err != nil {
			b.Fatal(r.err)
		}
	}
	return f
}

// BenchmarkSnapshot10kTopics: Snapshot plus Persist (encoding) of 10,000
// topics.
func BenchmarkSnapshot10kTopics(b *testing.B) {
	f := fsmWithTopics(b, 10000)
	b.ResetTimer()
	var size int
	for i := 0; i < b.N; i++ {
		size = len(snapshotBytes(b, f))
	}
	b.ReportMetric(float64(size), "snapshot-bytes")
}

// BenchmarkRestore10kTopics: Restore of a 10,000-topic snapshot.
func BenchmarkRestore10kTopics(b *testing.B) {
	data := snapshotBytes(b, fsmWithTopics(b, 10000))
	g := NewFSM(nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			b.Fatal(err)
		}
	}
	if ts, _ := g.Topics(nil); len(ts) != 10000 {
		b.Fatalf("%d topics restored", len(ts))
	}
}

// BenchmarkStoreBounce10kTopics: one store of three goes down and comes
// back (two commands) with 10,000 topics of 3 partitions at replication
// factor 3: every partition changes ISR, a third change leader.
func BenchmarkStoreBounce10kTopics(b *testing.B) {
	f := NewFSM(nil)
	for id := int32(1); id <= 3; id++ {
		registerStore(b, f, id)
	}
	for i := 0; i < 10000; i += 500 {
		cmd := &cmdCreateTopics{}
		for j := i; j < i+500; j++ {
			cmd.Topics = append(cmd.Topics, cmdNewTopic{Name: fmt.Sprintf("topic-%06d", j), ID: newTopicID(), Partitions: 3, ReplicationFactor: 3})
		}
		if r := applyCmd(b, f, cmd); r.err != nil || r.items[0] != nil {
			b.Fatal(r.err, r.items)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		applyCmd(b, f, &cmdSetLiveness{Down: []int32{1}, NowMs: 1})
		applyCmd(b, f, &cmdSetLiveness{Up: []int32{1}, NowMs: 2})
	}
}
