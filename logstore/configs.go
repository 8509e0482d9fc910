package logstore

import (
	"fmt"
	"math"
	"time"

	"github.com/aerostream/aerostream/topicconfig"
)

// PartitionConfigOf reads the configs the store applies (the topicconfig
// rows whose layer is logstore) from a set of topic configs under Kafka's
// names, as the controller hands them to a store. Configs the set lacks
// stay unset, so the store's defaults apply; others are ignored. The set
// is validated by the controller already, so an error here means a value
// that is not a number.
func PartitionConfigOf(cfg map[string]string) (PartitionConfig, error) {
	var pc PartitionConfig
	for _, d := range topicconfig.Defs() {
		if d.Layer != topicconfig.Logstore {
			continue
		}
		if done, err := pc.setCompaction(d.Name, cfg); done || err != nil {
			if err != nil {
				return PartitionConfig{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
			}
			continue
		}
		n, ok, err := topicconfig.IntOf(cfg, d.Name)
		if err != nil {
			return PartitionConfig{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
		if ok {
			if err := pc.set(d.Name, n); err != nil {
				return PartitionConfig{}, err
			}
		}
	}
	return pc, nil
}

// RetentionNow is retention.ms = 0 as a PartitionConfig holds it, where a
// zero RetentionMs means "the store's default". Retention compares ages in
// whole milliseconds, so a duration under a millisecond acts as 0 ms: a
// sealed segment whose newest record is older than now is deleted.
const RetentionNow = time.Nanosecond

// RetainNoBytes is retention.bytes = 0 as a PartitionConfig holds it, where
// a zero RetentionBytes means "the store's default". Every sealed segment
// then exceeds the limit and is deleted; the active segment stays, as it
// does for retention.ms = 0.
const RetainNoBytes int64 = math.MinInt64

// retentionBytes is the limit retention applies: -1 for none, else bytes.
func (c *PartitionConfig) retentionBytes() int64 {
	switch {
	case c.RetentionBytes == RetainNoBytes:
		return 0
	case c.RetentionBytes < 0:
		return -1
	}
	return c.RetentionBytes
}

// set applies one logstore config. Milliseconds stay negative for Kafka's
// special values (-1, -2), which the fields keep in the same sense.
func (c *PartitionConfig) set(name string, n int64) error {
	ms := time.Duration(n) * time.Millisecond
	switch name {
	case topicconfig.SegmentBytes:
		c.SegmentBytes = n
	case topicconfig.SegmentMs:
		c.SegmentMs = ms
	case topicconfig.RetentionMs:
		if n == 0 {
			ms = RetentionNow
		}
		c.RetentionMs = ms
	case topicconfig.RetentionBytes:
		switch {
		case n == 0:
			n = RetainNoBytes
		case n < 0:
			n = -1 // Kafka: every negative value is unlimited
		}
		c.RetentionBytes = n
	case topicconfig.MaxMessageBytes:
		c.MaxMessageBytes = int32(n) // the registry bounds it to an INT
	case topicconfig.LocalRetentionBytes:
		c.LocalRetentionBytes = &n
	case topicconfig.LocalRetentionMs:
		c.LocalRetentionMs = &ms
	default:
		// A registry row says logstore applies it, but nothing here does.
		return fmt.Errorf("%w: topic config %s is not applied by logstore", ErrInvalidRequest, name)
	}
	return nil
}

// registryDefaults is the registry's default of every logstore config.
func registryDefaults() PartitionConfig {
	all := map[string]string{}
	for _, d := range topicconfig.Defs() {
		all[d.Name] = d.Default
	}
	pc, err := PartitionConfigOf(all)
	if err != nil {
		panic(err) // a registry row logstore does not map: caught by every test
	}
	return pc
}
