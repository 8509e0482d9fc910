//go:build controllerproc

package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// TestControllerProcessFailover runs three `aerostream controller`
// processes on loopback, creates topics, kills the leader with SIGKILL,
// and checks that a new leader is elected, the metadata survived, writes go
// on, and the old leader catches up after a restart.
func TestControllerProcessFailover(t *testing.T) {
	nodes := startCtlCluster(t, 3)
	cl := controller.NewClient(addrs(nodes), controller.ClientOptions{Timeout: 60 * time.Second})
	defer cl.Close()
	var first []string
	for i := 0; i < 10; i++ {
		first = append(first, fmt.Sprintf("before-%d", i))
	}
	createTopics(t, cl, first...)

	old := leaderOf(t, nodes)
	killed := time.Now()
	old.kill9(t)
	nl, took := awaitNewLeader(t, nodes, old, killed)
	t.Logf("killed leader %d; node %d leads after %v", old.id, nl.id, took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("new leader after %v, want within a few seconds", took)
	}

	// Metadata survived, and writes go on.
	ctx := context.Background()
	md, err := cl.Metadata(ctx, controller.MetadataRequest{Topics: first})
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Missing) != 0 || len(md.Topics) != 10 {
		t.Fatalf("after failover: %d topics, missing %v", len(md.Topics), md.Missing)
	}
	createTopics(t, cl, "after-1", "after-2")
	if _, err := cl.DeleteTopics(ctx, controller.DeleteTopicsRequest{Topics: []controller.TopicRef{{Name: "before-0"}}}); err != nil {
		t.Fatal(err)
	}
	leaderInfo, err := cl.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// The old leader restarts with the same command line (a bootstrap or
	// join flag is ignored once there is state) and catches up.
	old.start(t)
	waitCond(t, 60*time.Second, "restarted node catches up", func() bool {
		info, err := localInfo(old.addr)
		return err == nil && info.State == "Follower" && info.Version >= leaderInfo.Version
	})
	local, err := localMetadata(old.addr)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tp := range local.Topics {
		names[tp.Name] = true
	}
	if len(names) != 11 || !names["after-2"] || names["before-0"] {
		t.Errorf("restarted node's topics: %v", names)
	}
	// And the three go on together.
	createTopics(t, cl, "after-3")
	for _, nd := range nodes {
		waitCond(t, 30*time.Second, fmt.Sprintf("node %d has after-3", nd.id), func() bool {
			md, err := localMetadata(nd.addr)
			if err != nil {
				return false
			}
			for _, tp := range md.Topics {
				if tp.Name == "after-3" {
					return true
				}
			}
			return false
		})
	}
}
