package icebergtest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestSpark: Spark (pyspark with iceberg-spark-runtime) reads a topic's
// table through the built-in REST catalog, given nothing but its URI: the
// count, and GROUP BY aerostream.partition equal to the log's partition
// sizes, with no (partition, offset) twice. `make test-iceberg-spark`.
func TestSpark(t *testing.T) {
	python := skipWithout(t, "ICEBERG_SPARK_PYTHON", "`make test-iceberg-spark` installs pyspark and iceberg-spark-runtime and runs this test")
	skipWithout(t, "ICEBERG_SPARK_JARS", "`make test-iceberg-spark` sets it to the iceberg-spark-runtime jar")
	const topic = "orders"
	n := newNode(t, icebergArgs(""), nil)
	n.start()
	defer n.stop()
	createTopic(t, n.kafka, topic, 3, map[string]string{"iceberg.enabled": "true"})
	kcatProduce(t, n.kafka, topic, "a", 20000)
	logRows, end := readLog(t, n.kafka, topic)
	n.waitTranslated(namespace, topic, end, 2*time.Minute)

	start := time.Now()
	cmd := exec.Command(python, "spark_read.py", n.catalogURI(), namespace, topic)
	cmd.Env = os.Environ()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spark_read.py: %v\n%s", err, tail(stderr.String(), 60))
	}
	var got struct {
		Count       int64            `json:"count"`
		ByPartition map[string]int64 `json:"by_partition"`
		Distinct    int64            `json:"distinct"`
		Tables      []string         `json:"tables"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("spark_read.py output %q: %v", out, err)
	}
	want := map[string]int64{}
	for _, r := range logRows {
		want[strconv.Itoa(int(r.p))]++
	}
	if got.Count != int64(len(logRows)) || got.Distinct != got.Count {
		t.Errorf("spark: count %d, distinct (partition, offset) %d; the log has %d records", got.Count, got.Distinct, len(logRows))
	}
	for p, c := range want {
		if got.ByPartition[p] != c {
			t.Errorf("spark: partition %s has %d rows, the log %d (GROUP BY gave %v)", p, got.ByPartition[p], c, got.ByPartition)
		}
	}
	if !slices.Contains(got.Tables, topic) {
		t.Errorf("spark SHOW TABLES gave %v, want %s in it", got.Tables, topic)
	}
	t.Logf("spark read %d rows, by partition %v, in %v (JVM start included)", got.Count, got.ByPartition, time.Since(start).Round(time.Second))
}
