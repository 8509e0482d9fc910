package tierd

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// Manifest is a partition's manifest.json: every segment that has a cloud
// copy, with what the catalog knows of it. It is written after every change
// (upload, remote deletion) and is enough to rebuild the partition's catalog
// on an empty node.
type Manifest struct {
	Version        int               `json:"version"`
	Topic          string            `json:"topic"`
	Partition      int32             `json:"partition"`
	LogStartOffset int64             `json:"log_start_offset"`
	Segments       []ManifestSegment `json:"segments"`

	// What ReadManifests found beyond the stored manifest; never stored.
	// Unlisted counts the segments appended from the bucket's listing, Gaps
	// the offsets missing between them.
	Unlisted int   `json:"-"`
	Gaps     []Gap `json:"-"`
}

// ManifestSegment is one uploaded segment.
type ManifestSegment struct {
	BaseOffset   int64  `json:"base_offset"`
	EndOffset    int64  `json:"end_offset"`
	Bytes        int64  `json:"bytes"`
	MinTimestamp int64  `json:"min_timestamp"`
	MaxTimestamp int64  `json:"max_timestamp"`
	SegmentID    string `json:"segment_id"`
	ObjectKey    string `json:"object_key"`
	ObjectSize   int64  `json:"object_size"`
	Checksum     string `json:"checksum"`
	ETag         string `json:"etag,omitempty"`
	Epoch        int32  `json:"epoch"`
	UploadedAt   int64  `json:"uploaded_at"`
	// MaxTimestampOffset is the offset of the first record holding
	// MaxTimestamp (ListOffsets MAX_TIMESTAMP answers with it); absent in
	// manifests written before it was kept, and when a restore rebuilt the
	// entry from the object alone.
	MaxTimestampOffset *int64 `json:"max_timestamp_offset,omitempty"`
}

const manifestVersion = 1

// buildManifest makes the manifest of a partition from its catalog records:
// those with a cloud pointer that are not being deleted.
func buildManifest(topic string, partition int32, logStart int64, recs []catalog.Segment) Manifest {
	m := Manifest{Version: manifestVersion, Topic: topic, Partition: partition, LogStartOffset: logStart,
		Segments: []ManifestSegment{}}
	for _, r := range recs {
		if r.ObjectKey == "" || r.State == catalog.StateDeleting {
			continue
		}
		s := ManifestSegment{BaseOffset: r.BaseOffset, EndOffset: r.EndOffset, Bytes: r.Bytes,
			MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp, SegmentID: r.SegmentID, ObjectKey: r.ObjectKey,
			ObjectSize: r.ObjectSize, Checksum: r.Checksum, ETag: r.ETag, Epoch: r.Epoch, UploadedAt: r.UploadedAt}
		if off, ok := r.MaxTimestampOffset(); ok {
			s.MaxTimestampOffset = &off
		}
		m.Segments = append(m.Segments, s)
	}
	return m
}

// decodeManifest parses and checks a manifest: known version, segments
// ascending, each ending after the previous one, keys that belong to the
// partition.
func decodeManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if m.Version != manifestVersion {
		return m, fmt.Errorf("%w: version %d", ErrBadManifest, m.Version)
	}
	if m.Topic == "" || m.Partition < 0 {
		return m, fmt.Errorf("%w: topic %q partition %d", ErrBadManifest, m.Topic, m.Partition)
	}
	if !sort.SliceIsSorted(m.Segments, func(i, j int) bool { return m.Segments[i].BaseOffset < m.Segments[j].BaseOffset }) {
		return m, fmt.Errorf("%w: segments out of order", ErrBadManifest)
	}
	for i, s := range m.Segments {
		if s.EndOffset < s.BaseOffset || s.Bytes < 0 || s.ObjectSize < 0 {
			return m, fmt.Errorf("%w: segment %d has offsets %d..%d, %d bytes", ErrBadManifest, i, s.BaseOffset, s.EndOffset, s.Bytes)
		}
		// A leader that took over from another one uploads whole a segment
		// of its own whose start the cold tier already held (replicas roll
		// on their own), so a segment may start inside the previous one;
		// it must still end after it, or it would hold nothing new.
		if i > 0 && s.BaseOffset < m.Segments[i-1].EndOffset &&
			(s.BaseOffset <= m.Segments[i-1].BaseOffset || s.EndOffset <= m.Segments[i-1].EndOffset) {
			return m, fmt.Errorf("%w: segment at %d overlaps the previous one", ErrBadManifest, s.BaseOffset)
		}
		k, ok := parseKey(s.ObjectKey)
		if !ok || k.topic != m.Topic || k.partition != m.Partition || k.base != s.BaseOffset || !segobj.IsSegment(s.ObjectKey) {
			return m, fmt.Errorf("%w: object key %q does not name segment %d of %s/%d", ErrBadManifest, s.ObjectKey, s.BaseOffset, m.Topic, m.Partition)
		}
		if segobj.IsBundle(s.ObjectKey) && s.ObjectSize > 0 && s.ObjectSize < s.Bytes+segobj.TrailerSize {
			return m, fmt.Errorf("%w: segment %d: a %d-byte log does not fit its %d-byte object", ErrBadManifest, s.BaseOffset, s.Bytes, s.ObjectSize)
		}
	}
	return m, nil
}

// records turns a manifest back into catalog records (state remote).
func (m Manifest) records() []catalog.Segment {
	out := make([]catalog.Segment, 0, len(m.Segments))
	for _, s := range m.Segments {
		r := catalog.Segment{Topic: m.Topic, Partition: m.Partition, BaseOffset: s.BaseOffset,
			EndOffset: s.EndOffset, Bytes: s.Bytes, MinTimestamp: s.MinTimestamp, MaxTimestamp: s.MaxTimestamp,
			State: catalog.StateRemote, SegmentID: s.SegmentID, ObjectKey: s.ObjectKey, ObjectSize: s.ObjectSize,
			Checksum: s.Checksum, ETag: s.ETag, Epoch: s.Epoch, UploadedAt: s.UploadedAt}
		if o := s.MaxTimestampOffset; o != nil && *o >= s.BaseOffset && *o < s.EndOffset {
			r.SetMaxTimestampOffset(*o)
		}
		out = append(out, r)
	}
	return out
}
