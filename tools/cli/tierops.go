package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aerostream/aerostream/catalog"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/logstore"
	"github.com/aerostream/aerostream/tierd"
)

// tierOps implements the HTTP tier API's operations over this process's
// store, catalog and tiering daemon.
type tierOps struct {
	st     *logstore.Store
	cat    *catalog.Catalog
	tier   *tierStack // nil when tiered storage is disabled
	logger *slog.Logger
	// restore recreates a topic's metadata after its partitions were
	// restored (the controller, when one runs); nil = store only.
	restore func(ctx context.Context, topic string, partitions int32) error
}

var _ gwhttp.TierOps = (*tierOps)(nil)

func (o *tierOps) daemon() (*tierd.Daemon, error) {
	if o.tier == nil || o.tier.daemon == nil {
		return nil, gwhttp.ErrTierDisabled
	}
	return o.tier.daemon, nil
}

func viewOf(r catalog.Segment) gwhttp.SegmentView {
	v := gwhttp.SegmentView{Topic: r.Topic, Partition: r.Partition, BaseOffset: r.BaseOffset, EndOffset: r.EndOffset,
		Bytes: r.Bytes, MinTimestamp: r.MinTimestamp, MaxTimestamp: r.MaxTimestamp, State: r.State.String(),
		LocalPath: r.LocalPath, SegmentID: r.SegmentID, ObjectKey: r.ObjectKey, ObjectSize: r.ObjectSize,
		Checksum: r.Checksum, ETag: r.ETag, Epoch: r.Epoch}
	switch {
	case r.LocalPath != "" && r.ObjectKey != "":
		v.Location = "local+remote"
	case r.ObjectKey != "":
		v.Location = "remote"
	default:
		v.Location = "local"
	}
	if r.UploadedAt > 0 {
		v.UploadedAt = time.Unix(0, r.UploadedAt).UTC().Format(time.RFC3339)
	}
	return v
}

func (o *tierOps) Segments(ctx context.Context, topic string, partition int32) ([]gwhttp.SegmentView, error) {
	parts, err := o.cat.Partitions()
	if err != nil {
		return nil, err
	}
	out := []gwhttp.SegmentView{}
	topicSeen, partSeen := false, false
	for _, p := range parts {
		if topic != "" && p.Topic != topic {
			continue
		}
		topicSeen = true
		if partition >= 0 && p.Partition != partition {
			continue
		}
		partSeen = true
		recs, err := o.st.Segments(ctx, p.Topic, p.Partition)
		if err != nil {
			return nil, err
		}
		// The catalog records the active segment when it is created and
		// again when it seals, not on every append; its live end and size
		// come from the partition.
		info, ierr := o.st.DescribePartition(ctx, p.Topic, p.Partition)
		var sealedLocal int64
		for _, rec := range recs {
			if rec.State != catalog.StateActive && rec.LocalPath != "" {
				sealedLocal += rec.Bytes
			}
		}
		for _, rec := range recs {
			v := viewOf(rec)
			if rec.State == catalog.StateActive && ierr == nil {
				v.EndOffset, v.Bytes = info.LogEndOffset, info.Size-sealedLocal
			}
			out = append(out, v)
		}
	}
	switch {
	case topic != "" && !topicSeen:
		return nil, fmt.Errorf("%w %q: this store holds no partition of it", gwhttp.ErrUnknownTopic, topic)
	case partition >= 0 && !partSeen && topic != "":
		return nil, fmt.Errorf("%w %s/%d: this store does not hold it", gwhttp.ErrUnknownPartition, topic, partition)
	case partition >= 0 && !partSeen:
		return nil, fmt.Errorf("%w %d: this store holds it for no topic", gwhttp.ErrUnknownPartition, partition)
	}
	return out, nil
}

func (o *tierOps) Segment(_ context.Context, topic string, partition int32, base int64) (gwhttp.SegmentView, error) {
	rec, err := o.cat.GetSegment(topic, partition, base)
	if errors.Is(err, catalog.ErrNotFound) {
		return gwhttp.SegmentView{}, fmt.Errorf("%w %s/%d@%d (tier ls lists the segments and their base offsets)",
			gwhttp.ErrUnknownSegment, topic, partition, base)
	}
	if err != nil {
		return gwhttp.SegmentView{}, err
	}
	return viewOf(rec), nil
}

func (o *tierOps) Verify(ctx context.Context, topic string, progress gwhttp.Progress) ([]gwhttp.VerifyResult, error) {
	d, err := o.daemon()
	if err != nil {
		return nil, err
	}
	res, err := d.Verify(ctx, topic, progress)
	out := make([]gwhttp.VerifyResult, len(res))
	for i, r := range res {
		out[i] = gwhttp.VerifyResult{Topic: r.Topic, Partition: r.Partition, Base: r.Base, ObjectKey: r.ObjectKey, OK: r.OK, Problem: r.Problem}
	}
	return out, err
}

// Offload seals the active segment of every partition (of one topic, or
// all), queues their upload and waits until the queue is empty.
func (o *tierOps) Offload(ctx context.Context, topic string, progress gwhttp.Progress) (gwhttp.OffloadResult, error) {
	var res gwhttp.OffloadResult
	d, err := o.daemon()
	if err != nil {
		return res, err
	}
	infos, err := o.st.ListPartitions(ctx)
	if err != nil {
		return res, err
	}
	for _, p := range infos {
		if topic != "" && p.Topic != topic {
			continue
		}
		if err := o.st.RollPartition(ctx, p.Topic, p.Partition); err != nil {
			return res, err
		}
		res.PartitionsRolled++
	}
	if topic != "" && res.PartitionsRolled == 0 {
		return res, fmt.Errorf("%w %q: this store holds no partition of it", gwhttp.ErrUnknownTopic, topic)
	}
	d.Rescan(ctx)
	total := d.Backlog()
	res.Jobs = total
	dctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	drained := make(chan error, 1)
	go func() { drained <- d.Drain(dctx) }()
	for {
		select {
		case err := <-drained:
			if err == nil {
				err = o.st.RunRetention(ctx)
			}
			progress(total, total)
			return res, err
		case <-tick.C:
			progress(total-d.Backlog(), total)
		}
	}
}

func (o *tierOps) Rehydrate(ctx context.Context, topic string, partition int32, from int64, progress gwhttp.Progress) (gwhttp.RehydrateResult, error) {
	d, err := o.daemon()
	if err != nil {
		return gwhttp.RehydrateResult{}, err
	}
	n, err := d.Rehydrate(ctx, o.st, topic, partition, from, progress)
	return gwhttp.RehydrateResult{Segments: n}, err
}

func (o *tierOps) GC(ctx context.Context, dryRun bool, minAge time.Duration) (gwhttp.GCResult, error) {
	res := gwhttp.GCResult{DryRun: dryRun}
	d, err := o.daemon()
	if err != nil {
		return res, err
	}
	orphans, err := d.GC(ctx, dryRun, minAge)
	for _, or := range orphans {
		res.Orphans = append(res.Orphans, gwhttp.Orphan{Key: or.Key, Size: or.Size, LastModified: or.LastModified, Deleted: or.Deleted})
	}
	return res, err
}

// Restore rebuilds a topic's partitions on this (empty) node from the
// bucket: its manifests and the segments uploaded after them
// (tierd.ReadManifests).
func (o *tierOps) Restore(ctx context.Context, topic string, progress gwhttp.Progress) (gwhttp.RestoreResult, error) {
	var res gwhttp.RestoreResult
	d, err := o.daemon()
	if err != nil {
		return res, err
	}
	ms, err := d.Manifests(ctx, topic)
	if err == nil && len(ms) == 0 {
		err = fmt.Errorf("nothing of topic %q in the bucket: no manifest, no segment", topic)
	}
	if err != nil {
		return res, err
	}
	for i, m := range ms {
		if err := o.st.RestorePartition(ctx, m.Topic, m.Partition, logstore.PartitionConfig{}, m.LogStartOffset, m.Records()); err != nil {
			return res, fmt.Errorf("restore %s/%d: %w", m.Topic, m.Partition, err)
		}
		res.Segments += len(m.Segments)
		res.UnlistedSegments += m.Unlisted
		res.Gaps += len(m.Gaps)
		if m.Unlisted > 0 {
			o.logger.Info("tier restore: segments newer than their manifest taken from the bucket",
				"topic", m.Topic, "partition", m.Partition, "segments", m.Unlisted)
		}
		for _, g := range m.Gaps {
			o.logger.Warn("tier restore: offsets missing from the bucket; consumers skip them",
				"topic", m.Topic, "partition", m.Partition, "from", g.From, "to", g.To)
		}
		progress(i+1, len(ms))
	}
	res.Partitions = len(ms)
	if o.restore != nil {
		if err := o.restore(ctx, topic, int32(len(ms))); err != nil {
			return res, fmt.Errorf("register topic %s: %w", topic, err)
		}
	}
	return res, nil
}
