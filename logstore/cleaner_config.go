package logstore

import (
	"math"
	"strings"
	"time"

	"github.com/aerostream/aerostream/topicconfig"
)

// maxConfigMs is the largest millisecond count a time.Duration holds;
// max.compaction.lag.ms past it (Kafka's default is Long.MAX_VALUE) means
// no maximum.
const maxConfigMs = math.MaxInt64 / int64(time.Millisecond)

// setCompaction applies one of the compaction configs of cfg named name,
// reporting whether name is one of them. The set is validated by the
// controller, so an error is a value that does not parse.
func (c *PartitionConfig) setCompaction(name string, cfg map[string]string) (bool, error) {
	switch name {
	case topicconfig.CleanupPolicy:
		if v, ok := cfg[name]; ok {
			norm, err := topicconfig.CheckOne(name, v, false)
			if err != nil {
				return true, err
			}
			c.CleanupPolicy = norm
		}
		return true, nil
	case topicconfig.MinCleanableDirtyRatio:
		f, ok, err := topicconfig.FloatOf(cfg, name)
		if ok {
			c.MinCleanableDirtyRatio = &f
		}
		return true, err
	case topicconfig.DeleteRetentionMs, topicconfig.MinCompactionLagMs, topicconfig.MaxCompactionLagMs:
	default:
		return false, nil
	}
	n, ok, err := topicconfig.IntOf(cfg, name)
	if err != nil || !ok {
		return true, err
	}
	ms := time.Duration(math.MaxInt64)
	if n < maxConfigMs {
		ms = time.Duration(n) * time.Millisecond
	}
	switch name {
	case topicconfig.DeleteRetentionMs:
		c.DeleteRetentionMs = &ms
	case topicconfig.MinCompactionLagMs:
		c.MinCompactionLagMs = ms
	case topicconfig.MaxCompactionLagMs:
		c.MaxCompactionLagMs = ms
	}
	return true, nil
}

func (c PartitionConfig) withCompactionDefaults(d PartitionConfig) PartitionConfig {
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = d.CleanupPolicy
	}
	if c.DeleteRetentionMs == nil && d.DeleteRetentionMs != nil {
		c.DeleteRetentionMs = new(*d.DeleteRetentionMs)
	}
	if c.MinCleanableDirtyRatio == nil && d.MinCleanableDirtyRatio != nil {
		c.MinCleanableDirtyRatio = new(*d.MinCleanableDirtyRatio)
	}
	if c.MinCompactionLagMs <= 0 {
		c.MinCompactionLagMs = d.MinCompactionLagMs
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	return c
}

// compacts reports whether cleanup.policy includes compact.
func (c *PartitionConfig) compacts() bool { return hasPolicy(c.CleanupPolicy, "compact") }

// deletes reports whether cleanup.policy includes delete, the default:
// only then do retention.ms and retention.bytes remove segments.
func (c *PartitionConfig) deletes() bool {
	return c.CleanupPolicy == "" || hasPolicy(c.CleanupPolicy, "delete")
}

func hasPolicy(list, want string) bool {
	for _, p := range strings.Split(list, ",") {
		if strings.TrimSpace(p) == want {
			return true
		}
	}
	return false
}
