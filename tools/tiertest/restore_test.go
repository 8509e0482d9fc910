package tiertest

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLocalRestoreOnEmptyNode needs no server: the cold tier is a local
// directory shared by two nodes, as an NFS path would be. Node A writes a
// topic, offloads it with `tier offload --now` and stops; node B starts
// empty on the same cold tier, runs `tier restore`, and a Kafka consumer
// reads the topic's whole history from it. `tier rehydrate` then brings the
// newest remote segments back to B's disk.
func TestLocalRestoreOnEmptyNode(t *testing.T) {
	cold := filepath.Join(t.TempDir(), "cold")
	args := []string{"--tiered_storage.enabled", "--tiered_storage.provider", "local"}
	mk := func() *node {
		n := newNode(t, t.TempDir(), append(args, "--tiered_storage.local.root_path", cold), nil)
		return n
	}
	if err := mkdir(cold); err != nil {
		t.Fatal(err)
	}
	a := mk()
	a.start()
	const topic = "history"
	createTopic(t, a.kafka, topic, 3, map[string]*string{"segment.bytes": ptr(strconv.Itoa(512 << 10))})
	want := produce(t, a.kafka, topic, 3, 24<<20, 8<<10)
	out, err := a.tier("offload", "--now", "--topic", topic)
	if err != nil || !strings.Contains(out, "partitions sealed") {
		a.stop()
		t.Fatalf("tier offload: %v\n%s", err, out)
	}
	a.checkBucket()
	a.stop()

	b := mk()
	b.start()
	defer b.stop()
	out, err = b.tier("restore", "--topic", topic)
	if err != nil || !strings.Contains(out, "restored 3 partitions") {
		t.Fatalf("tier restore: %v\n%s\n%s", err, out, tail(b.logText(), 30))
	}
	got := consumeAll(t, b.kafka, topic, want, 2*time.Minute)
	sameDigests(t, want, got)
	out, err = b.tier("rehydrate", "--topic", topic, "--partition", "0", "--from", "0")
	if err != nil || !strings.Contains(out, "brought back") {
		t.Fatalf("tier rehydrate: %v\n%s", err, out)
	}
	local := 0
	for _, s := range b.segments(topic) {
		if s.Partition == 0 && s.State == "local+remote" {
			local++
		}
	}
	if local == 0 {
		t.Fatal("rehydrate brought no segment back to local disk")
	}
	sameDigests(t, want, consumeAll(t, b.kafka, topic, want, 2*time.Minute))
	b.checkBucket()
}
