package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Two nodes configured with one id: the one that registers second is told
// so, by a sentinel and a message that names the holder; the node itself
// restarting at the same addresses, or at new ones once its old session
// has expired, gets in.
func TestRegistrationClash(t *testing.T) {
	mc := newMemCluster(t, 1, nil, nil)
	l := mc.leader()
	ctx := context.Background()
	storeAt := func(addr string) RegisterNodeRequest {
		return RegisterNodeRequest{ID: 5, Kind: KindStore, Shards: 1, RingAddr: addr, Addresses: map[string]string{"ring": addr}}
	}
	if _, err := l.c.RegisterNode(ctx, storeAt("10.0.0.1:7005")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  RegisterNodeRequest
		want string
	}{
		{storeAt("10.0.0.2:7005"), "held by a live store at 10.0.0.1:7005"},
		{RegisterNodeRequest{ID: 5, Kind: KindGateway, Addresses: map[string]string{"kafka": "10.0.0.3:9092"}}, "registered to a store at 10.0.0.1:7005"},
	} {
		_, err := l.c.RegisterNode(ctx, tc.req)
		if !errors.Is(err, ErrNodeIDInUse) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("register %s at %v: %v, want ErrNodeIDInUse saying %q", tc.req.Kind, tc.req.Addresses, err, tc.want)
		}
	}
	if n, _ := l.c.fsm.Node(5); n.Ring.Address != "10.0.0.1:7005" {
		t.Errorf("a refused registration changed the node: %+v", n)
	}
	if _, err := l.c.RegisterNode(ctx, storeAt("10.0.0.1:7005")); err != nil {
		t.Errorf("the same node registering again: %v", err)
	}

	// A member that keeps being refused gives up with the clash.
	mctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := RunMember(mctx, l.c, MemberOptions{
		Registration: RegisterNodeRequest{ID: 5, Kind: KindGateway, Addresses: map[string]string{"kafka": "10.0.0.3:9092"}},
		ClashTimeout: 200 * time.Millisecond,
		Logger:       testLogger(t),
	})
	if !errors.Is(err, ErrNodeIDInUse) {
		t.Errorf("RunMember with a clashing id: %v, want ErrNodeIDInUse", err)
	}

	// Once the holder's session has expired, the id moves.
	waitFor(t, 10*time.Second, "node 5 down", func() bool {
		n, _ := l.c.fsm.Node(5)
		return !n.Live
	})
	if _, err := l.c.RegisterNode(ctx, storeAt("10.0.0.2:7005")); err != nil {
		t.Errorf("registering at new addresses after the old session expired: %v", err)
	}
	mc.stop(l)
}
