package iceberg

import (
	"errors"

	"github.com/aerostream/aerostream/iceberg/internal/recbatch"
)

// Sentinel errors. Callers test them with errors.Is; messages wrap them
// with the topic, table or key that was wrong.
var (
	// ErrConfig: an [iceberg] server setting or an iceberg.* topic config
	// that cannot work (unknown catalog kind, unparsable partition spec).
	ErrConfig = errors.New("iceberg: bad configuration")
	// ErrOffsets: a snapshot's aerostream.offsets summary property that
	// does not parse.
	ErrOffsets = errors.New("iceberg: bad offsets summary")
	// ErrBadRecord: record bytes that are not a well-formed RecordBatch v2.
	ErrBadRecord = recbatch.ErrBadRecord
	// ErrModeUnavailable: an iceberg.mode whose row source is not built
	// into this binary.
	ErrModeUnavailable = errors.New("iceberg: mode not available")
	// ErrUndecodable: a record that the topic's mode cannot turn into a
	// row; it goes to the DLQ table or is dropped.
	ErrUndecodable = errors.New("iceberg: record does not match its schema")
	// ErrSchemaChanged: a record written with a registry version whose
	// columns the builder's schema lacks; the committer evolves the table
	// with Mode.Schema and builds the record again (mode_schema.go).
	ErrSchemaChanged = errors.New("iceberg: the value schema gained columns")
	// ErrFenced: the table was committed under a newer leadership of the
	// topic's partition 0 than this committer's (fence.go).
	ErrFenced = errors.New("iceberg: a newer leader of partition 0 commits this table")
)
