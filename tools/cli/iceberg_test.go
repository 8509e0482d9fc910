package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/aerostream/aerostream/iceberg"
)

// TestIcebergKeyValueAgainstServe: records produced by franz-go (lz4
// batches, and a transaction that aborts) to a 3-partition Iceberg topic
// are read back from the table with iceberg-go exactly: every committed
// (partition, offset) once with its key and value, nothing of the
// aborted transaction nor of the control batches; /v1/iceberg reports
// the table caught up.
func TestIcebergKeyValueAgainstServe(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	kafkaAddr := freeAddr(t)
	p := start(t, nil, "serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:0",
		"--kafka-listen", kafkaAddr, "--native-listen", "", "--http-listen", "127.0.0.1:0",
		"--iceberg.commit_interval_ms", "200")
	m := p.waitFor(t, `msg=running .*http_addr=(\S+)`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const topic, parts, perPart = "kv", 3, 300
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.TransactionalID("iceberg-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	enabled := "true"
	if res, err := kadm.NewClient(cl).CreateTopic(ctx, parts, 1, map[string]*string{iceberg.ConfigEnabled: &enabled}, topic); err != nil || res.Err != nil {
		t.Fatalf("create topic: %v %v", err, res.Err)
	}
	produce := func(from, to int, commit bool) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			for p := int32(0); p < parts; p++ {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", i),
					Value: fmt.Appendf(nil, "v-%d-%d-%v", p, i, commit)}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Error(err)
					}
				})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, perPart/2, true)
	produce(0, 50, false) // aborted: never in the table
	produce(perPart/2, perPart, true)

	// Committed records, plus their offsets: each transaction ends with
	// a control batch, and the aborted records take offsets too.
	hw, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = hw.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("end offsets %v", hw)
	cat, err := iceberg.OpenCatalog(ctx, iceberg.Config{Catalog: "sql", DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	defer iceberg.CloseCatalog(cat)
	var tbl *table.Table
	for {
		tbl, err = cat.LoadTable(ctx, table.Identifier{iceberg.DefaultNamespace, topic})
		done := err == nil
		if done {
			o, _ := iceberg.TableOffsets(tbl.Metadata())
			hw.Each(func(e kadm.ListedOffset) { done = done && o[e.Partition] == e.Offset })
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("table never caught up with the log (last error %v)", err)
		case <-time.After(50 * time.Millisecond): // polling the catalog: serve commits in its own process
		}
	}

	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	seen := map[[2]int64]bool{}
	byPart := map[int32]int{}
	for i, ch := range at.Column(0).Data().Chunks() {
		st := ch.(*array.Struct)
		ps, os, ks := st.Field(0).(*array.Int32), st.Field(1).(*array.Int64), st.Field(4).(*array.Binary)
		vs := at.Column(1).Data().Chunk(i).(*array.Binary)
		for r := 0; r < st.Len(); r++ {
			k := [2]int64{int64(ps.Value(r)), os.Value(r)}
			if seen[k] {
				t.Errorf("(partition %d, offset %d) twice", k[0], k[1])
			}
			seen[k] = true
			n := byPart[ps.Value(r)]
			want := fmt.Sprintf("v-%d-%d-true", ps.Value(r), n)
			if got := string(vs.Value(r)); got != want || string(ks.Value(r)) != fmt.Sprintf("k%d", n) {
				t.Errorf("partition %d row %d: key %q value %q, want k%d %q", ps.Value(r), n, ks.Value(r), got, n, want)
			}
			byPart[ps.Value(r)]++
		}
	}
	for p := int32(0); p < parts; p++ {
		if byPart[p] != perPart {
			t.Errorf("partition %d: %d rows, want %d (the committed records alone)", p, byPart[p], perPart)
		}
	}

	resp, err := http.Get("http://" + m[1] + "/v1/iceberg/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sts []iceberg.TopicStatus
	if err := json.NewDecoder(resp.Body).Decode(&sts); err != nil || len(sts) != 1 {
		t.Fatalf("/v1/iceberg/%s: %v %v", topic, sts, err)
	}
	if sts[0].Rows != parts*perPart || sts[0].Table != "aerostream."+topic {
		t.Errorf("status %+v, want %d rows in aerostream.%s", sts[0], parts*perPart, topic)
	}
}
