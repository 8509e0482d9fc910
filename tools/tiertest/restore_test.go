package tiertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
//
// A lives on in the bucket as a node lost right after its last uploads
// would: partition 1 has no manifest yet and partition 2's lacks its two
// newest segments. Restore must find those segments all the same.
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
	if err := os.Remove(filepath.Join(cold, topic, "1", "manifest.json")); err != nil {
		t.Fatal(err)
	}
	if err := dropNewest(filepath.Join(cold, topic, "2", "manifest.json"), 2); err != nil {
		t.Fatal(err)
	}

	b := mk()
	b.start()
	defer b.stop()
	out, err = b.tier("restore", "--topic", topic)
	// Unlisted: all of partition 1's segments and two of partition 2's.
	m := regexp.MustCompile(`restored 3 partitions, \d+ remote segments \((\d+) newer than their manifest\)`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("tier restore: %v\n%s\n%s", err, out, tail(b.logText(), 30))
	}
	if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Fatalf("tier restore took %d segments beyond their manifests, want at least 3:\n%s", n, out)
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

// dropNewest rewrites a manifest.json without its n newest segments, as the
// flusher had last written it before those uploads.
func dropNewest(path string, n int) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	segs, _ := m["segments"].([]any)
	if len(segs) <= n {
		return fmt.Errorf("%s lists %d segments; the test needs more than %d", path, len(segs), n)
	}
	m["segments"] = segs[:len(segs)-n]
	if body, err = json.Marshal(m); err != nil {
		return err
	}
	return os.WriteFile(path, body, 0o644)
}
