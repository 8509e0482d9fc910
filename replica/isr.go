package replica

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aerostream/aerostream/controller"
	"github.com/aerostream/aerostream/logstore"
)

// alterResult is the controller's answer to one AlterPartition.
type alterResult struct {
	p      *part
	req    controller.AlterPartitionRequest
	expand bool
	info   controller.PartitionInfo
	err    error
}

// checkISR looks at the followers of every partition this store leads:
// a caught-up follower outside the ISR is added, an ISR member that has
// not caught up for the partition's replica.lag.time.max.ms is proposed
// out.
func (m *Manager) checkISR(ctx context.Context, wg *sync.WaitGroup) {
	// A store that leads only single-copy partitions (serve) has no
	// follower to look at: skip reading every partition's status.
	followed := false
	for _, p := range m.parts {
		if p.have != nil && p.have.Role == logstore.RoleLeader && len(p.have.Replicas) > 1 {
			followed = true
			break
		}
	}
	if !followed {
		return
	}
	statuses, err := m.opts.Store.ReplicaStatuses(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.rlog.Log(m.log, slog.LevelWarn, "statuses", "reading the followers' progress failed", "err", err)
		}
		return
	}
	now := time.Now()
	for i := range statuses {
		s := &statuses[i]
		if s.Role != logstore.RoleLeader {
			continue
		}
		p := m.parts[tp{s.Topic, s.Partition}]
		if p == nil || p.have == nil || p.have.Role != logstore.RoleLeader || p.altering ||
			s.LeaderEpoch != p.info.LeaderEpoch || p.info.Leader != m.opts.LocalID {
			continue
		}
		m.checkPartition(ctx, wg, p, s, now)
	}
}

func (m *Manager) checkPartition(ctx context.Context, wg *sync.WaitGroup, p *part, s *logstore.ReplicaStatus, now time.Time) {
	committed := p.info.ISR
	if len(committed) == 0 {
		committed = []int32{m.opts.LocalID}
	}
	local := p.have.ISR
	caughtUp := func(f logstore.FollowerStatus) bool {
		return f.LEO >= s.HighWatermark && !f.LastCaughtUp.IsZero() && now.Sub(f.LastCaughtUp) < p.lagMax
	}
	lagging := func(f logstore.FollowerStatus) bool {
		last := f.LastCaughtUp
		if last.Before(p.leaderSince) {
			last = p.leaderSince
		}
		return now.Sub(last) >= p.lagMax
	}

	// Expand: the followers that caught up join the local ISR at once,
	// then the controller is asked.
	var adds []int32
	for _, f := range s.Followers {
		// A store the controller holds down would be refused (it fenced
		// it), and asked again at every check: its last fetches can
		// still look caught up while nothing new is written.
		if !slices.Contains(local, f.ID) && caughtUp(f) && m.nodes[f.ID].live {
			adds = append(adds, f.ID)
		}
	}
	// A follower added locally that has since fallen behind for the whole
	// lag time was never committed (the view would have shown it by now):
	// it leaves the local ISR.
	var stale []int32
	for _, f := range s.Followers {
		if slices.Contains(p.added, f.ID) && lagging(f) {
			stale = append(stale, f.ID)
		}
	}
	if len(adds) > 0 || len(stale) > 0 {
		p.added = slices.DeleteFunc(slices.Clone(p.added), func(id int32) bool { return slices.Contains(stale, id) })
		p.added = append(p.added, adds...)
		p.addedAt, p.addSent = p.info.PartitionEpoch, false
		m.applyPart(ctx, p)
		if p.have == nil || p.have.Role != logstore.RoleLeader {
			return
		}
	}
	if len(p.added) > 0 && !p.addSent {
		isr := slices.Clone(committed)
		for _, id := range p.added {
			if !slices.Contains(isr, id) {
				isr = append(isr, id)
			}
		}
		m.alter(ctx, wg, p, isr, true)
		return
	}
	if len(p.added) > 0 {
		return // waiting for the view to show the committed expansion
	}

	// Shrink: only once the controller has committed it does the local
	// ISR lose the member, so the high watermark never passes a replica
	// the controller may still elect.
	var out []int32
	for _, id := range committed {
		if id == m.opts.LocalID {
			continue
		}
		for _, f := range s.Followers {
			if f.ID == id && lagging(f) {
				out = append(out, id)
			}
		}
	}
	if len(out) > 0 {
		isr := slices.DeleteFunc(slices.Clone(committed), func(id int32) bool { return slices.Contains(out, id) })
		m.alter(ctx, wg, p, isr, false)
	}
}

// alter sends an AlterPartition in the background; alterFinished gets the
// answer on Run's goroutine.
func (m *Manager) alter(ctx context.Context, wg *sync.WaitGroup, p *part, isr []int32, expand bool) {
	req := controller.AlterPartitionRequest{
		Topic: p.key.topic, Partition: p.key.partition,
		LeaderID: m.opts.LocalID, LeaderEpoch: p.info.LeaderEpoch, PartitionEpoch: p.info.PartitionEpoch,
		ISR: isr,
	}
	p.altering = true
	if expand {
		m.met.expands.Inc()
	} else {
		m.met.shrinks.Inc()
	}
	m.log.Info("proposing an ISR change", "topic", req.Topic, "partition", req.Partition,
		"from", p.info.ISR, "to", isr, "leader_epoch", req.LeaderEpoch, "partition_epoch", req.PartitionEpoch)
	wg.Add(1)
	go func() {
		defer wg.Done()
		actx, cancel := context.WithTimeout(ctx, m.opts.AlterTimeout)
		info, err := m.opts.Controller.AlterPartition(actx, req)
		cancel()
		select {
		case m.alterDone <- alterResult{p: p, req: req, expand: expand, info: info, err: err}:
		case <-ctx.Done():
		}
	}()
}

// alterFinished applies the controller's answer: a committed ISR becomes
// the partition's; a failed expansion is asked again at the next check
// (the follower stays in the local ISR meanwhile, as it may have been
// committed), a failed shrink is simply re-evaluated then.
func (m *Manager) alterFinished(ctx context.Context, r alterResult) {
	p := r.p
	p.altering = false
	if m.parts[p.key] != p {
		return // the partition went away meanwhile
	}
	if r.err != nil {
		if ctx.Err() == nil {
			m.rlog.Log(m.log, slog.LevelWarn, "alter:"+p.key.String(), "the controller did not change the ISR",
				"topic", p.key.topic, "partition", p.key.partition, "isr", r.req.ISR, "err", r.err)
		}
		switch {
		case !r.expand:
		case errors.Is(r.err, controller.ErrStaleRequest):
			// The partition moved on: the next view says where to.
			p.addSent = true
		case errors.Is(r.err, controller.ErrIneligibleReplica):
			// Refused outright, so never committed: the followers leave
			// the local ISR again.
			p.added, p.addSent = nil, false
			m.applyPart(ctx, p)
		}
		return
	}
	if r.info.LeaderEpoch == p.info.LeaderEpoch && r.info.PartitionEpoch > p.info.PartitionEpoch {
		info := r.info
		info.Replicas, info.ISR, info.TargetReplicas = slices.Clone(info.Replicas), slices.Clone(info.ISR), nil
		p.info = info
		p.added, p.addSent = nil, false
	} else if r.expand {
		p.addSent = true
	}
	m.log.Info("ISR changed", "topic", p.key.topic, "partition", p.key.partition, "isr", p.info.ISR,
		"partition_epoch", p.info.PartitionEpoch)
	m.applyPart(ctx, p)
}
