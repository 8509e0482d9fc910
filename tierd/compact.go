package tierd

import (
	"context"
	"time"

	"github.com/aerostream/aerostream/catalog"
)

// Compacted topics in the bucket. The log cleaner rewrites local segments
// that may be in the bucket already; a rewritten segment gets a new
// segment id and is sealed again, so the upload path puts it under a new
// name, and the objects of what it replaced reach Replaced. They are
// deleted once Options.ReplacedGrace has passed, so a compacted topic
// takes about its compacted size in the bucket rather than growing with
// every version of every key. Until then the manifest, rewritten from the
// catalog after each upload and deletion, no longer names them, while a
// reader that took the old record (a cold fetch in flight, a follower
// between two manifest reads) still finds them. A crash before the grace
// ends leaves them unreferenced, for `tier gc`.

// replacedObjects is a replaced segment's objects and when they may go.
type replacedObjects struct {
	rec catalog.Segment
	due time.Time
}

// Replaced queues the deletion of the objects of a segment the log
// cleaner has replaced (logstore.ReplacedTier). It does not block.
func (d *Daemon) Replaced(seg catalog.Segment) {
	if seg.ObjectKey == "" {
		return
	}
	d.replaced.Lock()
	d.replaced.list = append(d.replaced.list, replacedObjects{rec: seg, due: time.Now().Add(d.opts.ReplacedGrace)})
	d.replaced.Unlock()
}

// PendingReplaced is how many replaced segments' objects wait for their
// grace period to end.
func (d *Daemon) PendingReplaced() int {
	d.replaced.Lock()
	defer d.replaced.Unlock()
	return len(d.replaced.list)
}

// deleteReplaced deletes the replaced objects whose grace has ended by
// now. A deletion that fails is tried again at the next call.
func (d *Daemon) deleteReplaced(ctx context.Context, now time.Time) {
	d.replaced.Lock()
	var due []replacedObjects
	keep := d.replaced.list[:0]
	for _, r := range d.replaced.list {
		if now.Before(r.due) {
			keep = append(keep, r)
		} else {
			due = append(due, r)
		}
	}
	d.replaced.list = keep
	d.replaced.Unlock()
	var retry []replacedObjects
	for _, r := range due {
		if ctx.Err() != nil {
			retry = append(retry, r)
			continue
		}
		// The leader deletes; a follower's pointers name its leader's
		// objects, which are the leader's to replace.
		if acc, _, err := d.access(ctx, r.rec.Topic, r.rec.Partition); err == nil && acc != accessOwner {
			continue
		}
		if err := d.deleteObjects(ctx, r.rec.ObjectKey); err != nil {
			d.log.Warn("deleting a compacted segment's replaced objects; retrying", "object", r.rec.ObjectKey, "err", err)
			retry = append(retry, r)
			continue
		}
		d.opts.Metrics.deleted(r.rec.Topic)
		d.markManifest(r.rec.Topic, r.rec.Partition)
		d.log.Debug("replaced objects deleted", "topic", r.rec.Topic, "partition", r.rec.Partition, "object", r.rec.ObjectKey)
	}
	if len(retry) > 0 {
		d.replaced.Lock()
		d.replaced.list = append(d.replaced.list, retry...)
		d.replaced.Unlock()
	}
}
