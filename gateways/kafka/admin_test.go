package kafka

import (
	"crypto/rand"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminKeys(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	ctx := testCtx(t)

	// CreateTopics: validate only, bad replication factor, duplicate.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.ValidateOnly = true
	for _, name := range []string{"adm", "bad rf", "dup", "dup"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 1
		if name == "bad rf" {
			rt.Topic, rt.ReplicationFactor = "badrf", 3
		}
		ct.Topics = append(ct.Topics, rt)
	}
	resp, err := ct.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{0, kerr.InvalidReplicationFactor.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, rt := range resp.Topics {
		if rt.ErrorCode != want[i] {
			t.Errorf("create %s: code %d, want %d (%v)", rt.Topic, rt.ErrorCode, want[i], rt.ErrorMessage)
		}
	}
	if _, err := e.cluster.Topic(ctx, "adm"); err == nil {
		t.Fatal("validate-only created the topic")
	}
	retention := kmsg.NewCreateTopicsRequestTopicConfig()
	retention.Name, retention.Value = "retention.ms", kmsg.StringPtr("1000")
	createTopic(t, cl, "adm", 2, retention)

	// Describe the topic's configs: the one set is a dynamic topic config.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "adm"
	dc.Resources = append(dc.Resources, dr)
	dc.IncludeSynonyms = true
	dresp, err := dc.RequestWith(ctx, cl)
	if err != nil || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs: %+v %v", dresp, err)
	}
	found := false
	for _, c := range dresp.Resources[0].Configs {
		if c.Name == "retention.ms" {
			found = true
			if *c.Value != "1000" || c.Source != kmsg.ConfigSourceDynamicTopicConfig || len(c.ConfigSynonyms) != 2 {
				t.Errorf("retention.ms described as %+v", c)
			}
		}
	}
	if !found {
		t.Error("retention.ms not described")
	}

	// IncrementalAlterConfigs: an unknown config is INVALID_CONFIG.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ir := kmsg.NewIncrementalAlterConfigsRequestResource()
	ir.ResourceType, ir.ResourceName = kmsg.ConfigResourceTypeTopic, "adm"
	ic := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	ic.Name, ic.Value = "no.such.config", kmsg.StringPtr("1")
	ir.Configs = append(ir.Configs, ic)
	ia.Resources = append(ia.Resources, ir)
	iresp, err := ia.RequestWith(ctx, cl)
	if err != nil || iresp.Resources[0].ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("alter unknown config: %+v %v", iresp, err)
	}
	ir.Configs[0].Name, ir.Configs[0].Value = "max.message.bytes", kmsg.StringPtr("200")
	ia.Resources[0] = ir
	if iresp, err = ia.RequestWith(ctx, cl); err != nil || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter max.message.bytes: %+v %v", iresp, err)
	}

	// max.message.bytes is enforced on produce.
	pcl := newClient(t, e.addr, kgo.DefaultProduceTopic("adm"), kgo.RecordRetries(1))
	big := make([]byte, 1000)
	_, _ = rand.Read(big) // incompressible
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over max.message.bytes: %v", err)
	}
	if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte("ok"), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// CreatePartitions: grow, then refuse a shrink.
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "adm", 4
	cp.Topics = append(cp.Topics, cpt)
	cpresp, err := cp.RequestWith(ctx, cl)
	if err != nil || cpresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partitions: %+v %v", cpresp, err)
	}
	cp.Topics[0].Count = 3
	if cpresp, err = cp.RequestWith(ctx, cl); err != nil || cpresp.Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("shrink partitions: %+v %v", cpresp, err)
	}

	// ListOffsets and DeleteRecords.
	produceN(t, cl, "adm", 0, 50)
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "adm"
	for p := int32(0); p < 4; p++ {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	loresp, err := lo.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for _, p := range loresp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("list offsets partition %d: %d", p.Partition, p.ErrorCode)
		}
		end += p.Offset
	}
	if end != 51 {
		t.Fatalf("latest offsets sum to %d, want 51", end)
	}
	del := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = "adm"
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = 0, -1
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	delresp, err := del.RequestWith(ctx, cl)
	if err != nil || delresp.Topics[0].Partitions[0].ErrorCode != 0 || delresp.Topics[0].Partitions[0].LowWatermark != loresp.Topics[0].Partitions[0].Offset {
		t.Fatalf("delete records: %+v %v", delresp, err)
	}

	// DescribeLogDirs and DescribeCluster.
	ld, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, cl)
	if err != nil || len(ld.Dirs) != 1 || len(ld.Dirs[0].Topics) == 0 {
		t.Fatalf("describe log dirs: %+v %v", ld, err)
	}
	dcl, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || dcl.ErrorCode != 0 || dcl.ClusterID != "test-cluster" || len(dcl.Brokers) != 1 {
		t.Fatalf("describe cluster: %+v %v", dcl, err)
	}

	// DeleteTopics by id; the internal topic cannot be deleted.
	topic, _ := e.cluster.Topic(ctx, "adm")
	dtr := kmsg.NewPtrDeleteTopicsRequest()
	ref := kmsg.NewDeleteTopicsRequestTopic()
	ref.TopicID = topic.ID
	internal := kmsg.NewDeleteTopicsRequestTopic()
	internal.Topic = kmsg.StringPtr(offsetsTopic)
	dtr.Topics = append(dtr.Topics, ref, internal)
	dtresp, err := dtr.RequestWith(ctx, cl)
	if err != nil || dtresp.Topics[0].ErrorCode != 0 || dtresp.Topics[1].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("delete topics: %+v %v", dtresp, err)
	}
	if _, err := e.cluster.Topic(ctx, "adm"); err == nil {
		t.Fatal("topic survived its deletion")
	}
}

// TestMetadataAutoCreate: Metadata for an unknown topic creates it when
// allowed, and not otherwise.
func TestMetadataAutoCreate(t *testing.T) {
	e := newTestEnv(t)
	cl := newClient(t, e.addr)
	ctx := testCtx(t)
	md := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	md.Topics = append(md.Topics, rt)
	md.AllowAutoTopicCreation = false
	resp, err := md.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata without auto-create: %+v %v", resp, err)
	}
	md.AllowAutoTopicCreation = true
	resp, err = md.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("metadata with auto-create: %+v %v", resp, err)
	}
	if b := resp.Brokers[0]; b.Host != "127.0.0.1" || resp.Topics[0].Partitions[0].Leader != b.NodeID {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
}
