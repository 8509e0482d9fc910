//go:build controllerproc || measure

package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// Helpers for tests that run `aerostream controller` processes on
// loopback: the multi-process failover test (tag controllerproc, `make
// test-controller`) and the measurements (tag measure).

type ctlProc struct {
	id   int32
	addr string
	dir  string
	args []string
	p    *proc
}

// startCtlCluster starts n controller processes: node 1 bootstraps, the
// others join it. It returns once every node sees n voters and a leader.
func startCtlCluster(t *testing.T, n int) []*ctlProc {
	t.Helper()
	base := t.TempDir()
	nodes := make([]*ctlProc, n)
	for i := range nodes {
		nd := &ctlProc{id: int32(i + 1), addr: freeAddr(t), dir: filepath.Join(base, fmt.Sprintf("c%d", i+1))}
		nd.args = []string{"controller", "--data-dir", nd.dir, "--controller-listen", nd.addr,
			"--controller.node_id", strconv.Itoa(i + 1)}
		if i == 0 {
			nd.args = append(nd.args, "--controller.bootstrap")
		} else {
			nd.args = append(nd.args, "--controller.join", nodes[0].addr)
		}
		nodes[i] = nd
		nd.start(t)
	}
	for _, nd := range nodes {
		waitCond(t, 60*time.Second, fmt.Sprintf("node %d sees %d voters and a leader", nd.id, n), func() bool {
			info, err := localInfo(nd.addr)
			return err == nil && len(info.Voters) == n && info.LeaderID >= 0
		})
	}
	return nodes
}

func (nd *ctlProc) start(t *testing.T) {
	t.Helper()
	nd.p = start(t, nil, nd.args...)
	nd.p.waitFor(t, `msg=running`)
}

// kill9 kills the process with SIGKILL and waits for it.
func (nd *ctlProc) kill9(t *testing.T) {
	t.Helper()
	if err := nd.p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-nd.p.done
	nd.p.done <- err
}

var httpc = &http.Client{Timeout: 2 * time.Second}

// localInfo asks one controller for its own view (no leader redirect).
func localInfo(addr string) (controller.ClusterInfo, error) {
	var info controller.ClusterInfo
	return info, getJSON(addr, "/v1/cluster", &info)
}

// localMetadata reads one controller's local state.
func localMetadata(addr string) (controller.MetadataResponse, error) {
	var md controller.MetadataResponse
	return md, getJSON(addr, "/v1/metadata", &md)
}

func getJSON(addr, path string, v any) error {
	resp, err := httpc.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: HTTP %d", addr, path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func waitCond(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaderOf returns the node the cluster agrees leads.
func leaderOf(t *testing.T, nodes []*ctlProc) *ctlProc {
	t.Helper()
	var found *ctlProc
	waitCond(t, 30*time.Second, "a leader", func() bool {
		for _, nd := range nodes {
			info, err := localInfo(nd.addr)
			if err == nil && info.State == "Leader" {
				found = nd
				return true
			}
		}
		return false
	})
	return found
}

// awaitNewLeader polls the survivors until one of them is a leader other
// than old, and returns it and how long that took from since.
func awaitNewLeader(t *testing.T, nodes []*ctlProc, old *ctlProc, since time.Time) (*ctlProc, time.Duration) {
	t.Helper()
	var found *ctlProc
	waitCond(t, 60*time.Second, "a new leader", func() bool {
		for _, nd := range nodes {
			if nd == old {
				continue
			}
			if info, err := localInfo(nd.addr); err == nil && info.State == "Leader" {
				found = nd
				return true
			}
		}
		return false
	})
	return found, time.Since(since)
}

func addrs(nodes []*ctlProc) []string {
	var out []string
	for _, nd := range nodes {
		out = append(out, nd.addr)
	}
	return out
}

func createTopics(t *testing.T, cl *controller.Client, names ...string) {
	t.Helper()
	req := controller.CreateTopicsRequest{}
	for _, n := range names {
		req.Topics = append(req.Topics, controller.NewTopic{Name: n, Partitions: 3, ReplicationFactor: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.CreateTopics(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Topics {
		if r.Err() != nil {
			t.Fatalf("create %s: %v", r.Name, r.Err())
		}
	}
}
