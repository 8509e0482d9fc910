package topicconfig

import (
	"errors"
	"strings"
	"testing"
)

func TestSpecialValues(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
		err               string
	}{
		{LocalRetentionMs, "0", "0", ""},
		{LocalRetentionMs, "-1", "-1", ""},
		{LocalRetentionMs, "-2", "-2", ""},
		{LocalRetentionMs, "-3", "", "-3 must be from -2"},
		{LocalRetentionBytes, " 0 ", "0", ""},
		{RetentionMs, "-1", "-1", ""},
		{RetentionMs, "-2", "", "must be from -1 to 9223372036854"},
		{RetentionMs, "0", "0", ""}, // Kafka's atLeast(-1)
		{RetentionBytes, "-1", "-1", ""},
		{RetentionBytes, "0", "0", ""},       // Kafka: no validator
		{RetentionBytes, "-100", "-100", ""}, // any negative is unlimited
		{RetentionBytes, "-9223372036854775808", "-9223372036854775808", ""},
		{SegmentBytes, "13", "", "segment.bytes = 13 must be from 14 to 2147483647"},
		{MaxMessageBytes, "x", "", `"x" is not an integer`},
		{CleanupPolicy, " Delete,delete ", "delete", ""},
		{CleanupPolicy, "Compact, delete", "compact,delete", ""},
		{CleanupPolicy, "compact,shred", "", `"shred" is not one of delete, compact`},
		{MinCleanableDirtyRatio, " 0.25 ", "0.25", ""},
		{MinCleanableDirtyRatio, "1.5", "", "1.5 must be from 0 to 1"},
		{MinCleanableDirtyRatio, "half", "", `"half" is not a number`},
		{DeleteRetentionMs, "0", "0", ""},
		{MaxCompactionLagMs, "9223372036854775807", "9223372036854775807", ""},
		{MaxCompactionLagMs, "0", "", "must be from 1"},
		{CompressionType, "PRODUCER", "producer", ""},
		{CompressionType, "zstd", "", "recompression is not available yet"},
		{MessageTimestampType, "createtime", "CreateTime", ""},
		{RemoteStorageEnable, "TRUE", "true", ""},
		{RemoteStorageEnable, "yes", "", "not true or false"},
	} {
		got, err := CheckOne(tc.name, tc.value, false)
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s=%q: err %v, want ErrInvalid saying %q", tc.name, tc.value, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s=%q: %q %v, want %q", tc.name, tc.value, got, err, tc.want)
		}
	}
}

func TestUnknownNames(t *testing.T) {
	if _, err := CheckOne("retention.mss", "1", false); !errors.Is(err, ErrUnknown) || err.Error() != `unknown topic config "retention.mss"` {
		t.Errorf("topic: %v", err)
	}
	// Broker-level sets use the broker names only.
	if _, err := CheckOne(RetentionMs, "1", true); !errors.Is(err, ErrUnknown) || err.Error() != `unknown broker config "retention.ms"` {
		t.Errorf("broker: %v", err)
	}
	if v, err := CheckOne("log.local.retention.ms", "0", true); err != nil || v != "0" {
		t.Errorf("broker local retention: %q %v", v, err)
	}
}

func TestBrokerSynonyms(t *testing.T) {
	for broker, topic := range map[string]string{
		"log.retention.ms": RetentionMs, "message.max.bytes": MaxMessageBytes, "log.roll.ms": SegmentMs,
		"log.local.retention.bytes": LocalRetentionBytes,
	} {
		if d := LookupBroker(broker); d == nil || d.Name != topic {
			t.Errorf("LookupBroker(%s) = %v, want %s", broker, d, topic)
		}
	}
	if LookupBroker(RemoteStorageEnable) != nil {
		t.Error("remote.storage.enable has no broker-level name")
	}
	eff := Effective(map[string]string{RetentionMs: "5"}, map[string]string{"log.retention.ms": "9", "message.max.bytes": "7", "nope": "1"})
	if len(eff) != 2 || eff[RetentionMs] != "5" || eff[MaxMessageBytes] != "7" {
		t.Errorf("Effective = %v", eff)
	}
}

func TestValidateCrossCheck(t *testing.T) {
	for _, tc := range []struct {
		in     map[string]string
		broker bool
		err    string
	}{
		{map[string]string{RetentionMs: "1000", LocalRetentionMs: "2000"}, false, "local.retention.ms = 2000 must not exceed retention.ms = 1000"},
		{map[string]string{RetentionBytes: "1000", LocalRetentionBytes: "-1"}, false, "local.retention.bytes = -1 must not exceed"},
		{map[string]string{RetentionMs: "1000", LocalRetentionMs: "0"}, false, ""},
		{map[string]string{RetentionMs: "1000", LocalRetentionMs: "-2"}, false, ""},
		{map[string]string{RetentionMs: "-1", LocalRetentionMs: "-1"}, false, ""},
		{map[string]string{MinCompactionLagMs: "10", MaxCompactionLagMs: "5"}, false, "min.compaction.lag.ms = 10 must not exceed max.compaction.lag.ms = 5"},
		{map[string]string{"log.retention.ms": "10", "log.local.retention.ms": "11"}, true, "log.local.retention.ms = 11 must not exceed log.retention.ms = 10"},
	} {
		_, err := Validate(tc.in, tc.broker)
		if tc.err == "" && err != nil || tc.err != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: %v, want %q", tc.in, err, tc.err)
		}
	}
	// The first bad key in sorted order is the one named.
	_, err := Validate(map[string]string{SegmentMs: "0", RetentionMs: "-3"}, false)
	if err == nil || !strings.HasPrefix(err.Error(), "retention.ms") {
		t.Errorf("first bad key: %v", err)
	}
}

func TestCheckChange(t *testing.T) {
	rows := []Def{{Name: "fixed.once", Type: Long, Default: "1", Min: 0, Max: 9}, {Name: "free", Type: Long, Default: "1", Min: 0, Max: 9, Dynamic: true}}
	if err := checkChange(rows, map[string]string{"fixed.once": "2"}, map[string]string{"fixed.once": "2", "free": "3"}); err != nil {
		t.Errorf("unchanged non-dynamic: %v", err)
	}
	for _, next := range []map[string]string{{"fixed.once": "3"}, {}} {
		if err := checkChange(rows, map[string]string{"fixed.once": "2"}, next); !errors.Is(err, ErrNotDynamic) {
			t.Errorf("change to %v: %v", next, err)
		}
	}
	if err := CheckChange(nil, map[string]string{RetentionMs: "5"}); err != nil {
		t.Errorf("retention.ms is dynamic: %v", err)
	}
}

func TestRows(t *testing.T) {
	for _, d := range Defs() {
		if d.Layer == "" || d.Doc == "" || d.Type == "" {
			t.Errorf("%s: every row names its layer, doc and type", d.Name)
		}
		if d.NotAbove != "" && Lookup(d.NotAbove) == nil {
			t.Errorf("%s: NotAbove names unknown %s", d.Name, d.NotAbove)
		}
	}
	if n := DefaultInt(SegmentBytes); n != 128<<20 {
		t.Errorf("segment.bytes default %d", n)
	}
	if n, ok, err := IntOf(map[string]string{LocalRetentionMs: "0"}, LocalRetentionMs); n != 0 || !ok || err != nil {
		t.Errorf("IntOf set: %d %v %v", n, ok, err)
	}
	if _, ok, err := IntOf(nil, LocalRetentionMs); ok || err != nil {
		t.Errorf("IntOf absent: %v %v", ok, err)
	}
	// A row whose default fails its own check, or a name given twice, is
	// refused when the registry is built.
	saved, savedB := byName, byBroker
	defer func() { byName, byBroker = saved, savedB }()
	byName, byBroker = map[string]*Def{}, map[string]*Def{}
	if err := index([]Def{{Name: "x", Type: Long, Default: "10", Min: 0, Max: 5}}); err == nil {
		t.Error("bad default accepted")
	}
	byName = map[string]*Def{}
	if err := index([]Def{{Name: "x", Type: Long, Default: "1", Max: 5}, {Name: "x", Type: Long, Default: "1", Max: 5}}); err == nil {
		t.Error("duplicate accepted")
	}
}

func TestIcebergPartitionSpec(t *testing.T) {
	for in, want := range map[string]string{
		"hour(aerostream.timestamp)":                         "hour(aerostream.timestamp)",
		" DAY( aerostream.timestamp ), aerostream.partition": "day(aerostream.timestamp),aerostream.partition",
		"bucket[16](aerostream.key)":                         "bucket[16](aerostream.key)",
		"":                                                   "none",
		"none":                                               "none",
	} {
		if got, err := CheckOne(IcebergPartitionSpec, in, false); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"hour(aerostream.timestamp", "minute(x)", "bucket[0](x)", "hour()", "a b"} {
		if _, err := CheckOne(IcebergPartitionSpec, bad, false); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	for _, mode := range []string{"value_schema_id_prefix", "value_schema_latest"} {
		if _, err := CheckOne(IcebergMode, mode, false); err != nil {
			t.Errorf("schema mode %s refused: %v", mode, err)
		}
	}
}
