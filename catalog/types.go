package catalog

import (
	"fmt"
	"log/slog"
)

// State is a segment's place in its lifecycle. The numbering is stored in
// records, so values are never renumbered; new states are appended.
type State uint8

const (
	// StateActive: the segment the partition is appending to.
	StateActive State = iota + 1
	// StateSealed: rolled, immutable, local only, waiting for tierd.
	StateSealed
	// StateUploading: tierd has staged it and an upload may be in flight; a
	// restart resumes the upload under the same SegmentID.
	StateUploading
	// StateRemote: only the cloud copy exists; the local files were evicted.
	StateRemote
	// StateLocalRemote: uploaded and verified, local copy still present.
	StateLocalRemote
	// StateDeleting: retention decided to drop it; objects and files are being
	// removed and the record goes last, so a crash leaves it findable.
	StateDeleting
)

// stateMax is the highest State a record may hold; decoders reject anything
// above it so a newer binary's state is never misread as an older one.
const stateMax = StateDeleting

// String returns the name used in logs and the tier CLI.
func (s State) String() string {
	switch s {
	case StateActive:
		return "active"
	case StateSealed:
		return "sealed"
	case StateUploading:
		return "uploading"
	case StateRemote:
		return "remote"
	case StateLocalRemote:
		return "local+remote"
	case StateDeleting:
		return "deleting"
	default:
		return fmt.Sprintf("State(%d)", uint8(s))
	}
}

// Valid reports whether s is one of the defined states.
func (s State) Valid() bool { return s >= StateActive && s <= stateMax }

// Segment is one segment record. Topic, Partition and BaseOffset form the key;
// the rest is the value.
type Segment struct {
	Topic      string
	Partition  int32
	BaseOffset int64
	// EndOffset is the offset after the last record (exclusive), so an empty
	// segment has EndOffset == BaseOffset.
	EndOffset    int64
	Bytes        int64
	MinTimestamp int64
	MaxTimestamp int64
	State        State
	LocalPath    string

	// Cloud pointer, filled by the tiering daemon.
	SegmentID  string
	ObjectKey  string
	ObjectSize int64
	Checksum   string
	ETag       string
	Epoch      int32
	UploadedAt int64 // unix nanos, 0 if never uploaded

	// maxTsRecord is the offset of the first record holding MaxTimestamp,
	// plus one, so that the zero value (any record built without it, or
	// written before it was kept) means unknown.
	maxTsRecord int64
}

// MaxTimestampOffset returns the offset of the first record holding
// MaxTimestamp, which ListOffsets(MAX_TIMESTAMP) answers with, when known.
func (s *Segment) MaxTimestampOffset() (int64, bool) {
	return s.maxTsRecord - 1, s.maxTsRecord > 0
}

// SetMaxTimestampOffset records the offset of the first record holding
// MaxTimestamp; a negative offset records it as unknown.
func (s *Segment) SetMaxTimestampOffset(off int64) {
	s.maxTsRecord = max(off+1, 0)
}

// Partition is one partition record.
type Partition struct {
	Topic          string
	Partition      int32
	LogStartOffset int64
	// Config is opaque to the catalog and owned by logstore. An empty Config
	// reads back as nil.
	Config    []byte
	CreatedAt int64 // unix nanos
}

// Options configure Open and OpenRaftStore.
type Options struct {
	// Logger receives the catalog's own events and pebble's, the latter at
	// debug level. Nil means slog.Default().
	Logger *slog.Logger
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}
