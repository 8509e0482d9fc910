package tiertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func minioAdmin(t *testing.T) *minio.Client {
	t.Helper()
	skipWithout(t, "AEROSTREAM_TEST_S3_ENDPOINT")
	c, err := dialMinio()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dialMinio connects to the test MinIO with its root credentials, from the
// environment testservers.sh writes.
func dialMinio() (*minio.Client, error) {
	return minio.New(strings.TrimPrefix(os.Getenv("AEROSTREAM_TEST_S3_ENDPOINT"), "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(os.Getenv("AEROSTREAM_TEST_S3_ACCESS_KEY"), os.Getenv("AEROSTREAM_TEST_S3_SECRET_KEY"), ""),
		// A PUT with DisableContentSha256 then goes as the node sends it:
		// unsigned, with a CRC32C trailer (the measure's replay control).
		TrailingHeaders: true})
}

// setArg replaces the value after flag in args.
func setArg(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i := range out {
		if out[i] == flag && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}

// waitUploadFailed waits until the node logs an upload that reached the
// bucket and failed, so that a test checking that nothing was uploaded
// checks after an attempt, not after a guessed delay.
func (n *node) waitUploadFailed(timeout time.Duration) {
	n.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		log := n.logText()
		if strings.Contains(log, "tier job failed") || strings.Contains(log, "object store operation failed") {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("after %v no failed upload is logged:\n%s", timeout, tail(log, 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestS3MissingBucketThenCreated: serve starts although its bucket does
// not exist, says so, and produce works; once the bucket is created,
// uploads catch up and nothing is lost.
func TestS3MissingBucketThenCreated(t *testing.T) {
	mc := minioAdmin(t)
	p := s3Provider(t, "")
	bucket := fmt.Sprintf("missing-%d", time.Now().UnixNano())
	args := append(setArg(p.args, "--tiered_storage.s3.bucket", bucket), "--tiered_storage.rescan_interval_ms", "500")
	n := newNode(t, t.TempDir(), args, p.env)
	n.start()
	defer n.stop()
	if !strings.Contains(n.logText(), "bucket is unusable") || !strings.Contains(n.logText(), bucket) {
		t.Fatalf("the log does not report the missing bucket by name:\n%s", n.logText())
	}
	const topic = "nobucket"
	createTopic(t, n.kafka, topic, 2, map[string]*string{"segment.bytes": ptr("262144"), "local.retention.bytes": ptr("262144")})
	want := produce(t, n.kafka, topic, 2, 4<<20, 4<<10)
	n.waitUploadFailed(time.Minute)
	for _, s := range n.segments(topic) {
		if s.ObjectKey != "" {
			t.Fatalf("segment %d uploaded to a bucket that does not exist", s.BaseOffset)
		}
	}
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	n.waitTiered(topic, 262144, 2*time.Minute)
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, time.Minute))
	n.checkBucket()
}

// TestS3WrongCredentials: serve starts with a wrong secret, reports it,
// and produce and consume work from local disk; nothing is uploaded.
func TestS3WrongCredentials(t *testing.T) {
	p := s3Provider(t, "")
	env := []string{"AWS_ACCESS_KEY_ID=" + os.Getenv("AEROSTREAM_TEST_S3_ACCESS_KEY"), "AWS_SECRET_ACCESS_KEY=not-the-secret"}
	n := newNode(t, t.TempDir(), append(p.args, "--tiered_storage.rescan_interval_ms", "500"), env)
	n.start()
	defer n.stop()
	log := n.logText()
	if !strings.Contains(log, "bucket is unusable") {
		t.Fatalf("the log does not report the credentials problem:\n%s", log)
	}
	if strings.Contains(log, "not-the-secret") {
		t.Fatal("the secret appears in the log")
	}
	const topic = "badcreds"
	createTopic(t, n.kafka, topic, 1, map[string]*string{"segment.bytes": ptr("262144"), "local.retention.bytes": ptr("262144")})
	want := produce(t, n.kafka, topic, 1, 2<<20, 4<<10)
	sameDigests(t, want, consumeAll(t, n.kafka, topic, want, time.Minute))
	n.waitUploadFailed(time.Minute)
	for _, s := range n.segments(topic) {
		if s.ObjectKey != "" || s.State == "remote" {
			t.Fatalf("segment %d is %s with wrong credentials", s.BaseOffset, s.State)
		}
	}
	if !strings.Contains(n.logText(), "tier job failed") {
		t.Fatalf("failed uploads are not logged:\n%s", tail(n.logText(), 20))
	}
}

// TestS3DamagedObjects deletes one remote segment behind the store's back
// and corrupts another (same size, one byte flipped). Reading those
// partitions from offset 0 fails with KAFKA_STORAGE_ERROR instead of
// serving damaged data; the other partitions and produce are unaffected;
// `tier verify` names both objects.
func TestS3DamagedObjects(t *testing.T) {
	mc := minioAdmin(t)
	p := s3Provider(t, "")
	var prefix string
	for i, a := range p.args {
		if a == "--tiered_storage.s3.prefix" {
			prefix = p.args[i+1]
		}
	}
	n := newNode(t, t.TempDir(), p.args, p.env)
	n.start()
	defer n.stop()
	const topic = "damaged"
	createTopic(t, n.kafka, topic, 3, map[string]*string{"segment.bytes": ptr("262144"), "local.retention.bytes": ptr("262144")})
	want := produce(t, n.kafka, topic, 3, 6<<20, 4<<10)
	segs := n.waitTiered(topic, 262144, 2*time.Minute)
	var firstRemote = map[int32]segView{}
	for _, s := range segs {
		if _, ok := firstRemote[s.Partition]; !ok && s.State == "remote" {
			firstRemote[s.Partition] = s
		}
	}
	ctx := context.Background()
	// Partition 0: the object disappears.
	if err := mc.RemoveObject(ctx, testBucket, prefix+"/"+firstRemote[0].ObjectKey, minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// Partition 1: one byte flipped in the middle of the object.
	key1 := prefix + "/" + firstRemote[1].ObjectKey
	obj, err := mc.GetObject(ctx, testBucket, key1, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)/2] ^= 0xff
	if _, err := mc.PutObject(ctx, testBucket, key1, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, part := range []int32{0, 1} {
		code := fetchError(t, n.kafka, topic, part)
		if !errors.Is(code, kerr.KafkaStorageError) {
			t.Errorf("partition %d: reading the damaged segment gave %v, want KAFKA_STORAGE_ERROR", part, code)
		}
	}
	// Partition 2 reads back whole, and produce still works.
	sameDigests(t, map[int32]*digest{2: want[2]}, consumeAll(t, n.kafka, topic, map[int32]*digest{2: want[2]}, time.Minute))
	produce(t, n.kafka, topic, 3, 1<<20, 4<<10)
	out, err := n.tier("verify")
	if err == nil {
		t.Fatalf("tier verify passed over a deleted and a corrupted object:\n%s", out)
	}
	for _, k := range []string{firstRemote[0].ObjectKey, firstRemote[1].ObjectKey} {
		if !strings.Contains(out, k) {
			t.Errorf("tier verify does not name %s:\n%s", k, out)
		}
	}
	if !strings.Contains(n.logText(), firstRemote[0].ObjectKey) {
		t.Errorf("the log does not name the missing object %s", firstRemote[0].ObjectKey)
	}
}

// fetchError sends one Fetch for a partition at offset 0, as a consumer
// starting from the beginning would, and returns the partition's error
// code (nil when records came back). A raw request is used because kgo
// retries storage errors quietly instead of surfacing them.
func fetchError(t *testing.T, addr, topic string, p int32) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = md.Topics[topic].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		t.Fatalf("fetch request: %v", err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response has %d topics", len(fr.Topics))
	}
	part := fr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
		if len(part.RecordBatches) > 0 {
			t.Fatalf("partition %d: error %v with %d bytes of records", p, err, len(part.RecordBatches))
		}
		return err
	}
	return nil
}
