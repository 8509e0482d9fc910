package tierd

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/aerostream/aerostream/tierd/objstore"
	"github.com/aerostream/aerostream/tierd/segobj"
)

// The read half of `tier restore`: what the bucket holds of a topic, as
// manifests a fresh node can rebuild its catalog from.
//
// A manifest trails the uploads it describes: it is rewritten by the
// flusher up to ManifestInterval after each upload, and uploads run in
// parallel. A node lost in that window leaves segments in the bucket that
// no manifest lists. Those are the newest data of their partition and the
// only copy of it, so restore takes them too (reading each object once to
// learn what the manifest would have said), rather than leave them for
// `tier gc` to delete as orphans.

// Gap is a range of offsets [From, To) of a restored partition that no
// segment in the bucket holds: a later segment's upload finished and an
// earlier one's did not before the node was lost.
type Gap struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// Manifests reads the manifests of every partition of topic found in the
// bucket, sorted by partition. It is the read half of `tier restore`; the
// caller recreates the partitions from them.
func (d *Daemon) Manifests(ctx context.Context, topic string) ([]Manifest, error) {
	return ReadManifests(ctx, d.opts.Bucket, topic)
}

// ReadManifests is Manifests without a daemon, for a node that is being
// restored. Each partition's manifest is completed with the segments the
// bucket holds beyond it (Manifest.Unlisted counts them, Manifest.Gaps
// names what is missing between them). A partition with segments but no
// manifest yet gets one; partitions below the highest one found that have
// no object at all come back empty, so the topic keeps its partition count.
func ReadManifests(ctx context.Context, b objstore.Bucket, topic string) ([]Manifest, error) {
	type found struct {
		manifest bool
		objects  map[string]objstore.ObjectInfo // segment files by key
	}
	parts := map[int32]*found{}
	for info, err := range b.List(ctx, topic+"/") {
		if err != nil {
			return nil, err
		}
		k, ok := parseKey(info.Key)
		if !ok || k.topic != topic {
			continue
		}
		f := parts[k.partition]
		if f == nil {
			f = &found{objects: map[string]objstore.ObjectInfo{}}
			parts[k.partition] = f
		}
		if k.ext == "manifest.json" {
			f.manifest = true
		} else {
			f.objects[info.Key] = info
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	top := int32(-1)
	for p := range parts {
		top = max(top, p)
	}
	out := make([]Manifest, 0, top+1)
	for p := int32(0); p <= top; p++ {
		m := Manifest{Version: manifestVersion, Topic: topic, Partition: p, Segments: []ManifestSegment{}}
		f := parts[p]
		if f == nil {
			out = append(out, m)
			continue
		}
		if f.manifest {
			key := manifestKey(topic, p)
			body, err := readAll(ctx, b, key)
			if err != nil {
				return nil, err
			}
			if m, err = decodeManifest(body); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if m.Topic != topic || m.Partition != p {
				return nil, fmt.Errorf("%w: %s describes %s/%d", ErrBadManifest, key, m.Topic, m.Partition)
			}
		}
		if err := completeManifest(ctx, b, &m, f.manifest, f.objects); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// completeManifest appends to m the segments in objects that lie beyond its
// last one: bundled objects, and legacy segments whose .log, .index and
// .timeindex are all there (tierd uploaded the .log last, so its presence
// meant the upload had finished).
// Segments below the manifest's end are left out: they are leftovers of a
// deletion (retention removes a segment from the manifest before its
// objects), or a second copy of a listed one, and `tier gc` removes them.
func completeManifest(ctx context.Context, b objstore.Bucket, m *Manifest, hadManifest bool, objects map[string]objstore.ObjectInfo) error {
	listed := make(map[string]bool, len(m.Segments))
	for _, s := range m.Segments {
		listed[s.ObjectKey] = true
	}
	next := m.LogStartOffset
	if n := len(m.Segments); n > 0 {
		next = m.Segments[n-1].EndOffset
	}
	type candidate struct {
		key  parsedKey
		info objstore.ObjectInfo
	}
	var cands []candidate
	for key, info := range objects {
		k, _ := parseKey(key)
		if !segobj.IsSegment(key) || listed[key] || hadManifest && k.base < next {
			continue
		}
		complete := true
		for _, part := range segobj.Objects(key) {
			_, ok := objects[part]
			complete = complete && ok
		}
		if !complete {
			continue
		}
		cands = append(cands, candidate{k, info})
	}
	// By base; of two uploads of one base (a segment re-uploaded under a
	// new id), the newer first.
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].key.base != cands[j].key.base {
			return cands[i].key.base < cands[j].key.base
		}
		return cands[i].info.LastModified.After(cands[j].info.LastModified)
	})
	started := hadManifest
	for _, c := range cands {
		if started && c.key.base < next {
			continue // overlaps one taken already
		}
		s, err := scanSegment(ctx, b, c.info, c.key)
		if err != nil {
			return fmt.Errorf("restore %s/%d: segment %s is in the bucket but in no manifest, and cannot be read: %w",
				m.Topic, m.Partition, c.info.Key, err)
		}
		if !started {
			next, m.LogStartOffset, started = c.key.base, c.key.base, true
		}
		if c.key.base > next {
			m.Gaps = append(m.Gaps, Gap{From: next, To: c.key.base})
		}
		m.Segments = append(m.Segments, s)
		m.Unlisted++
		next = s.EndOffset
	}
	return nil
}

// The RecordBatch v2 fields scanSegment reads. logstore owns the format;
// tierd does not import logstore (doc.go), so it reads the few it needs.
const (
	batchPrefix     = 12 // base offset (int64), batch length (int32)
	batchHeaderSize = 61
	batchMagicAt    = 16
	batchCRCAt      = 17 // CRC32C of everything from the attributes on
	batchCRCFrom    = 21
	batchLastDelta  = 23 // int32
	batchMaxTsAt    = 35 // int64
)

// scanSegment reads a segment's object once, checking every batch of its
// log (length, magic, CRC32C, rising offsets) and a bundle's indexes, and
// returns the manifest entry tierd would have written for it: offsets,
// timestamps as the log computes them (from the batches' max timestamps),
// and the object's CRC32C.
func scanSegment(ctx context.Context, b objstore.Bucket, info objstore.ObjectInfo, k parsedKey) (ManifestSegment, error) {
	s := ManifestSegment{BaseOffset: k.base, EndOffset: k.base, Bytes: info.Size, MinTimestamp: -1, MaxTimestamp: -1,
		SegmentID: k.id, ObjectKey: info.Key, ObjectSize: info.Size, ETag: info.ETag}
	if !info.LastModified.IsZero() {
		s.UploadedAt = info.LastModified.UnixNano()
	}
	bundled := segobj.IsBundle(info.Key)
	if bundled {
		// The trailer says where the log ends.
		t, err := readTrailer(ctx, b, info)
		if err != nil {
			return s, err
		}
		s.Bytes = t.LogBytes
	}
	rc, err := b.GetRange(ctx, info.Key, 0, -1)
	if err != nil {
		return s, err
	}
	defer rc.Close()
	h := crc32.New(castagnoli)
	r := bufio.NewReaderSize(io.TeeReader(rc, h), 1<<20)
	var buf []byte
	var pos int64
	for pos < s.Bytes {
		var prefix [batchPrefix]byte
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return s, fmt.Errorf("batch at byte %d: %w", pos, truncated(err))
		}
		size := int64(int32(binary.BigEndian.Uint32(prefix[8:]))) + int64(len(prefix))
		if size < batchHeaderSize || pos+size > s.Bytes {
			return s, fmt.Errorf("%w: batch at byte %d claims %d bytes of the log's %d", ErrBadSegment, pos, size, s.Bytes)
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		copy(buf, prefix[:])
		if _, err := io.ReadFull(r, buf[len(prefix):]); err != nil {
			return s, fmt.Errorf("batch at byte %d: %w", pos, truncated(err))
		}
		if m := buf[batchMagicAt]; m != 2 {
			return s, fmt.Errorf("%w: batch at byte %d has magic %d, want 2", ErrBadSegment, pos, m)
		}
		if want, got := binary.BigEndian.Uint32(buf[batchCRCAt:]), crc32.Checksum(buf[batchCRCFrom:], castagnoli); got != want {
			return s, fmt.Errorf("%w: batch at byte %d has CRC32C %08x, header says %08x", ErrBadSegment, pos, got, want)
		}
		base := int64(binary.BigEndian.Uint64(buf))
		lastDelta := int64(int32(binary.BigEndian.Uint32(buf[batchLastDelta:])))
		if base < s.EndOffset || lastDelta < 0 {
			return s, fmt.Errorf("%w: batch at byte %d holds offsets %d..%d, after %d", ErrBadSegment, pos, base, base+lastDelta, s.EndOffset)
		}
		if ts := int64(binary.BigEndian.Uint64(buf[batchMaxTsAt:])); ts >= 0 {
			if s.MinTimestamp < 0 || ts < s.MinTimestamp {
				s.MinTimestamp = ts
			}
			s.MaxTimestamp = max(s.MaxTimestamp, ts)
		}
		s.EndOffset = base + lastDelta + 1
		pos += size
	}
	rest, err := io.ReadAll(io.LimitReader(r, maxTail))
	if err != nil {
		return s, fmt.Errorf("after the log: %w", err)
	}
	if pos += int64(len(rest)); pos != info.Size {
		return s, fmt.Errorf("read %d bytes, the bucket lists %d", pos, info.Size)
	}
	if bundled {
		if _, _, err := segobj.SplitTail(rest, s.Bytes); err != nil {
			return s, err
		}
	} else if len(rest) > 0 {
		return s, fmt.Errorf("%w: %d bytes after the last batch", ErrBadSegment, len(rest))
	}
	s.Checksum = objstore.FormatCRC32C(h.Sum32())
	if info.Checksum != "" && info.Checksum != s.Checksum {
		return s, fmt.Errorf("%w: read %s, the bucket lists %s", ErrVerify, s.Checksum, info.Checksum)
	}
	return s, nil
}

// readTrailer GETs the trailer of the bundled object info and checks it
// against the object's size.
func readTrailer(ctx context.Context, b objstore.Bucket, info objstore.ObjectInfo) (segobj.Trailer, error) {
	if info.Size < segobj.TrailerSize {
		return segobj.Trailer{}, fmt.Errorf("%w: %d bytes, too short for a trailer", segobj.ErrBadObject, info.Size)
	}
	rc, err := b.GetRange(ctx, info.Key, info.Size-segobj.TrailerSize, segobj.TrailerSize)
	if err != nil {
		return segobj.Trailer{}, err
	}
	defer rc.Close()
	var buf [segobj.TrailerSize]byte
	if _, err := io.ReadFull(rc, buf[:]); err != nil {
		return segobj.Trailer{}, fmt.Errorf("trailer: %w", err)
	}
	t, err := segobj.ParseTrailer(buf[:])
	if err == nil && t.ObjectSize() != info.Size {
		err = fmt.Errorf("%w: the trailer gives %d bytes, the bucket lists %d", segobj.ErrBadObject, t.ObjectSize(), info.Size)
	}
	return t, err
}

// truncated names an object that ends inside a batch, or before its
// listed size.
func truncated(err error) error {
	switch err {
	case io.ErrUnexpectedEOF:
		return fmt.Errorf("%w: the object ends inside the batch", ErrBadSegment)
	case io.EOF:
		return fmt.Errorf("%w: the object ends before the length it is listed with", ErrBadSegment)
	}
	return err
}
