package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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

// internalRF is the replication factor the gateway asks for its internal
// topics: Kafka's offsets.topic.replication.factor default.
const internalRF = 3

// createInternal creates an internal topic with as many replicas, up to
// internalRF, as the cluster has stores for: committed offsets and
// producer ids must survive the loss of a store where data does, while a
// one-store cluster (serve) still gets its topics. A refusal for the
// replication factor is the controller saying how many stores are live.
func (g *Gateway) createInternal(ctx context.Context, ct CreateTopic) (Topic, error) {
	ct.Internal = true
	for rf := int16(internalRF); ; rf-- {
		ct.ReplicationFactor = rf
		t, err := g.cluster.CreateTopic(ctx, ct)
		if rf == 1 || !errors.Is(err, ErrInvalidReplicationFactor) {
			return t, err
		}
	}
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
// The slice may be the snapshot's own: callers must not modify it.
func (g *Gateway) brokers(ctx context.Context) []Broker {
	m, err := g.cluster.Metadata(ctx)
	if err != nil {
		g.log.Warn("listing brokers", "err", err)
		return []Broker{g.self()}
	}
	return withSelf(m.Brokers(), g.self())
}

// self is this gateway as Metadata shows it.
func (g *Gateway) self() Broker {
	return Broker{NodeID: g.opts.NodeID, Host: g.host, Port: g.port, Rack: g.opts.Rack}
}

// withSelf returns bs (sorted by node id) with self added in order when it
// is missing, without writing into bs.
func withSelf(bs []Broker, self Broker) []Broker {
	i, found := slices.BinarySearchFunc(bs, self.NodeID, func(b Broker, id int32) int { return cmp.Compare(b.NodeID, id) })
	if found {
		return bs
	}
	out := make([]Broker, 0, len(bs)+1)
	out = append(out, bs[:i]...)
	out = append(out, self)
	return append(out, bs[i:]...)
}

// topicLookup resolves the topics of one request in one metadata
// snapshot, taken at the first lookup, so that all its partitions see the
// same metadata and no lookup takes a lock.
type topicLookup struct {
	g   *Gateway
	ctx context.Context
	md  *Metadata
	err error // from taking the snapshot
}

func (g *Gateway) lookup(ctx context.Context) *topicLookup {
	return &topicLookup{g: g, ctx: ctx}
}

func (l *topicLookup) topic(name string) (*Topic, error) {
	if l.md == nil && l.err == nil {
		l.md, l.err = l.g.cluster.Metadata(l.ctx)
	}
	if l.err != nil {
		return nil, l.err
	}
	if t, ok := l.md.Topic(name); ok {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
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
