package clustertest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// TestClusterDrain drains a store with `aerostream store drain` while
// producers write through both gateways and a consumer tails the topic.
// With RF=3 every replica of a 3-store cluster is already placed, so a
// fourth store joins first, as an operator replacing a node would do it.
// Once the drain command ends, the store must hold nothing (in the
// controller's metadata and on its disk); it is then stopped, the cluster
// keeps taking writes, and no acknowledged write is lost.
func TestClusterDrain(t *testing.T) {
	bin := gate(t)
	const (
		topic = "drain"
		parts = 6
	)
	c := newCluster(t, bin, append(append([]int32(nil), storeIDs...), 14), gatewayIDs)
	c.createTopic(topic, parts, 3, 2)

	// The store drained is the one leading partition 0: placement decides
	// which stores the topic lands on (the internal topics' replicas count
	// in its load), and this one holds both replicas and a leadership.
	drained := controller.NoLeader
	for _, tp := range c.mustMetadata().Topics {
		if tp.Name == topic && len(tp.Partitions) > 0 {
			drained = tp.Partitions[0].Leader
		}
	}
	before := holding(c.mustMetadata(), topic, drained)
	if len(before) == 0 {
		t.Fatalf("store %d holds no replica of %s before the drain: placement %v", drained, topic, placement(c.mustMetadata(), topic))
	}
	t.Logf("store %d holds %v before the drain; placement %s", drained, before, placement(c.mustMetadata(), topic))

	w := startWorkload(t, c, topic, parts, 2, 200)
	tl := startTailer(t, c, gatewayIDs[1], topic, parts)
	c.waitFor("the first acknowledged writes", 60*time.Second, func() (bool, string) {
		n := w.hist.acked.Load()
		return n >= 3000, strconv.FormatInt(n, 10) + " acked"
	})

	start := time.Now()
	out, err := c.cli(3*time.Minute, "store", "drain", strconv.Itoa(int(drained)), "--controller", c.ctlAddr)
	took := time.Since(start)
	t.Logf("aerostream store drain %d (%v):\n%s", drained, took.Round(time.Millisecond), strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if !strings.Contains(out, "is drained") {
		t.Errorf("the drain command ended without saying the store is drained")
	}

	md := c.mustMetadata()
	t.Logf("placement after the drain: %s", placement(md, topic))
	if left := holding(md, topic, drained); len(left) > 0 {
		t.Errorf("after the drain, store %d still holds %v; placement %v", drained, left, placement(md, topic))
	}
	for _, n := range md.Nodes {
		if n.ID == drained && !n.Draining {
			t.Errorf("store %d is not marked draining in the metadata", drained)
		}
	}
	// The store agent deletes the local copies once the reassignment
	// completes; wait for it, bounded.
	if msg := c.tryWait(30*time.Second, func() (bool, string) {
		dirs := partitionDirs(c.storeDir(drained), topic)
		return len(dirs) == 0, fmt.Sprintf("store %d's disk still holds %v", drained, dirs)
	}); msg != "" {
		t.Errorf("after the drain: %s", msg)
	}

	// Writes keep flowing, and keep flowing after the drained store stops.
	mark := w.hist.acked.Load()
	c.waitFor("writes acknowledged after the drain", 30*time.Second, func() (bool, string) {
		return w.hist.acked.Load() >= mark+200, "no writes acknowledged"
	})
	if err := c.stores[drained].stop(); err != nil {
		t.Errorf("the drained store did not stop cleanly: %v", err)
	}
	mark = w.hist.acked.Load()
	c.waitFor("writes acknowledged after the drained store stopped", 30*time.Second, func() (bool, string) {
		return w.hist.acked.Load() >= mark+200, "no writes acknowledged"
	})
	w.stop(t, 60*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, hw, err := offsets(ctx, c, gatewayIDs[0], topic)
	if err != nil {
		t.Fatal(err)
	}
	if msg := c.tryWait(60*time.Second, func() (bool, string) { return tl.caughtUp(hw) }); msg != "" {
		t.Errorf("the consumer running through the drain did not reach the high watermarks: %s", msg)
	}
	tl.mu.Lock()
	if len(tl.errs) > 0 {
		t.Logf("consumer during the drain saw: %s", strings.Join(tl.errs, "; "))
	}
	for _, e := range tl.errs {
		if strings.Contains(e, "offset") && strings.Contains(e, "after") {
			t.Errorf("the consumer running through the drain saw a gap: %s", e)
		}
	}
	tl.mu.Unlock()
	checkHistory(t, c, topic, w.hist.snapshot())
}

// holding lists the partitions of topic whose replicas, ISR, target or
// leader name the store.
func holding(md controller.MetadataResponse, topic string, store int32) []int32 {
	ti, _ := findTopic(md, topic)
	var out []int32
	for _, p := range ti.Partitions {
		if p.Leader == store || hasID(p.Replicas, store) || hasID(p.ISR, store) || hasID(p.TargetReplicas, store) {
			out = append(out, p.Partition)
		}
	}
	return out
}

func hasID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func placement(md controller.MetadataResponse, topic string) string {
	ti, _ := findTopic(md, topic)
	var parts []string
	for _, p := range ti.Partitions {
		parts = append(parts, fmt.Sprintf("p%d leader=%d replicas=%v isr=%v target=%v", p.Partition, p.Leader, p.Replicas, p.ISR, p.TargetReplicas))
	}
	return strings.Join(parts, "; ")
}

// partitionDirs lists the partition directories of topic in a store's data
// dir (logs/<topic>-<partition>).
func partitionDirs(dataDir, topic string) []string {
	entries, _ := os.ReadDir(dataDir + "/logs")
	re := regexp.MustCompile("^" + regexp.QuoteMeta(topic) + `-\d+$`)
	var out []string
	for _, e := range entries {
		if e.IsDir() && re.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}
