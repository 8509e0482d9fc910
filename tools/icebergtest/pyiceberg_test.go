package icebergtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	namespace = "aerostream"
	// commitInterval is short so that the tests see commits in seconds.
	commitInterval = 500 * time.Millisecond
)

// icebergArgs are serve's flags for a node that translates Iceberg topics
// into warehouse (empty: the default, under the data dir).
func icebergArgs(warehouse string) []string {
	args := []string{"--iceberg.commit_interval_ms", fmt.Sprint(commitInterval.Milliseconds())}
	if warehouse != "" {
		args = append(args, "--iceberg.warehouse", warehouse)
	}
	return args
}

// minioWarehouse makes a bucket on the MinIO of testservers.sh and
// returns serve's flags and environment for a warehouse in it.
func minioWarehouse(t *testing.T) ([]string, []string) {
	endpoint := skipWithout(t, "AEROSTREAM_TEST_S3_ENDPOINT", "`make test-iceberg` starts MinIO (tierd/objstore/testservers.sh) and runs this test")
	access, secret := os.Getenv("AEROSTREAM_TEST_S3_ACCESS_KEY"), os.Getenv("AEROSTREAM_TEST_S3_SECRET_KEY")
	c, err := minio.New(strings.TrimPrefix(endpoint, "http://"), &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")})
	if err != nil {
		t.Fatal(err)
	}
	const bucket = "aerostream-icebergtest"
	ctx := context.Background()
	if ok, err := c.BucketExists(ctx, bucket); err != nil {
		t.Fatal(err)
	} else if !ok {
		if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wh := fmt.Sprintf("s3://%s/run-%d", bucket, time.Now().UnixNano())
	// An s3:// warehouse is reached with tiered_storage.s3's endpoint and
	// keys; the keys go in the environment, as production would set them.
	args := append(icebergArgs(wh), "--tiered_storage.s3.endpoint_url", endpoint,
		"--tiered_storage.s3.region", "us-east-1", "--tiered_storage.s3.force_path_style")
	env := []string{"AEROSTREAM_TIERED_STORAGE_S3_ACCESS_KEY_ID=" + access, "AEROSTREAM_TIERED_STORAGE_S3_SECRET_ACCESS_KEY=" + secret}
	return args, env
}

func TestPyicebergLocal(t *testing.T) {
	python := skipWithout(t, "ICEBERG_PYTHON", "`make test-iceberg` installs pyiceberg 0.12 and runs this test")
	exactlyOnce(t, python, newNode(t, icebergArgs(""), nil), "file://")
}

func TestPyicebergMinIO(t *testing.T) {
	python := skipWithout(t, "ICEBERG_PYTHON", "`make test-iceberg` installs pyiceberg 0.12 and runs this test")
	args, env := minioWarehouse(t)
	exactlyOnce(t, python, newNode(t, args, env), "s3://")
}

// exactlyOnce is the scenario: 20,000 keyed records from kcat in
// 3 partitions, kill -9 while they are being translated, restart, and the
// table read by pyiceberg equals the log; then 10,000 more, kill -9 again
// mid-translation, restart: exactly the log's 30,000 records, once each.
// Every data file's location must start with filePrefix: the warehouse is
// where the test put it.
func exactlyOnce(t *testing.T, python string, n *node, filePrefix string) {
	const topic = "orders"
	n.start()
	createTopic(t, n.kafka, topic, 3, map[string]string{"iceberg.enabled": "true"})

	lag := visibilityLag(t, n)

	kcatProduce(t, n.kafka, topic, "a", 20000)
	before, _ := n.tableOffsets(namespace, topic)
	n.kill()
	t.Logf("killed serve mid-translation at table offsets %v", before)
	n.start()
	logRows, end := readLog(t, n.kafka, topic)
	if len(logRows) != 20000 {
		t.Fatalf("the log holds %d records, want 20000", len(logRows))
	}
	n.waitTranslated(namespace, topic, end, 2*time.Minute)
	rows, tr := pyiceberg(t, python, n.catalogURI(), namespace, topic)
	sameRows(t, logRows, rows)
	if !slices.ContainsFunc(tr.Tables, func(id []string) bool { return len(id) == 2 && id[1] == topic }) {
		t.Errorf("pyiceberg's table list %v lacks %s", tr.Tables, topic)
	}
	t.Logf("20,000 rows read back exactly by pyiceberg; %s", fileSizes(tr))

	kcatProduce(t, n.kafka, topic, "b", 10000)
	before, _ = n.tableOffsets(namespace, topic)
	n.kill()
	t.Logf("killed serve mid-translation at table offsets %v", before)
	n.start()
	logRows, end = readLog(t, n.kafka, topic)
	if len(logRows) != 30000 {
		t.Fatalf("the log holds %d records, want 30000", len(logRows))
	}
	n.waitTranslated(namespace, topic, end, 2*time.Minute)
	rows, tr = pyiceberg(t, python, n.catalogURI(), namespace, topic)
	sameRows(t, logRows, rows)
	keys := map[string]bool{}
	for _, r := range rows {
		keys[r.key] = true
	}
	if len(keys) != 30000 || tr.Rows != 30000 {
		t.Errorf("%d distinct keys, %d rows; want 30000 of each", len(keys), tr.Rows)
	}
	for _, f := range tr.Files {
		if !strings.HasPrefix(f.Path, filePrefix) {
			t.Errorf("data file %s is not under %s", f.Path, filePrefix)
		}
	}
	t.Logf("30,000 rows exactly after two kill -9s; offsets %s; %s; visibility lag %s at a %v commit interval",
		tr.Offsets, fileSizes(tr), lag, commitInterval)
	n.stop()
}

// visibilityLag produces one record at a time and times how long each
// takes to show in the table's offsets: a figure, not an assertion.
func visibilityLag(t *testing.T, n *node) string {
	const topic = "lag"
	createTopic(t, n.kafka, topic, 1, map[string]string{"iceberg.enabled": "true"})
	var lags []time.Duration
	for i := range 5 {
		kcatProduce(t, n.kafka, topic, fmt.Sprint("lag", i), 1)
		lags = append(lags, n.waitTranslated(namespace, topic, map[int32]int64{0: int64(i + 1)}, time.Minute))
	}
	slices.Sort(lags)
	return fmt.Sprintf("min %v, median %v, max %v over %d records",
		lags[0].Round(time.Millisecond), lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond), len(lags))
}
