package tiertest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// volume is the bytes the big S3 test writes: 2 GiB unless
// AEROSTREAM_TIER_E2E_BYTES says otherwise (for a quick local run).
func volume(def int64) int64 {
	if s := os.Getenv("AEROSTREAM_TIER_E2E_BYTES"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return def
}

// roundTrip produces total bytes into 8 partitions with small segments and
// a small local retention, waits until every sealed segment is uploaded and
// evicted, then reads everything back from offset 0 and compares digests.
func roundTrip(t *testing.T, p provider, total int64, segmentBytes int64) {
	if total/8 < 3*segmentBytes {
		t.Fatalf("%d bytes over 8 partitions do not roll %d-byte segments enough to tier anything", total, segmentBytes)
	}
	dir := t.TempDir()
	n := newNode(t, dir, p.args, p.env)
	n.start()
	defer n.stop()
	const topic = "tiered"
	const partitions = 8
	createTopic(t, n.kafka, topic, partitions, map[string]*string{
		"segment.bytes":         ptr(strconv.FormatInt(segmentBytes, 10)),
		"local.retention.bytes": ptr(strconv.FormatInt(segmentBytes, 10)),
		"retention.bytes":       ptr("-1"),
		"retention.ms":          ptr("-1"),
	})
	start := time.Now()
	want := produce(t, n.kafka, topic, partitions, total, 16<<10)
	produced := time.Since(start)
	segs := n.waitTiered(topic, segmentBytes, 10*time.Minute)
	tiered := time.Since(start)
	remote := 0
	for _, s := range segs {
		if s.State == "remote" {
			remote++
		}
	}
	start = time.Now()
	got := consumeAll(t, n.kafka, topic, want, 10*time.Minute)
	sameDigests(t, want, got)
	t.Logf("%s: %d MiB in %d partitions; produce %v, all sealed segments tiered and evicted after %v (%d remote segments); read back from offset 0 in %v (%.0f MiB/s)",
		p.name, total>>20, partitions, produced.Round(time.Millisecond), tiered.Round(time.Millisecond), remote,
		time.Since(start).Round(time.Millisecond), float64(total)/(1<<20)/time.Since(start).Seconds())
	n.checkBucket()
}

func TestS3RoundTrip(t *testing.T) {
	roundTrip(t, s3Provider(t, ""), volume(2<<30), 16<<20)
}

func TestGCSRoundTrip(t *testing.T) {
	roundTrip(t, gcsProvider(t), volume(2<<30)/16, 4<<20)
}

func TestAzureRoundTrip(t *testing.T) {
	roundTrip(t, azureProvider(t), volume(2<<30)/16, 4<<20)
}
