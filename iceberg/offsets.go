package iceberg

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// SummaryOffsets is the snapshot summary property that carries, as a JSON
// object, every partition's next offset to translate ("0": 1200, ...).
// Every snapshot AeroStream commits carries it; a commit that is not a
// translation (maintenance) copies the current value forward unchanged.
const SummaryOffsets = "aerostream.offsets"

// Offsets maps a partition to the next offset to translate: every offset
// below it is in the table (or was skipped for a reason logged then).
type Offsets map[int32]int64

// Clone copies o.
func (o Offsets) Clone() Offsets { return maps.Clone(o) }

// String is the summary property's value: a JSON object with the
// partitions in ascending order.
func (o Offsets) String() string {
	parts := slices.Sorted(maps.Keys(o))
	b := []byte{'{'}
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, strconv.Itoa(int(p)))
		b = append(b, ':')
		b = strconv.AppendInt(b, o[p], 10)
	}
	return string(append(b, '}'))
}

// ParseOffsets reads a summary property value.
func ParseOffsets(s string) (Offsets, error) {
	var raw map[string]int64
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrOffsets, s, err)
	}
	out := make(Offsets, len(raw))
	for k, v := range raw {
		p, err := strconv.ParseInt(k, 10, 32)
		if err != nil || p < 0 {
			return nil, fmt.Errorf("%w: partition %q is not a partition number", ErrOffsets, k)
		}
		if v < 0 {
			return nil, fmt.Errorf("%w: partition %s has negative offset %d", ErrOffsets, k, v)
		}
		out[int32(p)] = v
	}
	return out, nil
}

// SnapshotOffsets reads the offsets of snap's summary; ok is false when
// the snapshot does not carry them.
func SnapshotOffsets(snap *table.Snapshot) (o Offsets, ok bool, err error) {
	if snap == nil || snap.Summary == nil {
		return nil, false, nil
	}
	v, ok := snap.Summary.Properties[SummaryOffsets]
	if !ok {
		return nil, false, nil
	}
	o, err = ParseOffsets(v)
	return o, err == nil, err
}

// TableOffsets reads the offsets of meta's current snapshot, walking back
// through its parents when a snapshot lacks the property (one committed by
// a tool that does not copy it forward). A table with no snapshot carrying
// them (new, or never translated) gives empty Offsets.
func TableOffsets(meta table.Metadata) (Offsets, error) {
	seen := 0
	for snap := meta.CurrentSnapshot(); snap != nil && seen < 10000; seen++ {
		o, ok, err := SnapshotOffsets(snap)
		if err != nil {
			return nil, err
		}
		if ok {
			return o, nil
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return Offsets{}, nil
}

// CarryOffsets returns the snapshot properties a non-translation commit
// (compaction, expiry) must add so the new snapshot keeps the table's
// offsets, and its fence (fence.go): nil when the table has no offsets
// yet.
func CarryOffsets(meta table.Metadata) (map[string]string, error) {
	o, err := TableOffsets(meta)
	if err != nil || len(o) == 0 {
		return nil, err
	}
	props := map[string]string{SummaryOffsets: o.String()}
	if f, ok := TableFence(meta); ok {
		maps.Copy(props, f.props())
	}
	return props, nil
}
