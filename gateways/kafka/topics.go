package kafka

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
)

// offsetsTopic is the internal topic the group coordinator writes committed
// offsets to.
const offsetsTopic = "__consumer_offsets"

// ValidTopicName reports whether Kafka allows name: 1-249 characters of
// [a-zA-Z0-9._-], and not "." or "..".
func ValidTopicName(name string) error {
	if name == "" || len(name) > 249 {
		return fmt.Errorf("%w: %q must be 1 to 249 characters long", ErrInvalidTopic, name)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; allowed are ASCII letters, digits, '.', '_' and '-'", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// brokers lists the live gateways, this one included, in node id order.
func (g *Gateway) brokers(ctx context.Context) []Broker {
	bs, err := g.cluster.Brokers(ctx)
	if err != nil {
		g.log.Warn("listing brokers", "err", err)
	}
	self := false
	for _, b := range bs {
		if b.NodeID == g.opts.NodeID {
			self = true
		}
	}
	if !self {
		bs = append(bs, Broker{NodeID: g.opts.NodeID, Host: g.host, Port: g.port, Rack: g.opts.Rack})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].NodeID < bs[j].NodeID })
	return bs
}

// leaderFor spreads partitions over the live gateways. Every gateway can
// serve every partition (they all reach the stores over the ring), so the
// "leader" only balances client connections; all gateways compute the same
// answer from the same broker list.
func leaderFor(topic string, partition int32, brokers []Broker) int32 {
	if len(brokers) == 1 {
		return brokers[0].NodeID
	}
	h := fnv.New32a()
	h.Write([]byte(topic))
	h.Write([]byte(strconv.Itoa(int(partition))))
	return brokers[h.Sum32()%uint32(len(brokers))].NodeID
}

// maxMessageBytes is the topic's max.message.bytes, or the broker default.
func (g *Gateway) maxMessageBytes(t *Topic) int {
	if v, ok := t.Configs["max.message.bytes"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
	}
	return int(g.opts.DefaultMaxMessageBytes)
}
