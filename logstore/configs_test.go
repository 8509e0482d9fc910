package logstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/aerostream/aerostream/topicconfig"
)

// TestPartitionConfigOf: a set from the controller becomes the store's
// config with Kafka's local-retention values kept, 0 included, through the
// catalog round trip a restart makes.
func TestPartitionConfigOf(t *testing.T) {
	pc, err := PartitionConfigOf(map[string]string{
		topicconfig.LocalRetentionMs: "0", topicconfig.LocalRetentionBytes: "0",
		topicconfig.RetentionMs: "-1", topicconfig.MaxMessageBytes: "200", topicconfig.CleanupPolicy: "delete",
	})
	if err != nil {
		t.Fatal(err)
	}
	after := decodeConfig(encodeConfig(pc.withDefaults(DefaultPartitionConfig)), DefaultPartitionConfig)
	if after.LocalRetentionMs == nil || *after.LocalRetentionMs != 0 || after.LocalRetentionBytes == nil || *after.LocalRetentionBytes != 0 {
		t.Errorf("local retention 0 became %v / %v", after.LocalRetentionMs, after.LocalRetentionBytes)
	}
	if after.RetentionMs != -time.Millisecond || after.MaxMessageBytes != 200 || after.SegmentBytes != 128<<20 {
		t.Errorf("config %+v", after)
	}
	// Unset local retention takes the registry's default, -2.
	def := PartitionConfig{}.withDefaults(DefaultPartitionConfig)
	if def.LocalRetentionMs == nil || *def.LocalRetentionMs != -2*time.Millisecond || *def.LocalRetentionBytes != -2 {
		t.Errorf("default local retention %v / %v", def.LocalRetentionMs, def.LocalRetentionBytes)
	}
	if _, err := PartitionConfigOf(map[string]string{topicconfig.SegmentBytes: "big"}); err == nil {
		t.Error("a value that is not a number was accepted")
	}
}

// TestEveryLogstoreRowApplied: each registry row whose layer is logstore
// changes the store's config, so a row added to the registry cannot go
// unapplied.
func TestEveryLogstoreRowApplied(t *testing.T) {
	for _, d := range topicconfig.Defs() {
		if d.Layer != topicconfig.Logstore {
			continue
		}
		v := "7"
		switch {
		case d.Type == topicconfig.List || d.Type == topicconfig.String:
			v = d.Values[len(d.Values)-1]
		case d.Type == topicconfig.Double:
			v = "0.7"
		case d.Min > 7:
			v = "1000"
		}
		pc, err := PartitionConfigOf(map[string]string{d.Name: v})
		if err != nil {
			t.Errorf("%s: %v", d.Name, err)
			continue
		}
		if reflect.DeepEqual(pc, PartitionConfig{}) {
			t.Errorf("%s=%s left the store's config unchanged", d.Name, v)
		}
	}
}
