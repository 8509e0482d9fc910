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
