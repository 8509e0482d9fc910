package cli

import (
	"strings"
	"testing"

	"github.com/aerostream/aerostream/controller"
)

// TestControllerStatusListsJoining: a controller added as a non-voter that
// has not caught up yet is shown as joining, with its suffrage, beside
// the voters; it used to be left out, so an add in progress (or one that
// never catches up) was invisible.
func TestControllerStatusListsJoining(t *testing.T) {
	info := controller.ClusterInfo{
		ClusterID: "c1", LeaderID: 1, LeaderAddr: "127.0.0.1:8001", Version: 7,
		Voters:  []controller.Voter{{ID: 1, Address: "127.0.0.1:8001", Suffrage: "Voter"}},
		Joining: []controller.Voter{{ID: 2, Address: "127.0.0.1:8002", Suffrage: "Nonvoter"}},
	}
	var out strings.Builder
	if err := writeControllerStatus(&out, info, controller.NodesResponse{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var voter, joining string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "voter 1:"):
			voter = l
		case strings.HasPrefix(l, "joining 2:"):
			joining = l
		}
	}
	if voter == "" || !strings.Contains(voter, "127.0.0.1:8001 (Voter)") {
		t.Errorf("no voter line for 1:\n%s", out.String())
	}
	if joining == "" || !strings.Contains(joining, "127.0.0.1:8002 (Nonvoter, catching up") {
		t.Errorf("no joining line for 2 with its state:\n%s", out.String())
	}
}
