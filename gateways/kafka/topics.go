package kafka

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// offsetsTopic is the internal topic the group coordinator writes committed
// offsets to.
const offsetsTopic = "__consumer_offsets"

// IsInternalTopic reports the topics the gateway itself owns
// (__consumer_offsets, __producer_ids): clients may read them, but not
// write or delete them. A Cluster marks them Internal.
func IsInternalTopic(name string) bool {
	return name == offsetsTopic || name == producerIDsTopic
}

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

// topicLookup caches the topics one request names, so a request with many
// partitions of a topic asks the Cluster once.
type topicLookup struct {
	g      *Gateway
	ctx    context.Context
	byName map[string]topicOrErr
}

type topicOrErr struct {
	t   *Topic
	err error
}

func (g *Gateway) lookup(ctx context.Context) *topicLookup {
	return &topicLookup{g: g, ctx: ctx, byName: map[string]topicOrErr{}}
}

func (l *topicLookup) topic(name string) (*Topic, error) {
	if e, ok := l.byName[name]; ok {
		return e.t, e.err
	}
	t, err := l.g.cluster.Topic(l.ctx, name)
	e := topicOrErr{err: err}
	if err == nil {
		e.t = &t
	}
	l.byName[name] = e
	return e.t, e.err
}

// partition resolves a topic's partition and checks the client's current
// leader epoch (-1: no check).
func (l *topicLookup) partition(name string, partition, currentEpoch int32) (*Topic, error) {
	t, err := l.topic(name)
	if err != nil {
		return nil, err
	}
	return t, checkPartition(t, partition, currentEpoch)
}

func checkPartition(t *Topic, partition, currentEpoch int32) error {
	switch {
	case partition < 0 || partition >= t.Partitions:
		return fmt.Errorf("%w: %s has %d partitions", kerr.UnknownTopicOrPartition, t.Name, t.Partitions)
	case currentEpoch >= 0 && currentEpoch > t.LeaderEpoch(partition):
		return kerr.UnknownLeaderEpoch
	case currentEpoch >= 0 && currentEpoch < t.LeaderEpoch(partition):
		return kerr.FencedLeaderEpoch
	}
	return nil
}

// parallel runs fn(0..n-1) concurrently and waits; one call runs inline.
func parallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}
