//go:build measure

package cli_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// Figures for the controller, on loopback, with production timings
// (raft_timeout_ms = 1000): `make measure-controller`. They print; they do
// not assert speed.

func percentile(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// TestMeasureTopicCreateLatency: one topic (3 partitions) per CreateTopics
// through the client API of a three-process cluster, one at a time.
func TestMeasureTopicCreateLatency(t *testing.T) {
	nodes := startCtlCluster(t, 3)
	cl := controller.NewClient(addrs(nodes), controller.ClientOptions{})
	defer cl.Close()
	createTopics(t, cl, "warmup") // finds the leader
	const n = 1000
	lat := make([]time.Duration, 0, n)
	ctx := context.Background()
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := cl.CreateTopics(ctx, controller.CreateTopicsRequest{Topics: []controller.NewTopic{{Name: fmt.Sprintf("lat-%04d", i), Partitions: 3, ReplicationFactor: 1}}})
		if err != nil || resp.Topics[0].Err() != nil {
			t.Fatal(err, resp)
		}
		lat = append(lat, time.Since(start))
	}
	fmt.Printf("MEASURE topic-create latency, 3 controller processes on loopback, %d sequential creates: p50 %v p99 %v max %v\n",
		n, percentile(lat, 0.50).Round(time.Microsecond), percentile(lat, 0.99).Round(time.Microsecond), percentile(lat, 1).Round(time.Microsecond))
}

// TestMeasureElection: kill -9 the leader, time until a survivor leads;
// restart the killed node and wait for it to catch up; ten times.
func TestMeasureElection(t *testing.T) {
	nodes := startCtlCluster(t, 3)
	cl := controller.NewClient(addrs(nodes), controller.ClientOptions{Timeout: 60 * time.Second})
	defer cl.Close()
	var took []time.Duration
	for run := 0; run < 10; run++ {
		createTopics(t, cl, fmt.Sprintf("run-%d", run))
		old := leaderOf(t, nodes)
		killed := time.Now()
		old.kill9(t)
		_, d := awaitNewLeader(t, nodes, old, killed)
		took = append(took, d)
		createTopics(t, cl, fmt.Sprintf("run-%d-after", run))
		info, err := cl.ClusterInfo(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		old.start(t)
		waitCond(t, 60*time.Second, "restarted node catches up", func() bool {
			li, err := localInfo(old.addr)
			return err == nil && li.State == "Follower" && li.Version >= info.Version
		})
		t.Logf("run %d: killed leader %d, new leader after %v", run, old.id, d.Round(time.Millisecond))
	}
	fmt.Printf("MEASURE time to elect a new leader after kill -9 of the leader (3 processes, raft_timeout_ms=1000), 10 runs: median %v min %v max %v\n",
		percentile(took, 0.5).Round(time.Millisecond), percentile(took, 0).Round(time.Millisecond), percentile(took, 1).Round(time.Millisecond))
}
