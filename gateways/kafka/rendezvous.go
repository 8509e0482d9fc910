package kafka

// Rendezvous (highest random weight) hashing of partitions over the live
// gateways, for Metadata's "leaders" and "replicas"; doc.go says why.
// Every gateway computes the same order from the same broker list, with
// no coordination, and a gateway joining or leaving moves only the
// partitions it gains or loses.

// topicHash is 64-bit FNV-1a of the topic name, computed once per topic.
func topicHash(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is SplitMix64's finalizer: every input bit moves every output bit,
// so consecutive partitions and node ids get unrelated weights.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// weight is gateway node's weight for partition p of the topic hashed th.
func weight(th uint64, p, node int32) uint64 {
	return mix64(th ^ mix64(uint64(uint32(p))<<32|uint64(uint32(node))))
}

// rendezvous appends to dst the ids of up to n of brokers, heaviest first,
// for partition p of the topic hashed th. Ties (which need a 64-bit
// collision) go to the lower node id.
func rendezvous(dst []int32, th uint64, p int32, brokers []Broker, n int) []int32 {
	n = min(n, len(brokers))
	var last uint64
	var lastID int32
	for k := 0; k < n; k++ {
		best, bestW := int32(-1), uint64(0)
		for _, b := range brokers {
			w := weight(th, p, b.NodeID)
			// Only brokers lighter than the previous pick remain (the
			// broker list is in node id order, with no duplicates).
			if k > 0 && (w > last || w == last && b.NodeID <= lastID) {
				continue
			}
			if best < 0 || w > bestW || w == bestW && b.NodeID < best {
				best, bestW = b.NodeID, w
			}
		}
		if best < 0 {
			break
		}
		dst = append(dst, best)
		last, lastID = bestW, best
	}
	return dst
}

// partitionLeader is the gateway Metadata names as the leader of (topic,
// p): the heaviest by rendezvous weight. Requests that must go to the
// leader (ShareFetch, ShareAcknowledge) check it and answer with it, so
// they agree with what clients were told.
func partitionLeader(topic string, p int32, brokers []Broker) int32 {
	var one [1]int32
	if ids := rendezvous(one[:0], topicHash(topic), p, brokers, 1); len(ids) == 1 {
		return ids[0]
	}
	return -1
}
