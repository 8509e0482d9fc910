package tiertest

import (
	"strconv"
	"testing"
	"time"
)

// TestS3KillDuringUploads kills serve with SIGKILL while tierd is
// uploading (the bucket is slowed down so that uploads are always in
// flight), restarts it, and checks after each of three rounds that every
// record reads back from offset 0, that `tier verify` is clean and that
// `tier gc` finds no orphaned object.
func TestS3KillDuringUploads(t *testing.T) {
	real := skipWithout(t, "AEROSTREAM_TEST_S3_ENDPOINT")
	fp := newFaultProxy(t, real)
	p := s3Provider(t, fp.srv.URL)
	n := newNode(t, t.TempDir(), p.args, p.env)
	n.start()
	const topic = "crashy"
	const partitions = 4
	const segment = 1 << 20
	createTopic(t, n.kafka, topic, partitions, map[string]*string{
		"segment.bytes": ptr(strconv.Itoa(segment)), "local.retention.bytes": ptr(strconv.Itoa(segment)),
	})
	want := map[int32]*digest{}
	for round := 0; round < 3; round++ {
		fp.latency.Store(int64(20 * time.Millisecond))
		want = produceMore(t, n.kafka, topic, partitions, 32<<20, 4<<10, want)
		// Wait until uploads are under way, then kill.
		deadline := time.Now().Add(30 * time.Second)
		for n.metric("aerostream_tier_upload_backlog") <= 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		// Each round kills at a different depth into the uploads: the delay
		// picks the crash point, it does not wait for anything.
		time.Sleep(time.Duration(200+round*300) * time.Millisecond)
		backlog := n.metric("aerostream_tier_upload_backlog")
		n.kill()
		t.Logf("round %d: killed with %v tier jobs queued", round, backlog)
		fp.latency.Store(0)
		n.start()
		n.waitTiered(topic, segment, 5*time.Minute)
		readBack := consumeAll(t, n.kafka, topic, want, 5*time.Minute)
		sameDigests(t, want, readBack)
		n.checkBucket()
	}
	n.stop()
}
