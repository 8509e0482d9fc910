package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// unstableOffsets is the group coordinator's memory of the transactions
// that committed offsets for its groups (TxnOffsetCommit) and may not have
// ended yet, for OffsetFetch with RequireStable (KIP-447): while such a
// transaction is open or prepared its partitions answer
// UNSTABLE_OFFSET_COMMIT, as Kafka does, so a member that takes a
// partition over from a zombie, or from a member whose commit the
// transaction coordinator (possibly another gateway) is still applying,
// does not resume from the offset before that commit.
type unstableOffsets struct {
	mu     sync.Mutex
	groups map[string]map[string]txnOffsetsOpen // group -> transactional id -> its commit
}

// txnOffsetsOpen is the partitions a transaction of producer pid at epoch
// committed offsets for.
type txnOffsetsOpen struct {
	pid   int64
	epoch int16
	parts map[tp]struct{}
}

// note remembers a TxnOffsetCommit that was accepted.
func (u *unstableOffsets) note(group, id string, pid int64, epoch int16, offs map[tp]committed) {
	if len(offs) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.groups == nil {
		u.groups = map[string]map[string]txnOffsetsOpen{}
	}
	ids := u.groups[group]
	if ids == nil {
		ids = map[string]txnOffsetsOpen{}
		u.groups[group] = ids
	}
	o, ok := ids[id]
	if !ok || o.pid != pid || o.epoch != epoch {
		o = txnOffsetsOpen{pid: pid, epoch: epoch, parts: map[tp]struct{}{}}
	}
	for k := range offs {
		o.parts[k] = struct{}{}
	}
	ids[id] = o
}

// unstableParts returns the partitions of group whose offsets a
// transaction that has not ended yet committed, forgetting the
// transactions that ended.
func (g *Gateway) unstableParts(ctx context.Context, group string) (map[tp]bool, error) {
	u := &g.txns.unstable
	u.mu.Lock()
	open := make(map[string]txnOffsetsOpen, len(u.groups[group]))
	for id, o := range u.groups[group] {
		open[id] = o
	}
	u.mu.Unlock()
	var out map[tp]bool
	for id, o := range open {
		ended, err := g.txns.ended(ctx, id, o.pid, o.epoch)
		if err != nil {
			return nil, err
		}
		if ended {
			u.mu.Lock()
			if cur, ok := u.groups[group][id]; ok && cur.pid == o.pid && cur.epoch == o.epoch {
				delete(u.groups[group], id)
				if len(u.groups[group]) == 0 {
					delete(u.groups, group)
				}
			}
			u.mu.Unlock()
			continue
		}
		if out == nil {
			out = map[tp]bool{}
		}
		for k := range o.parts {
			out[k] = true
		}
	}
	return out, nil
}

// ended reports whether the transaction of id's producer pid at epoch has
// ended, committed (its offsets applied to their groups first) or
// aborted, reading id's partition of __transaction_state up to date: any
// gateway may ask, whichever coordinates id. Transactions v2 bump the
// epoch at the prepare, so the transaction is still open at its own epoch
// and prepared at the next one.
func (c *txnCoordinator) ended(ctx context.Context, id string, pid int64, epoch int16) (bool, error) {
	if err := c.readyErr(); err != nil {
		return false, err
	}
	if err := c.ensure(ctx); err != nil {
		return false, err
	}
	if err := c.catchUp(ctx, c.partitionFor(id)); err != nil {
		return false, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.mu.txns[id]
	if m == nil {
		return true, nil // expired: nothing open
	}
	v := c.viewLocked(m)
	if v.pid != pid {
		return true, nil
	}
	prepared := v.state == txnPrepareCommit || v.state == txnPrepareAbort
	switch v.epoch {
	case epoch:
		return !(prepared || v.state == txnOngoing), nil
	case epoch + 1:
		return !prepared, nil
	}
	return true, nil
}
