package controller

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The repro: one unauthenticated call naming an address where no
// controller runs must be refused, and the single voter must carry on
// taking writes.
func TestAddVoterRefusesAnAbsentController(t *testing.T) {
	nd := &netNode{id: 1, dir: filepath.Join(t.TempDir(), "raft")}
	startNetNode(t, nd, true, nil)
	defer func() { _ = nd.c.Close() }()
	waitFor(t, 20*time.Second, "leadership", nd.c.IsLeader)

	// A port nothing listens on, and one where something that is not a
	// controller accepts and hangs up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			conn, err := mute.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()

	for _, tc := range []struct {
		body, want string
	}{
		{`{"id":9,"address":"` + closed + `"}`, "does not answer"},
		{`{"id":9,"address":"` + mute.Addr().String() + `"}`, "does not answer"},
		{`{"id":9,"address":"` + nd.addr + `"}`, "is node 1, not 9"},
	} {
		hr, err := http.Post("http://"+nd.addr+pathAddVoter, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var eb notLeaderBody
		_ = json.NewDecoder(hr.Body).Decode(&eb)
		hr.Body.Close()
		if hr.StatusCode != http.StatusBadRequest || eb.Error == nil || eb.Error.Code != "INVALID_REQUEST" || !strings.Contains(eb.Error.Message, tc.want) {
			t.Errorf("add voter %s: HTTP %d %+v, want 400 INVALID_REQUEST %q", tc.body, hr.StatusCode, eb.Error, tc.want)
		}
	}
	info, err := nd.c.ClusterInfo(context.Background())
	if err != nil || len(info.Voters) != 1 || len(info.Joining) != 0 {
		t.Fatalf("configuration after refused adds: %+v %v", info, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := nd.c.CreateTopics(ctx, CreateTopicsRequest{Topics: []NewTopic{{Name: "still-works", Partitions: 1, ReplicationFactor: 1}}}); err != nil {
		t.Fatalf("create after refused adds: %v", err)
	}
}

// A controller that answers but never catches up (here: Raft cannot reach
// it) stays a non-voter, so the quorum stays the one voter and writes go
// on; it can be removed again.
func TestAddVoterPromotesOnlyCaughtUp(t *testing.T) {
	mc := newMemCluster(t, 1, nil, nil)
	mc.ghosts = map[string]ClusterInfo{"ghost": {NodeID: 9}}
	l := mc.leader()
	// Until the new leader has set the cluster id, the ghost's empty one
	// matches it, and with a log this short the ghost counts as caught up.
	waitFor(t, 10*time.Second, "cluster id set", func() bool { return l.c.fsm.ClusterID() != "" })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := l.c.AddVoter(ctx, AddVoterRequest{ID: 9, Address: "ghost"})
	cancel()
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "non-voter") {
		t.Fatalf("adding a controller that cannot catch up: %v, want ErrTimeout naming the non-voter", err)
	}
	info, err := l.c.ClusterInfo(context.Background())
	if err != nil || len(info.Voters) != 1 || len(info.Joining) != 1 || info.Joining[0].ID != 9 || info.Joining[0].Suffrage != "Nonvoter" {
		t.Fatalf("configuration: %+v %v", info, err)
	}
	mustCreate(t, l.c, "after-ghost")
	if !l.c.IsLeader() {
		t.Fatal("the single voter lost leadership to a non-voter")
	}
	if err := l.c.RemoveVoter(context.Background(), RemoveVoterRequest{ID: 9}); err != nil {
		t.Fatal(err)
	}
	mc.stop(l)
}
