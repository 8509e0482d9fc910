package topicconfig

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Type is a config's Kafka type, as DescribeConfigs reports it.
type Type string

// The Kafka config types used here.
const (
	String  Type = "STRING"
	Int     Type = "INT"
	Long    Type = "LONG"
	Boolean Type = "BOOLEAN"
	List    Type = "LIST"
	Double  Type = "DOUBLE"
)

// Layer names the part of AeroStream that acts on a config's value.
type Layer string

// The layers. A config is applied by exactly one of them.
const (
	// Logstore: the store enforces it per partition (segment rolling,
	// retention, local retention after tiering, batch size).
	Logstore Layer = "logstore"
	// Tierd: the tiering daemon.
	Tierd Layer = "tierd"
	// Gateway: the protocol gateways.
	Gateway Layer = "gateway"
	// Controller: the controller itself (placement, replication).
	Controller Layer = "controller"
	// Fixed: only the behaviour AeroStream always has is accepted (the
	// other values Kafka knows are refused, saying why), so there is
	// nothing to apply.
	Fixed Layer = "fixed"
	// Iceberg: the Iceberg committer (iceberg/), which materializes the
	// topic into a table.
	Iceberg Layer = "iceberg"
	// Unapplied: accepted, stored and described, but no layer acts on it
	// yet; the row's Doc says what is missing.
	Unapplied Layer = "unapplied"
)

// Def is one topic config.
type Def struct {
	Name    string // topic-level name, e.g. retention.ms
	Broker  string // broker-level name that sets its cluster default (log.retention.ms); "" if none
	Type    Type
	Default string // Kafka's default, except where AeroStream's differs (segment.bytes)
	Doc     string
	// Dynamic: the value may change on an existing topic (AlterConfigs).
	Dynamic bool
	Layer   Layer

	// Min and Max bound an Int, Long or Double; Special lists values outside them
	// that Kafka gives a meaning (-1 unlimited, -2 "as retention.*").
	Min, Max int64
	Special  []int64
	// NotAbove names the config this one may not exceed when both are set
	// and the other is not unlimited (local retention within retention).
	NotAbove string

	// Values are what Kafka accepts for a String or the items of a List;
	// Available is the subset AeroStream serves, and Unavailable says why
	// the others are refused.
	Values      []string
	Available   []string
	Unavailable string

	// Parse, when set, checks a String value that is not one of a fixed
	// set (a partition spec) and returns its normal form.
	Parse func(v string) (string, error)
}

// Names of the configs, for the code that applies them.
const (
	CleanupPolicy          = "cleanup.policy"
	CompressionType        = "compression.type"
	DeleteRetentionMs      = "delete.retention.ms"
	LocalRetentionBytes    = "local.retention.bytes"
	LocalRetentionMs       = "local.retention.ms"
	MaxCompactionLagMs     = "max.compaction.lag.ms"
	MaxMessageBytes        = "max.message.bytes"
	MessageTimestampType   = "message.timestamp.type"
	MinCleanableDirtyRatio = "min.cleanable.dirty.ratio"
	MinCompactionLagMs     = "min.compaction.lag.ms"
	MinInsyncReplicas      = "min.insync.replicas"
	RemoteStorageEnable    = "remote.storage.enable"
	RetentionBytes         = "retention.bytes"
	RetentionMs            = "retention.ms"
	SegmentBytes           = "segment.bytes"
	SegmentMs              = "segment.ms"

	UncleanLeaderElectionEnable = "unclean.leader.election.enable"

	// Iceberg topics (iceberg/).
	IcebergEnabled       = "iceberg.enabled"
	IcebergMode          = "iceberg.mode"
	IcebergPartitionSpec = "iceberg.partition_spec"
	IcebergInvalidAction = "iceberg.invalid_record_action"

	// Broker-side schema validation (Confluent's names).
	KeySchemaValidation   = "confluent.key.schema.validation"
	ValueSchemaValidation = "confluent.value.schema.validation"
)

// Special values of the retention configs, as in Kafka.
const (
	// Unlimited (-1): retention.* and local.retention.* keep everything.
	Unlimited int64 = -1
	// AsRetention (-2): local.retention.* takes retention.*'s value, so
	// nothing leaves local disk before retention deletes it.
	AsRetention int64 = -2
)

// Sentinel errors. Callers wrap them into their own (the controller's
// ErrInvalidConfig) or test for them.
var (
	// ErrUnknown: a config name the registry does not hold.
	ErrUnknown = errors.New("unknown config")
	// ErrInvalid: a value outside the config's type or range, or one whose
	// behaviour AeroStream does not have.
	ErrInvalid = errors.New("invalid config value")
	// ErrNotDynamic: a change to a config that is fixed once the topic
	// exists.
	ErrNotDynamic = errors.New("config cannot change on an existing topic")
)

// configError carries one of the sentinels without repeating its text, so
// a caller's own prefix ("invalid config: ") reads as one sentence.
type configError struct {
	kind error
	msg  string
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &configError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

var (
	byName   = map[string]*Def{}
	byBroker = map[string]*Def{}
)

func init() {
	if err := index(defs); err != nil {
		panic(err)
	}
}

// index fills the lookup maps and checks each row is well formed: its
// default must pass its own check, so a typo in a row fails at start.
func index(rows []Def) error {
	for i := range rows {
		d := &rows[i]
		if byName[d.Name] != nil {
			return fmt.Errorf("topicconfig: %s defined twice", d.Name)
		}
		if norm, err := d.Check(d.Default); err != nil || norm != d.Default {
			return fmt.Errorf("topicconfig: %s: default %q is not in normal form (%q, %v)", d.Name, d.Default, norm, err)
		}
		byName[d.Name] = d
		if d.Broker != "" {
			byBroker[d.Broker] = d
		}
	}
	return nil
}

// Defs lists every topic config, sorted by name. The rows are the
// registry's own: callers read them and never change them.
func Defs() []*Def {
	out := make([]*Def, 0, len(defs))
	for i := range defs {
		out = append(out, &defs[i])
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the topic config of that name, or nil.
func Lookup(name string) *Def { return byName[name] }

// LookupBroker returns the topic config a broker-level name sets the
// cluster default of (log.retention.ms -> retention.ms), or nil.
func LookupBroker(broker string) *Def { return byBroker[broker] }

// Names lists the topic config names, sorted.
func Names() []string {
	out := make([]string, 0, len(defs))
	for _, d := range Defs() {
		out = append(out, d.Name)
	}
	return out
}

// BrokerNames lists the broker-level names, sorted.
func BrokerNames() []string {
	out := make([]string, 0, len(byBroker))
	for n := range byBroker {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check validates v and returns its normal form; the error says what is
// wrong with it but not which config it is (Validate adds the name).
func (d *Def) Check(v string) (string, error) {
	switch d.Type {
	case Int, Long:
		return d.checkInt(v)
	case Double:
		return d.checkDouble(v)
	case Boolean:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return "true", nil
		case "false":
			return "false", nil
		}
		return "", fmt.Errorf("%q is not true or false", v)
	case String:
		if d.Parse != nil {
			return d.Parse(v)
		}
		return d.checkItem(v, v)
	case List:
		var items []string
		for _, it := range strings.Split(v, ",") {
			it, err := d.checkItem(it, v)
			if err != nil {
				return "", err
			}
			if !slices.Contains(items, it) {
				items = append(items, it)
			}
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("config type %s has no check", d.Type)
}

func (d *Def) checkInt(v string) (string, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%q is not an integer", v)
	}
	s := strconv.FormatInt(n, 10)
	if slices.Contains(d.Special, n) || n >= d.Min && n <= d.Max {
		return s, nil
	}
	rng := fmt.Sprintf("must be from %d to %d", d.Min, d.Max)
	for _, sp := range d.Special {
		rng += fmt.Sprintf(", or %d", sp)
	}
	return "", fmt.Errorf("%s %s", s, rng)
}

func (d *Def) checkDouble(v string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) {
		return "", fmt.Errorf("%q is not a number", v)
	}
	if f < float64(d.Min) || f > float64(d.Max) {
		return "", fmt.Errorf("%s must be from %d to %d", strconv.FormatFloat(f, 'g', -1, 64), d.Min, d.Max)
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// FloatOf reads a Double config from a validated set: its value and true,
// or (0, false) when the set lacks it.
func FloatOf(cfg map[string]string, name string) (float64, bool, error) {
	v, ok := cfg[name]
	if !ok {
		return 0, false, nil
	}
	d := byName[name]
	if d == nil || d.Type != Double {
		return 0, false, errorf(ErrUnknown, "%s is not a double config", name)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false, errorf(ErrInvalid, "%s = %q is not a number", name, v)
	}
	return f, true, nil
}

// checkItem checks one value of a String, or one item of a List (whole is
// the list, for the message).
func (d *Def) checkItem(item, whole string) (string, error) {
	item = strings.TrimSpace(item)
	for _, a := range d.Values {
		if !strings.EqualFold(item, a) {
			continue
		}
		if !slices.Contains(d.Available, a) {
			return "", fmt.Errorf("%q: %s", a, d.Unavailable)
		}
		return a, nil
	}
	if d.Type == List {
		return "", fmt.Errorf("%q: %q is not one of %s", whole, item, strings.Join(d.Values, ", "))
	}
	return "", fmt.Errorf("%q is not one of %s", item, strings.Join(d.Values, ", "))
}

// lookup finds a topic config by its topic name, or by its broker-level
// name when broker is set.
func lookup(name string, broker bool) (*Def, error) {
	d, kind := byName[name], "topic"
	if broker {
		d, kind = byBroker[name], "broker"
	}
	if d == nil {
		return nil, errorf(ErrUnknown, "unknown %s config %q", kind, name)
	}
	return d, nil
}

// CheckOne validates one config, named by its topic name (broker=false) or
// its broker-level name (broker=true), and returns its normal form.
func CheckOne(name, value string, broker bool) (string, error) {
	d, err := lookup(name, broker)
	if err != nil {
		return "", err
	}
	norm, err := d.Check(value)
	if err != nil {
		return "", errorf(ErrInvalid, "%s = %v", name, err)
	}
	return norm, nil
}

// Find returns the config a name denotes: a topic name (broker=false) or a
// broker-level name (broker=true). The error wraps ErrUnknown.
func Find(name string, broker bool) (*Def, error) { return lookup(name, broker) }

// Validate checks a whole set, topic-level or broker-level, and returns it
// normalized. Errors name the first bad key in sorted order, so every
// controller replica reports the same one.
func Validate(in map[string]string, broker bool) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(in))
	for k := range in {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string]string, len(in))
	for _, k := range names {
		v, err := CheckOne(k, in[k], broker)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	if err := CrossCheck(out, broker); err != nil {
		return nil, err
	}
	return out, nil
}

// CrossCheck enforces the rules between configs of one set (NotAbove:
// Kafka's rule that local retention may not exceed retention), for the
// configs of the set that are normalized already.
func CrossCheck(cfg map[string]string, broker bool) error {
	for _, d := range Defs() {
		if d.NotAbove == "" {
			continue
		}
		name, other := d.Name, d.NotAbove
		if broker {
			name, other = d.Broker, byName[d.NotAbove].Broker
		}
		ls, ok1 := cfg[name]
		ts, ok2 := cfg[other]
		if !ok1 || !ok2 {
			continue
		}
		l, _ := strconv.ParseInt(ls, 10, 64)
		t, _ := strconv.ParseInt(ts, 10, 64)
		if t >= 0 && (l == Unlimited || l > t) {
			return errorf(ErrInvalid, "%s = %s must not exceed %s = %s", name, ls, other, ts)
		}
	}
	return nil
}

// CheckChange refuses a change of name's value on an existing topic when
// the config is not dynamic. old and next are the topic's sets before and
// after; an unchanged value passes.
func CheckChange(old, next map[string]string) error { return checkChange(defs, old, next) }

func checkChange(rows []Def, old, next map[string]string) error {
	for _, d := range rows {
		if d.Dynamic || old[d.Name] == next[d.Name] {
			continue
		}
		return errorf(ErrNotDynamic, "%s cannot change on an existing topic", d.Name)
	}
	return nil
}

// Effective is the set a store applies to a partition: the topic's own
// configs over the dynamic cluster defaults (given under their broker
// names). Configs set in neither are absent, so the store's own static
// defaults apply.
func Effective(topic, broker map[string]string) map[string]string {
	out := make(map[string]string, len(topic)+len(broker))
	for b, v := range broker {
		if d := byBroker[b]; d != nil {
			out[d.Name] = v
		}
	}
	for k, v := range topic {
		out[k] = v
	}
	return out
}

// IntOf reads an Int or Long config from a validated set: its value and
// true, or (0, false) when the set lacks it. A value that does not parse
// is an error naming the config (the set was not validated).
func IntOf(cfg map[string]string, name string) (int64, bool, error) {
	v, ok := cfg[name]
	if !ok {
		return 0, false, nil
	}
	d := byName[name]
	if d == nil || d.Type != Int && d.Type != Long {
		return 0, false, errorf(ErrUnknown, "%s is not an integer config", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false, errorf(ErrInvalid, "%s = %q is not an integer", name, v)
	}
	return n, true, nil
}

// DefaultInt is an Int or Long config's default as a number; it panics on
// any other name, which is a bug in the caller.
func DefaultInt(name string) int64 {
	d := byName[name]
	if d == nil {
		panic("topicconfig: no config " + name)
	}
	n, err := strconv.ParseInt(d.Default, 10, 64)
	if err != nil {
		panic("topicconfig: " + name + " is not an integer config")
	}
	return n
}
