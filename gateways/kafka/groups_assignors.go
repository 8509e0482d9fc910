package kafka

import (
	"maps"
	"slices"
	"sort"
)

// Server-side assignors for KIP-848 consumer groups, as Kafka 4.x names
// them: "uniform" (the default) and "range". They are pure functions of
// the members' subscriptions, the partition counts and (for uniform) the
// current assignment, so every coordinator computes the same target.

// topicParts is an assignment: partitions by topic name, each list sorted.
type topicParts map[string][]int32

// assignMember is what an assignor sees of a member.
type assignMember struct {
	id      string
	topics  []string   // resolved subscription, topic names
	current topicParts // what the member owns now (for stickiness)
}

// assignor computes a target assignment: members by id, topic partition
// counts for every subscribed topic that exists.
type assignor func(members []assignMember, counts map[string]int32) map[string]topicParts

// assignors are the server assignors served, by name.
var assignors = map[string]assignor{
	"uniform": assignUniform,
	"range":   assignRange,
}

// defaultAssignor is group.consumer.assignors' first entry in Kafka.
const defaultAssignor = "uniform"

type partKey struct {
	topic string
	part  int32
}

// assignUniform spreads partitions evenly over the members subscribed to
// them while keeping partitions where they are: current owners keep what
// they may still own, free partitions go to the least loaded eligible
// member, then partitions move from a member with two or more than
// another eligible member until no such pair is left. Every move lowers
// the sum of squared loads, so the loop ends; with equal subscriptions
// every member ends with floor or ceil of partitions/members.
func assignUniform(members []assignMember, counts map[string]int32) map[string]topicParts {
	ms := slices.Clone(members)
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	subs := make(map[string]map[string]bool, len(ms))
	eligible := map[string][]string{} // topic -> member ids (sorted)
	for _, m := range ms {
		s := map[string]bool{}
		for _, t := range m.topics {
			if _, ok := counts[t]; ok && !s[t] {
				s[t] = true
				eligible[t] = append(eligible[t], m.id)
			}
		}
		subs[m.id] = s
	}
	owner := map[partKey]string{}
	load := map[string]int{}
	for _, m := range ms {
		load[m.id] += 0
		for t, ps := range m.current {
			if !subs[m.id][t] {
				continue
			}
			for _, p := range ps {
				k := partKey{t, p}
				if p < 0 || p >= counts[t] {
					continue
				}
				if _, taken := owner[k]; taken {
					continue
				}
				owner[k] = m.id
				load[m.id]++
			}
		}
	}
	var all []partKey
	for _, t := range slices.Sorted(maps.Keys(counts)) {
		if len(eligible[t]) == 0 {
			continue
		}
		for p := int32(0); p < counts[t]; p++ {
			all = append(all, partKey{t, p})
		}
	}
	least := func(t string) string {
		best := ""
		for _, id := range eligible[t] {
			if best == "" || load[id] < load[best] {
				best = id
			}
		}
		return best
	}
	for _, k := range all {
		if _, ok := owner[k]; ok {
			continue
		}
		id := least(k.topic)
		owner[k] = id
		load[id]++
	}
	for moved := true; moved; {
		moved = false
		for _, k := range all {
			from := owner[k]
			to := least(k.topic)
			if load[from] > load[to]+1 {
				owner[k] = to
				load[from]--
				load[to]++
				moved = true
			}
		}
	}
	out := make(map[string]topicParts, len(ms))
	for _, m := range ms {
		out[m.id] = topicParts{}
	}
	for _, k := range all {
		out[owner[k]][k.topic] = append(out[owner[k]][k.topic], k.part)
	}
	return out
}

// assignRange gives each member a contiguous range of every topic it
// subscribes to, members in id order, the first ones one partition more
// when the count does not divide evenly: the co-partitioning that joins
// of topics with equal partition counts rely on.
func assignRange(members []assignMember, counts map[string]int32) map[string]topicParts {
	out := make(map[string]topicParts, len(members))
	byTopic := map[string][]string{}
	for _, m := range members {
		out[m.id] = topicParts{}
		seen := map[string]bool{}
		for _, t := range m.topics {
			if _, ok := counts[t]; ok && !seen[t] {
				seen[t] = true
				byTopic[t] = append(byTopic[t], m.id)
			}
		}
	}
	for t, ids := range byTopic {
		sort.Strings(ids)
		n, k := int(counts[t]), len(ids)
		start := 0
		for i, id := range ids {
			size := n / k
			if i < n%k {
				size++
			}
			for p := start; p < start+size; p++ {
				out[id][t] = append(out[id][t], int32(p))
			}
			start += size
		}
	}
	return out
}

// Set operations on assignments.

func (a topicParts) has(t string, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

// minus is what a has that b does not.
func (a topicParts) minus(b topicParts) topicParts {
	out := topicParts{}
	for t, ps := range a {
		for _, p := range ps {
			if !b.has(t, p) {
				out[t] = append(out[t], p)
			}
		}
	}
	return out
}

// intersect is what both have.
func (a topicParts) intersect(b topicParts) topicParts {
	out := topicParts{}
	for t, ps := range a {
		for _, p := range ps {
			if b.has(t, p) {
				out[t] = append(out[t], p)
			}
		}
	}
	return out
}

// union adds b to a copy of a.
func (a topicParts) union(b topicParts) topicParts {
	out := topicParts{}
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	for t, ps := range b {
		for _, p := range ps {
			if !out.has(t, p) {
				out[t] = append(out[t], p)
				slices.Sort(out[t])
			}
		}
	}
	return out
}

func (a topicParts) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a topicParts) equal(b topicParts) bool {
	return a.size() == b.size() && a.minus(b).size() == 0
}
