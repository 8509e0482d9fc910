package tierd

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/topicconfig"
)

// TestLocalRetentionKafkaValues: the local retention a topic sets, read as
// a store reads it from the controller, means what it means in Kafka. 0
// (ms or bytes) removes a sealed segment's local copy once the segment is
// uploaded, without waiting for a retention check; -2 ("as retention.*",
// the default) keeps it while retention keeps it, here forever.
func TestLocalRetentionKafkaValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     map[string]string
		evicted bool
	}{
		{"ms=0", map[string]string{topicconfig.LocalRetentionMs: "0"}, true},
		{"bytes=0", map[string]string{topicconfig.LocalRetentionBytes: "0"}, true},
		{"ms=-2", map[string]string{topicconfig.LocalRetentionMs: "-2"}, false},
		{"default", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := startNode(t, dir, objstore.NewMemBucket())
			defer n.stop()
			ctx := context.Background()

			cfg := map[string]string{topicconfig.SegmentBytes: "32768", topicconfig.RetentionMs: "-1", topicconfig.RetentionBytes: "-1"}
			for k, v := range tc.cfg {
				cfg[k] = v
			}
			cfg, err := topicconfig.Validate(cfg, false) // as the controller does
			if err != nil {
				t.Fatal(err)
			}
			pc, err := logstore.PartitionConfigOf(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.store.CreatePartition(ctx, "lr", 0, pc); err != nil {
				t.Fatal(err)
			}
			var sent [][]byte
			for i := 0; i < 100; i++ {
				batch := logtest.Filler(int64(i), 4, 1000, byte(i))
				sent = append(sent, append([]byte(nil), batch...))
				if _, err := n.store.Produce(ctx, &logstore.ProduceRequest{Topic: "lr", Partition: 0, Records: batch}); err != nil {
					t.Fatal(err)
				}
			}
			drain(t, n.tier)
			// The evictions the uploads caused have run their chores.
			if err := n.store.Settle(ctx, "lr", 0); err != nil {
				t.Fatal(err)
			}

			recs, err := n.store.Segments(ctx, "lr", 0)
			if err != nil {
				t.Fatal(err)
			}
			states := map[catalog.State]int{}
			for _, r := range recs {
				states[r.State]++
			}
			sealed := len(recs) - 1
			if sealed < 3 {
				t.Fatalf("only %d sealed segments: %v", sealed, states)
			}
			logs, _ := filepath.Glob(filepath.Join(dir, "logs", "lr-0", "*.log"))
			if tc.evicted {
				if states[catalog.StateRemote] != sealed || len(logs) != 1 {
					t.Fatalf("want every sealed segment remote only and 1 local log: states %v, local logs %v", states, logs)
				}
			} else {
				// A retention check evicts nothing either.
				if err := n.store.RunRetention(ctx); err != nil {
					t.Fatal(err)
				}
				recs, _ = n.store.Segments(ctx, "lr", 0)
				states = map[catalog.State]int{}
				for _, r := range recs {
					states[r.State]++
				}
				logs, _ = filepath.Glob(filepath.Join(dir, "logs", "lr-0", "*.log"))
				if states[catalog.StateLocalRemote] != sealed || len(logs) != len(recs) {
					t.Fatalf("want every sealed segment local and uploaded: states %v, local logs %d of %d", states, len(logs), len(recs))
				}
			}
			got := readAllBatches(t, n.store, "lr", 0, 0)
			if len(got) != len(sent) {
				t.Fatalf("read %d batches, sent %d", len(got), len(sent))
			}
			for i := range got {
				if !bytes.Equal(got[i][12:], sent[i][12:]) {
					t.Fatalf("batch %d differs", i)
				}
			}
		})
	}
}
