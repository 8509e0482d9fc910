package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// A create carries its request id into the FSM: the same id finds its own
// topic, another id finds TOPIC_ALREADY_EXISTS, and the record survives a
// snapshot and goes with a deletion.
func TestCreateRequestIDInFSM(t *testing.T) {
	f := NewFSM(nil)
	create := func(reqID string) *applyResult {
		return applyCmd(t, f, &cmdCreateTopics{RequestID: reqID, Topics: []cmdNewTopic{{Name: "t", ID: testID(), Partitions: 2, ReplicationFactor: 1}}})
	}
	first := create("req-1")
	if first.err != nil || first.items[0] != nil {
		t.Fatalf("create: %v %v", first.err, first.items)
	}
	again := create("req-1")
	if again.items[0] != nil || again.topics[0].ID != first.topics[0].ID || len(again.topics[0].Partitions) != 2 {
		t.Errorf("retry with the same request id: %v %+v, want the first create's topic %s", again.items[0], again.topics[0], first.topics[0].ID)
	}
	if r := create("req-2"); !errors.Is(r.items[0], ErrTopicExists) {
		t.Errorf("another request id: %v, want ErrTopicExists", r.items[0])
	}
	if r := create(""); !errors.Is(r.items[0], ErrTopicExists) {
		t.Errorf("no request id: %v, want ErrTopicExists", r.items[0])
	}
	if r := create(strings.Repeat("x", MaxRequestIDLen+1)); !errors.Is(r.err, ErrInvalidRequest) {
		t.Errorf("an overlong request id: %v", r.err)
	}

	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	r := applyCmd(t, g, &cmdCreateTopics{RequestID: "req-1", Topics: []cmdNewTopic{{Name: "t", ID: testID(), Partitions: 2, ReplicationFactor: 1}}})
	if r.items[0] != nil || r.topics[0].ID != first.topics[0].ID {
		t.Errorf("retry after a snapshot: %v %+v", r.items[0], r.topics[0])
	}

	applyCmd(t, g, &cmdDeleteTopics{Topics: []TopicRef{{Name: "t"}}})
	r = applyCmd(t, g, &cmdCreateTopics{RequestID: "req-3", Topics: []cmdNewTopic{{Name: "t", ID: testID(), Partitions: 1, ReplicationFactor: 1}}})
	if r.items[0] != nil {
		t.Fatal(r.items[0])
	}
	if r := applyCmd(t, g, &cmdCreateTopics{RequestID: "req-1", Topics: []cmdNewTopic{{Name: "t", ID: testID(), Partitions: 2, ReplicationFactor: 1}}}); !errors.Is(r.items[0], ErrTopicExists) {
		t.Errorf("the deleted topic's request id on its successor: %v, want ErrTopicExists", r.items[0])
	}
}

// cutProxy forwards one client connection to target, and when the answer
// starts to come back hangs up on the client instead and reports it: the
// request took effect, the client never hears so. Later connections are
// refused, as by a dead host.
type cutProxy struct {
	ln  net.Listener
	cut chan struct{}
	wg  sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, cut: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		client, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer client.Close()
		server, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer server.Close()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(server, client)
		}()
		var b [1]byte
		if n, _ := server.Read(b[:]); n > 0 {
			client.Close()
			close(p.cut)
		}
	}()
	return p
}

func (p *cutProxy) close() {
	p.ln.Close()
	p.wg.Wait()
}

// The defect: the leader commits a create and dies before it
// answers. The client must retry on the other controllers and report the
// create as done, not as failed and not as TOPIC_ALREADY_EXISTS.
func TestCreateSurvivesLeaderDeath(t *testing.T) {
	nodes := startNetCluster(t, 3)
	info, err := nodes[0].c.ClusterInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var leader *netNode
	addrs := []string{""}
	for _, nd := range nodes {
		if nd.addr == info.LeaderAddr {
			leader = nd
		} else {
			addrs = append(addrs, nd.addr)
		}
	}
	proxy := newCutProxy(t, leader.addr)
	defer proxy.close()
	addrs[0] = proxy.ln.Addr().String()
	cl := NewClient(addrs, ClientOptions{Timeout: 30 * time.Second, Logger: testLogger(t)})
	defer cl.Close()

	killed := make(chan struct{})
	go func() {
		defer close(killed)
		select {
		case <-proxy.cut:
		case <-time.After(30 * time.Second):
			return
		}
		_ = leader.c.Close()
	}()
	resp, err := cl.CreateTopics(context.Background(), CreateTopicsRequest{Topics: []NewTopic{{Name: "committed", Partitions: 3, ReplicationFactor: 1}}})
	<-killed
	leader.c = nil
	select {
	case <-proxy.cut:
	default:
		t.Fatal("the proxy never cut the answer: the test did not exercise a lost answer")
	}
	if err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	if e := resp.Topics[0].Err(); e != nil {
		t.Fatalf("create whose answer was lost: %v", e)
	}
	md, err := cl.Metadata(context.Background(), MetadataRequest{Topics: []string{"committed"}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata: %+v %v", md, err)
	}
	if md.Topics[0].ID != resp.Topics[0].ID || len(resp.Topics[0].Partitions) != 3 {
		t.Errorf("answered topic %s with %d partitions; the cluster has %s", resp.Topics[0].ID, len(resp.Topics[0].Partitions), md.Topics[0].ID)
	}
	// A second create of the same name, as anyone else would send it, is
	// still refused.
	resp, err = cl.CreateTopics(context.Background(), CreateTopicsRequest{Topics: []NewTopic{{Name: "committed", Partitions: 3, ReplicationFactor: 1}}})
	if err != nil || !errors.Is(resp.Topics[0].Err(), ErrTopicExists) {
		t.Errorf("a new create of the same name: %+v %v", resp, err)
	}
}
