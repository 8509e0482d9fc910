package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMeasureShareThroughput measures share-group delivery: records
// produced beforehand to a 4-partition topic are read by 4 franz-go share
// consumers of one group (accepting implicitly), and it reports
// records/s from the first poll until every record was delivered. Run it
// against each broker of a comparison in one session, e.g.
//
//	SHARE_MEASURE_SEEDS=127.0.0.1:9092,127.0.0.1:19092 go test -run TestMeasureShareThroughput -v ./gateways/kafka/
//
// It is a measurement, not a check: it asserts only that every record
// arrived.
func TestMeasureShareThroughput(t *testing.T) {
	seeds := os.Getenv("SHARE_MEASURE_SEEDS")
	if seeds == "" {
		t.Skip("a measurement: set SHARE_MEASURE_SEEDS to the brokers to compare, comma separated")
	}
	for _, seed := range strings.Split(seeds, ",") {
		rate := measureShare(t, seed, 200_000, 4)
		t.Logf("%s: %d records by 4 share consumers: %.0f records/s", seed, 200_000, rate)
	}
}

func measureShare(t *testing.T, seed string, n, members int) float64 {
	var b [6]byte
	_, _ = rand.Read(b[:])
	topic, group := "share-measure-"+hex.EncodeToString(b[:]), "share-measure-g-"+hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	defer adm.DeleteTopics(context.Background(), topic)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("%s: setting share.auto.offset.reset: %v %+v", seed, err, resp)
	}
	value := make([]byte, 100)
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	var start time.Time
	var once sync.Once
	var wg sync.WaitGroup
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	for i := 0; i < members; i++ {
		c, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for pollCtx.Err() == nil {
				fs := c.PollFetches(pollCtx)
				if k := int64(len(fs.Records())); k > 0 {
					once.Do(func() { start = time.Now() })
					if got.Add(k) >= int64(n) {
						stop()
					}
				}
			}
		}()
	}
	wg.Wait()
	if got.Load() < int64(n) {
		t.Fatalf("%s: %d of %d records delivered", seed, got.Load(), n)
	}
	return float64(n) / time.Since(start).Seconds()
}
