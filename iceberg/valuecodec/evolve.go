package valuecodec

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Evolve merges fields (a Codec's columns) into the schema of the table
// txn changes, by name, with iceberg-go's union by name: a column the
// table lacks is added with a fresh id after the table's last column id;
// a column it has keeps its id, and its type may only widen (int to
// long, float to double, a decimal's precision); a column fields lack
// stays, and new rows hold null in it. So each registry version a topic
// sees evolves the table forward, and rows written under older versions
// read the newer columns as null. It returns the schema after the merge
// and whether it changed; an error wraps ErrEvolve and leaves txn as it
// was.
func Evolve(txn *table.Transaction, fields []iceberg.NestedField) (*iceberg.Schema, bool, error) {
	next := iceberg.NewSchema(0, fields...)
	// The probe only builds updates, so a merge that changes nothing
	// commits nothing; the UpdateSchema that commits is a second one,
	// since one may run its operations only once.
	updates, _, err := txn.UpdateSchema(true, false).UnionByNameWith(next).BuildUpdates()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrEvolve, err)
	}
	if len(updates) > 0 {
		if err := txn.UpdateSchema(true, false).UnionByNameWith(next).Commit(); err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrEvolve, err)
		}
	}
	st, err := txn.StagedTable()
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrEvolve, err)
	}
	return st.Schema(), len(updates) > 0, nil
}

// Merge is Evolve on a schema alone: base (a whole table schema) with
// fields merged by name, as the table would have it after Evolve. The
// schema modes keep the union of the versions they have seen with it.
func Merge(base *iceberg.Schema, fields []iceberg.NestedField) (*iceberg.Schema, bool, error) {
	md, err := table.NewMetadata(base, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "memory:///valuecodec", nil)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrEvolve, err)
	}
	return Evolve(table.New(table.Identifier{"valuecodec"}, md, "", nil, nil).NewTransaction(), fields)
}

// Covers says whether sc has a column for each of fields, of the same
// type or one it widens to: whether rows of a codec with those fields
// fit a table of schema sc without evolving it.
func Covers(sc *iceberg.Schema, fields []iceberg.NestedField) bool {
	return coversFields(sc.Fields(), fields)
}

func coversFields(have, want []iceberg.NestedField) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Name == w.Name {
				found = covers(h.Type, w.Type)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func covers(have, want iceberg.Type) bool {
	switch w := want.(type) {
	case *iceberg.StructType:
		h, ok := have.(*iceberg.StructType)
		return ok && coversFields(h.FieldList, w.FieldList)
	case *iceberg.ListType:
		h, ok := have.(*iceberg.ListType)
		return ok && covers(h.Element, w.Element)
	case *iceberg.MapType:
		h, ok := have.(*iceberg.MapType)
		return ok && h.KeyType.Equals(w.KeyType) && covers(h.ValueType, w.ValueType)
	}
	if have.Equals(want) {
		return true
	}
	switch w := want.(type) {
	case iceberg.Int32Type:
		_, ok := have.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := have.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		h, ok := have.(iceberg.DecimalType)
		return ok && h.Scale() == w.Scale() && h.Precision() >= w.Precision()
	}
	return false
}
