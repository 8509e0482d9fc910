package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServeKafkaGateway: serve's Kafka gateway answers a Kafka client with
// metadata from serve's controller: topics created through Kafka get their
// partitions on the store at once, configs come from the controller, a
// group commits and, after a restart, resumes from its commit.
func TestServeKafkaGateway(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	kafkaAddr := freeAddr(t)
	args := []string{"serve", "--data-dir", data, "--ring-listen", "127.0.0.1:0", "--controller-listen", freeAddr(t),
		"--kafka-listen", kafkaAddr, "--native-listen", "", "--http-listen", ""}
	p := start(t, nil, args...)
	p.waitFor(t, `msg="committed offsets loaded"`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	// cl is replaced after the restart: close whichever client it holds.
	defer func() { cl.Close() }()

	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "events", 3, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "retention.ms", kmsg.StringPtr("3600000")
	rt.Configs = append(rt.Configs, cfg)
	bad := kmsg.NewCreateTopicsRequestTopic()
	bad.Topic, bad.NumPartitions, bad.ReplicationFactor = "replicated", 1, 3
	ct.Topics = append(ct.Topics, rt, bad)
	resp, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("create events: %+v", resp.Topics[0])
	}
	if resp.Topics[1].ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("replication factor 3: %+v", resp.Topics[1])
	}
	found := false
	for _, c := range resp.Topics[0].Configs {
		found = found || c.Name == "retention.ms" && c.Value != nil && *c.Value == "3600000"
	}
	if !found {
		t.Errorf("CreateTopics did not describe retention.ms: %+v", resp.Topics[0].Configs)
	}

	// The partitions exist as soon as CreateTopics answered.
	for i := 0; i < 30; i++ {
		r := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte(fmt.Sprint(i))})
		if err := r.FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	consume := func(n int) int {
		c, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("events"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := 0
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		defer pcancel()
		for got < n {
			fs := c.PollFetches(pctx)
			if pctx.Err() != nil {
				break
			}
			got += fs.NumRecords()
			if err := c.CommitUncommittedOffsets(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	if got := consume(30); got != 30 {
		t.Fatalf("group consumed %d of 30", got)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.logText())
	}

	p = start(t, nil, args...)
	p.waitFor(t, `msg="committed offsets loaded"`)
	cl.Close()
	cl, err = kgo.NewClient(kgo.SeedBrokers(kafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "events", Value: []byte("after restart")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consume(1); got != 1 {
		t.Fatalf("after a restart the group consumed %d records, want only the new one", got)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.logText())
	}
}
