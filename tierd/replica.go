package tierd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aerostream/aerostream/catalog"
	"github.com/aerostream/aerostream/tierd/objstore"
)

// Replicas is what tierd needs of replication (doc.go, "Replicas");
// *logstore.Store satisfies it. A Store without it is a single copy:
// every partition is uploaded as it seals.
type Replicas interface {
	// TierRole returns the partition's replication role ("leader",
	// "follower", "standalone" for a single copy, anything else for a
	// partition that waits for its role), its leader epoch, and its high
	// watermark.
	TierRole(ctx context.Context, topic string, partition int32) (role string, epoch int32, hw int64, err error)
	// AdoptRemote takes in the cold segments another store uploaded,
	// ascending; evictAll when this store has just become leader.
	AdoptRemote(ctx context.Context, topic string, partition int32, cold []catalog.Segment, evictAll bool) (int, error)
}

// Role names, as Replicas.TierRole returns them.
const (
	roleLeader     = "leader"
	roleFollower   = "follower"
	roleStandalone = "standalone"
)

// tierAccess is what this store may do with a partition's cold tier.
type tierAccess uint8

const (
	// accessOwner: upload, write the manifest, delete objects. A leader
	// has it once it has taken in the cold tier of its epoch.
	accessOwner tierAccess = iota
	// accessNone: leave the bucket alone (a follower, or a partition of a
	// cluster store with no role yet).
	accessNone
)

// access returns what this store may do with the partition's cold tier,
// taking it over first if it has just become leader. hw is the leader's
// high watermark (-1 when there is none to respect).
func (d *Daemon) access(ctx context.Context, topic string, partition int32) (tierAccess, int64, error) {
	rs, ok := d.opts.Store.(Replicas)
	if !ok {
		return accessOwner, -1, nil
	}
	role, epoch, hw, err := rs.TierRole(ctx, topic, partition)
	if err != nil {
		return accessNone, 0, err
	}
	switch role {
	case roleLeader:
		if err := d.takeOver(ctx, rs, topic, partition, epoch); err != nil {
			return accessNone, 0, err
		}
		return accessOwner, hw, nil
	case roleStandalone:
		return accessOwner, -1, nil
	}
	return accessNone, 0, nil
}

// takeOver makes this store the owner of a partition's cold tier for a
// leader epoch, once: it reads what earlier leaders uploaded (the manifest
// and any upload it does not list yet) and records it in the catalog, so
// that nothing they uploaded is uploaded again and nothing they uploaded
// is lost from the manifest this store will rewrite.
func (d *Daemon) takeOver(ctx context.Context, rs Replicas, topic string, partition int32, epoch int32) error {
	k := partKey{topic, partition}
	d.lead.Lock()
	done, had := d.lead.m[k]
	d.lead.Unlock()
	if had && done == epoch {
		return nil
	}
	mu := d.partitionLock(topic, partition)
	mu.Lock()
	defer mu.Unlock()
	d.lead.Lock()
	done, had = d.lead.m[k]
	d.lead.Unlock()
	if had && done == epoch {
		return nil
	}
	m, err := d.readCold(ctx, topic, partition, true)
	if err != nil {
		return fmt.Errorf("take over the cold tier of %s/%d at epoch %d: %w", topic, partition, epoch, err)
	}
	n, err := rs.AdoptRemote(ctx, topic, partition, m.records(), true)
	if err != nil {
		return fmt.Errorf("take over the cold tier of %s/%d at epoch %d: %w", topic, partition, epoch, err)
	}
	d.lead.Lock()
	d.lead.m[k] = epoch
	d.lead.Unlock()
	// Debug when there was nothing to take: every partition of a store
	// takes over at each start and each new epoch.
	lvl := slog.LevelInfo
	if len(m.Segments) == 0 {
		lvl = slog.LevelDebug
	}
	d.log.Log(ctx, lvl, "took over the cold tier", "topic", topic, "partition", partition, "epoch", epoch,
		"cold_segments", len(m.Segments), "evicted", n)
	if len(m.Segments) > 0 {
		d.markManifest(topic, partition)
	}
	// Segments sealed while this store followed were not queued: queue
	// the ones the cold tier does not hold.
	recs, err := d.opts.Catalog.Segments(topic, partition)
	if err != nil {
		return nil // the rescan finds them
	}
	for _, r := range recs {
		if r.State == catalog.StateSealed && r.ObjectKey == "" {
			d.Sealed(r)
		}
	}
	return nil
}

// readCold reads a partition's manifest; with complete, the segments
// uploaded beyond it too (a leader lost within ManifestInterval of its
// last uploads). No manifest and no object is an empty cold tier.
func (d *Daemon) readCold(ctx context.Context, topic string, partition int32, complete bool) (Manifest, error) {
	m := Manifest{Version: manifestVersion, Topic: topic, Partition: partition, Segments: []ManifestSegment{}}
	body, err := readAll(ctx, d.opts.Bucket, manifestKey(topic, partition))
	had := err == nil
	switch {
	case objstore.IsNotFound(err):
	case err != nil:
		return m, err
	default:
		if m, err = decodeManifest(body); err != nil {
			return m, fmt.Errorf("%s: %w", manifestKey(topic, partition), err)
		}
	}
	if !complete {
		return m, nil
	}
	objects := map[string]objstore.ObjectInfo{}
	for info, err := range d.opts.Bucket.List(ctx, fmt.Sprintf("%s/%d/", topic, partition)) {
		if err != nil {
			return m, err
		}
		if k, ok := parseKey(info.Key); ok && k.topic == topic && k.partition == partition && k.ext != "manifest.json" {
			objects[info.Key] = info
		}
	}
	return m, completeManifest(ctx, d.opts.Bucket, &m, had, objects)
}

// syncFollowers gives every partition this store follows the cloud
// pointers its leader has published in the manifest, which also lets its
// local retention evict what the cold tier holds; and takes over the cold
// tier of partitions it has come to lead with nothing to upload yet.
func (d *Daemon) syncFollowers(ctx context.Context) {
	rs, ok := d.opts.Store.(Replicas)
	if !ok {
		return
	}
	parts, err := d.opts.Catalog.Partitions()
	if err != nil {
		d.log.Error("follower sync: listing partitions", "err", err)
		return
	}
	for _, p := range parts {
		if ctx.Err() != nil {
			return
		}
		role, epoch, _, err := rs.TierRole(ctx, p.Topic, p.Partition)
		if err != nil {
			continue // deleted meanwhile, or the store is closing
		}
		switch role {
		case roleLeader:
			err = d.takeOver(ctx, rs, p.Topic, p.Partition, epoch)
		case roleFollower:
			err = d.syncFollower(ctx, rs, p.Topic, p.Partition)
		}
		if err != nil && ctx.Err() == nil {
			d.log.Warn("follower sync failed; retrying at the next one", "topic", p.Topic, "partition", p.Partition, "role", role, "err", err)
		}
	}
}

func (d *Daemon) syncFollower(ctx context.Context, rs Replicas, topic string, partition int32) error {
	d.lead.Lock()
	delete(d.lead.m, partKey{topic, partition}) // a later leadership takes over again
	d.lead.Unlock()
	m, err := d.readCold(ctx, topic, partition, false)
	if err != nil || len(m.Segments) == 0 {
		return err
	}
	_, err = rs.AdoptRemote(ctx, topic, partition, m.records(), false)
	return err
}

// holdForHW keeps a sealed segment that reaches past the leader's high
// watermark until the next follower sync: a record above it may not
// survive a change of leader, and the cold tier must hold only what every
// later leader will hold too.
func (d *Daemon) holdForHW(rec catalog.Segment) {
	d.mu.Lock()
	d.mu.held = append(d.mu.held, rec)
	d.mu.Unlock()
}

// releaseHeld queues the uploads holdForHW kept.
func (d *Daemon) releaseHeld() {
	d.mu.Lock()
	held := d.mu.held
	d.mu.held = nil
	d.mu.Unlock()
	for _, r := range held {
		d.Sealed(r)
	}
}
