package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group configs (KIP-848's GROUP config resource, type 32): per-group
// overrides of the consumer and share group settings, set with
// IncrementalAlterConfigs and read with DescribeConfigs, with Kafka's
// names, defaults and bounds. They are written to __consumer_offsets (key
// version groupConfigKey, a JSON map; a null value clears them), to the
// group's partition, and every gateway reads them back with the committed
// offsets, so they survive restarts. A gateway learns of a change made
// through another when it next reads that partition (when it starts to
// coordinate the group, or opens a share partition of it).

const (
	configResourceGroup = ConfigResourceType(kmsg.ConfigResourceTypeGroupConfig)
	// groupConfigKey is our record key version for a group's configs,
	// outside Kafka's range.
	groupConfigKey int16 = 0x7AE1
)

// groupConfigDef is one group config.
type groupConfigDef struct {
	def   string
	typ   ConfigType
	doc   string
	check func(v string) error
}

func intIn(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer in [%d, %d]", lo, hi)
		}
		return nil
	}
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(vals, v) {
			return fmt.Errorf("must be one of %s", strings.Join(vals, ", "))
		}
		return nil
	}
}

var groupConfigDefs = map[string]groupConfigDef{
	"consumer.session.timeout.ms":      {"45000", ConfigTypeInt, "The timeout to detect client failures when using the consumer group protocol.", intIn(45000, 60000)},
	"consumer.heartbeat.interval.ms":   {"5000", ConfigTypeInt, "The heartbeat interval given to the members of a consumer group.", intIn(5000, 15000)},
	"share.session.timeout.ms":         {"45000", ConfigTypeInt, "The timeout to detect client failures when using the share group protocol.", intIn(45000, 60000)},
	"share.heartbeat.interval.ms":      {"5000", ConfigTypeInt, "The heartbeat interval given to the members of a share group.", intIn(5000, 15000)},
	"share.record.lock.duration.ms":    {"30000", ConfigTypeInt, "The record acquisition lock duration in milliseconds for share groups.", intIn(1000, 3600000)},
	"share.delivery.count.limit":       {"5", ConfigTypeInt, "The maximum number of delivery attempts for a record delivered to a share group.", intIn(2, 10)},
	"share.partition.max.record.locks": {"2000", ConfigTypeInt, "Share-group record lock limit per share-partition.", intIn(100, 10000)},
	"share.auto.offset.reset":          {"latest", ConfigTypeString, "The strategy to initialize the share-partition start offset.", oneOf("latest", "earliest")},
	"share.renew.acknowledge.enable":   {"true", ConfigTypeBoolean, "Whether the renew acknowledge type is enabled for the share group.", oneOf("true", "false")},
	"share.isolation.level":            {"read_uncommitted", ConfigTypeString, "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be delivered unconditionally in either mode.", oneOf("read_committed", "read_uncommitted")},
	"errors.deadletterqueue.topic.name": {"", ConfigTypeString, "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic.", func(v string) error {
		if strings.HasPrefix(v, "__") {
			return fmt.Errorf("DLQ topic name must not start with '__'")
		}
		if v != "" {
			return ValidTopicName(v)
		}
		return nil
	}},
	"errors.deadletterqueue.copy.record.enable": {"false", ConfigTypeBoolean, "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers.", oneOf("true", "false")},
}

// groupConfigs holds every group's overrides.
type groupConfigs struct {
	mu sync.Mutex
	m  map[string]map[string]string
}

// get returns the value of a config for a group, its default if unset.
func (gc *groupConfigs) get(group, name string) string {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if v, ok := gc.m[group][name]; ok {
		return v
	}
	return groupConfigDefs[name].def
}

func (gc *groupConfigs) getInt(group, name string) int64 {
	n, _ := strconv.ParseInt(gc.get(group, name), 10, 64)
	return n
}

func (gc *groupConfigs) getDuration(group, name string) time.Duration {
	return time.Duration(gc.getInt(group, name)) * time.Millisecond
}

func (gc *groupConfigs) set(group string, cfg map[string]string) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.m == nil {
		gc.m = map[string]map[string]string{}
	}
	if len(cfg) == 0 {
		delete(gc.m, group)
		return
	}
	gc.m[group] = cfg
}

func (gc *groupConfigs) snapshot(group string) map[string]string {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	return maps.Clone(gc.m[group])
}

// groupConfigEntries is DescribeConfigs' answer for a group.
func (g *Gateway) groupConfigEntries(group string) ([]ConfigEntry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	}
	set := g.groupCfg.snapshot(group)
	var out []ConfigEntry
	for _, name := range slices.Sorted(maps.Keys(groupConfigDefs)) {
		d := groupConfigDefs[name]
		e := ConfigEntry{Name: name, Value: ptr(d.def), Source: ConfigSourceDefault, Type: d.typ, Doc: d.doc, Default: ptr(d.def)}
		if v, ok := set[name]; ok {
			e.Value, e.Source = ptr(v), ConfigSource(kmsg.ConfigSourceGroupConfig)
		}
		out = append(out, e)
	}
	return out, nil
}

// alterGroupConfigs applies IncrementalAlterConfigs operations to a group
// and writes the result to __consumer_offsets before answering.
func (g *Gateway) alterGroupConfigs(ctx context.Context, group string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: empty group id", kerr.InvalidGroupID)
	}
	cfg := g.groupCfg.snapshot(group)
	if cfg == nil {
		cfg = map[string]string{}
	}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return fmt.Errorf("%w: config %q appears more than once", kerr.InvalidRequest, op.Name)
		}
		seen[op.Name] = true
		d, ok := groupConfigDefs[op.Name]
		if !ok {
			return fmt.Errorf("%w: unknown group config %q", kerr.InvalidConfig, op.Name)
		}
		switch ConfigOpType(op.Op) {
		case ConfigOpSet:
			if op.Value == nil {
				return fmt.Errorf("%w: %s: a null value", kerr.InvalidConfig, op.Name)
			}
			if err := d.check(*op.Value); err != nil {
				return fmt.Errorf("%w: %s=%q: %v", kerr.InvalidConfig, op.Name, *op.Value, err)
			}
			cfg[op.Name] = *op.Value
		case ConfigOpDelete:
			delete(cfg, op.Name)
		default:
			return fmt.Errorf("%w: %s is not a list config", kerr.InvalidConfig, op.Name)
		}
	}
	if validateOnly {
		return nil
	}
	select {
	case <-g.groups.ready:
	default:
		return errCoordinatorLoading
	}
	rec := record{key: kbinKey(groupConfigKey, group)}
	if len(cfg) > 0 {
		rec.value, _ = json.Marshal(cfg)
	}
	if err := g.groups.write(ctx, g.groups.partitionFor(group), []record{rec}); err != nil {
		return err
	}
	g.groupCfg.set(group, cfg)
	return nil
}

// applyGroupConfigLocked applies a group config record read back from
// __consumer_offsets.
func (c *coordinator) applyGroupConfigLocked(r record) {
	_, id, ok := readKbinKey(r.key)
	if !ok {
		return
	}
	var cfg map[string]string
	if r.value != nil {
		if err := json.Unmarshal(r.value, &cfg); err != nil {
			c.log.Warn("skipping a malformed group config record", "group", id, "err", err)
			return
		}
		for k, v := range cfg {
			if d, ok := groupConfigDefs[k]; !ok || d.check(v) != nil {
				delete(cfg, k)
			}
		}
	}
	c.g.groupCfg.set(id, cfg)
}
