package clustertest

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The nemesis injects faults into the stores one at a time, at seeded
// random moments: kill -9 (the store restarts on the same data dir) or
// SIGSTOP for 1 to 4 s then SIGCONT. Between faults it waits, bounded,
// until the cluster has healed (every store live, every partition led and
// its ISR full), so that each fault hits a cluster that can survive it.

type faultKind string

const (
	faultKill  faultKind = "kill -9"
	faultPause faultKind = "SIGSTOP"
	// faultDouble is a plan entry, two faults: kill -9 a store, then,
	// while it is down, pause the store that took over its leadership, so
	// that a partition runs on its last in-sync replica and the killed
	// store comes back to a log that moved on twice.
	faultDouble faultKind = "kill -9, then SIGSTOP of the successor"
)

// fault is one injected fault, as the report lists it.
type fault struct {
	n        int
	kind     faultKind
	store    int32
	leaderOf []int32 // partitions the store led when hit
	chosenAs string  // "leader of pN" or "random store"
	at       time.Time
	down     time.Duration
	// epochs are the leader epochs of leaderOf when the store was hit.
	epochs map[int32]int32
	// failover per partition the killed store led: from the kill to the
	// first acknowledged write on that partition by its successor;
	// missing when none came within the bound. The nemesis measures it
	// live as the first ack after the controller showed a new leader;
	// successorFailover makes it exact from the epochs in the log.
	failover map[int32]time.Duration
	// elected is when the controller's metadata first showed each
	// partition's new leader, after the kill: a slow failover with an
	// early election lies in the data path, not the controller.
	elected map[int32]time.Duration
	note    string
}

func (f fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fault %d: %s store %d (%s; leader of %v), down %v", f.n, f.kind, f.store, f.chosenAs, f.leaderOf, f.down.Round(time.Millisecond))
	if f.kind == faultKill && len(f.leaderOf) > 0 {
		var parts []string
		for _, p := range f.leaderOf {
			part := fmt.Sprintf("p%d none", p)
			if d, ok := f.failover[p]; ok {
				part = fmt.Sprintf("p%d %v", p, d.Round(time.Millisecond))
			}
			if e, ok := f.elected[p]; ok {
				part += fmt.Sprintf(" (elected by %v)", e.Round(10*time.Millisecond))
			}
			parts = append(parts, part)
		}
		fmt.Fprintf(&b, "; failover %s", strings.Join(parts, ", "))
	}
	if f.note != "" {
		b.WriteString("; " + f.note)
	}
	return b.String()
}

type nemesis struct {
	t     *testing.T
	c     *cluster
	topic string
	rf    int
	rng   *rand.Rand
	probe *probe
	// bounds
	faults      int
	deadline    time.Time
	healTimeout time.Duration
	failoverMax time.Duration
}

// run injects n.faults faults in a seeded order and returns them: one in
// six in double faults, the rest half kills and half pauses. At least half
// target a partition's leader.
func (n *nemesis) run(ctx context.Context) []fault {
	var kinds []faultKind
	doubles := n.faults / 12
	for i := 0; i < doubles; i++ {
		kinds = append(kinds, faultDouble)
	}
	for i := 0; i < n.faults-2*doubles; i++ {
		kinds = append(kinds, []faultKind{faultKill, faultPause}[i%2])
	}
	n.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var done []fault
	unhealed := 0
	for _, kind := range kinds {
		if ctx.Err() != nil || time.Now().After(n.deadline) {
			n.t.Logf("nemesis: stopped after %d faults (time bound)", len(done))
			break
		}
		note := ""
		if msg := n.c.tryWait(n.healTimeout, func() (bool, string) { return n.healed() }); msg != "" {
			note = "cluster not healed before it: " + msg
			// A cluster that no longer heals would only pile faults on
			// faults: stop, and let the checker judge what was written.
			if unhealed++; unhealed == 3 {
				n.t.Logf("nemesis: stopped after %d faults: the cluster did not heal within %v three times in a row; %s", len(done), n.healTimeout, msg)
				break
			}
		} else {
			unhealed = 0
		}
		// A random moment: up to 2 s after the cluster healed.
		select {
		case <-ctx.Done():
			continue
		case <-time.After(time.Duration(200+n.rng.Intn(1800)) * time.Millisecond):
		}
		fs := n.inject(len(done)+1, kind)
		if note != "" {
			fs[0].note = strings.TrimSpace(fs[0].note + " " + note)
		}
		for _, f := range fs {
			n.t.Log(f.String())
		}
		done = append(done, fs...)
	}
	return done
}

// healed: every store live, every partition with a live leader and a full
// ISR.
func (n *nemesis) healed() (bool, string) {
	if ok, msg := n.c.membersLive(); !ok {
		return false, msg
	}
	return n.c.healthy(n.topic, n.rf)
}

// inject injects one plan entry: one fault, or two for faultDouble.
func (n *nemesis) inject(num int, kind faultKind) []fault {
	md, err := n.c.metadata()
	if err != nil {
		n.t.Logf("nemesis: controller metadata: %v", err)
	}
	lead, epochs := leaders(md, n.topic), leaderEpochs(md, n.topic)
	f := fault{n: num, kind: kind, failover: map[int32]time.Duration{}, epochs: map[int32]int32{}, elected: map[int32]time.Duration{}}
	if kind == faultDouble {
		f.kind = faultKill
	}
	var extra []fault
	// Three faults in four go to the leader of a random partition.
	var parts []int32
	for p := range lead {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	if num%4 != 0 && len(parts) > 0 {
		p := parts[n.rng.Intn(len(parts))]
		if l := lead[p]; n.c.stores[l] != nil {
			f.store, f.chosenAs = l, fmt.Sprintf("leader of p%d", p)
		}
	}
	if f.store == 0 {
		ids := sortedIDs(n.c.stores)
		f.store, f.chosenAs = ids[n.rng.Intn(len(ids))], "random store"
	}
	for _, p := range parts {
		if lead[p] == f.store {
			f.leaderOf = append(f.leaderOf, p)
			f.epochs[p] = epochs[p]
		}
	}
	s := n.c.stores[f.store]
	switch kind {
	case faultKill, faultDouble:
		f.at = time.Now()
		s.kill()
		// The store stays down until every partition it led has a new
		// leader in the controller's metadata and took a write after
		// that, and at least 1 to 4 s, at most failoverMax.
		minDown := time.Duration(1000+n.rng.Intn(3000)) * time.Millisecond
		pending := slices.Clone(f.leaderOf)
		elected := map[int32]time.Time{}
		limit := time.Now().Add(n.failoverMax)
		for {
			if len(pending) > 0 {
				if md, err := n.c.metadata(); err == nil {
					lead, epochs := leaders(md, n.topic), leaderEpochs(md, n.topic)
					for _, p := range pending {
						if _, ok := elected[p]; !ok && lead[p] != f.store && lead[p] >= 0 && epochs[p] > f.epochs[p] {
							elected[p] = time.Now()
							f.elected[p] = elected[p].Sub(f.at)
						}
					}
				}
			}
			pending = slices.DeleteFunc(pending, func(p int32) bool {
				e, ok := elected[p]
				if !ok {
					return false
				}
				// The first ack after the kill that is not an answer the
				// dead leader sent before it died: one after the new
				// leader was seen, or one sent after the kill.
				if a, ok := n.probe.firstAckAfter(p, f.at, func(a probeAck) bool { return a.at.After(e) || a.at.Sub(f.at) > 100*time.Millisecond }); ok {
					f.failover[p] = a.at.Sub(f.at)
					return true
				}
				return false
			})
			if (len(pending) == 0 && time.Since(f.at) >= minDown) || time.Now().After(limit) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(pending) > 0 {
			f.note = fmt.Sprintf("no write acknowledged on %v within %v of the kill", pending, n.failoverMax)
		}
		if kind == faultDouble {
			extra = append(extra, n.pauseSuccessor(num+1, f))
		}
		f.down = time.Since(f.at)
		s.start(n.t)
	case faultPause:
		f.at = time.Now()
		n.pause(s)
		f.down = time.Since(f.at)
	}
	return append([]fault{f}, extra...)
}

// pause stops a store for 1 to 4 s.
func (n *nemesis) pause(s *proc) {
	s.signal(syscall.SIGSTOP)
	time.Sleep(time.Duration(1000+n.rng.Intn(3000)) * time.Millisecond)
	s.signal(syscall.SIGCONT)
}

// pauseSuccessor pauses, while the store of killed is still down, the
// store that now leads the first partition killed led (or any partition).
func (n *nemesis) pauseSuccessor(num int, killed fault) fault {
	f := fault{n: num, kind: faultPause, failover: map[int32]time.Duration{}, epochs: map[int32]int32{}}
	md, err := n.c.metadata()
	if err != nil {
		f.note = fmt.Sprintf("no successor paused: controller metadata: %v", err)
		return f
	}
	lead := leaders(md, n.topic)
	var parts []int32
	for p := range lead {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	parts = append(slices.Clone(killed.leaderOf), parts...)
	for _, p := range parts {
		if l := lead[p]; l != killed.store && n.c.stores[l] != nil {
			f.store, f.chosenAs = l, fmt.Sprintf("leader of p%d after store %d was killed, while it is down", p, killed.store)
			break
		}
	}
	if f.store == 0 {
		f.note = "no successor paused: no partition has a live leader"
		return f
	}
	for _, p := range parts[len(killed.leaderOf):] {
		if lead[p] == f.store {
			f.leaderOf = append(f.leaderOf, p)
		}
	}
	f.at = time.Now()
	n.pause(n.c.stores[f.store])
	f.down = time.Since(f.at)
	return f
}

// successorFailover recomputes each kill's failover from the log: the
// first probe write acknowledged after the kill whose batch carries a
// leader epoch above the one the dead store led with. It returns how many
// samples it could not place that way (batches without an epoch, or no
// such write), which keep the live measure.
func successorFailover(faults []fault, pr *probe, logs map[int32]Log) (exact, kept int) {
	epochAt := func(p int32, off int64) int32 {
		recs := logs[p].Records
		i := sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= off })
		if i < len(recs) && recs[i].Offset == off {
			return recs[i].Epoch
		}
		return -1
	}
	for i := range faults {
		f := &faults[i]
		if f.kind != faultKill {
			continue
		}
		for _, p := range f.leaderOf {
			a, ok := pr.firstAckAfter(p, f.at, func(a probeAck) bool { return epochAt(p, a.offset) > f.epochs[p] })
			if ok && epochAt(p, a.offset) >= 0 {
				f.failover[p] = a.at.Sub(f.at)
				exact++
			} else {
				kept++
			}
		}
	}
	return exact, kept
}

// failuresByFault attributes each failed write to the last fault injected
// before it was sent (or "before any fault"), with its partitions, so that
// a report says which fault made writes fail.
func failuresByFault(faults []fault, writes []Write) string {
	type agg struct {
		n     int
		parts map[int32]bool
		errs  map[string]bool
	}
	by := map[int]*agg{}
	for _, w := range writes {
		if w.Outcome == Acked || w.Err == "cancelled at the end of the run" {
			continue
		}
		k := 0
		for _, f := range faults {
			if !f.at.After(w.Sent) {
				k = f.n
			}
		}
		a := by[k]
		if a == nil {
			a = &agg{parts: map[int32]bool{}, errs: map[string]bool{}}
			by[k] = a
		}
		a.n++
		a.parts[w.Partition] = true
		a.errs[w.Err] = true
	}
	keys := make([]int, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var out []string
	for _, k := range keys {
		a := by[k]
		var parts []int32
		for p := range a.parts {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		var errs []string
		for e := range a.errs {
			errs = append(errs, e)
		}
		sort.Strings(errs)
		name := fmt.Sprintf("after fault %d", k)
		if k == 0 {
			name = "before any fault"
		}
		out = append(out, fmt.Sprintf("%s: %d on partitions %v (%s)", name, a.n, parts, strings.Join(errs, "; ")))
	}
	return strings.Join(out, "; ")
}

// failoverStats gives the p50 and max of the failover times of the kills
// of leaders, and how many leader kills saw no failover within the bound.
func failoverStats(faults []fault) (samples []time.Duration, missing int) {
	for _, f := range faults {
		if f.kind != faultKill {
			continue
		}
		for _, p := range f.leaderOf {
			if d, ok := f.failover[p]; ok {
				samples = append(samples, d)
			} else {
				missing++
			}
		}
	}
	slices.Sort(samples)
	return samples, missing
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)-1))
	return sorted[i]
}
