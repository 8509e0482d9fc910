package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// fakeDrain answers DrainStore from a scripted list of progress reports.
type fakeDrain struct {
	controller.Replication
	steps []controller.DrainStatus
	calls int
}

func (f *fakeDrain) DrainStore(_ context.Context, req controller.DrainRequest) (controller.DrainStatus, error) {
	st := f.steps[min(f.calls, len(f.steps)-1)]
	f.calls++
	st.ID = req.ID
	return st, nil
}

func TestDrainFollowsProgressToTheEnd(t *testing.T) {
	f := &fakeDrain{steps: []controller.DrainStatus{
		{Draining: true, Replicas: 4, Leaders: 2},
		{Draining: true, Replicas: 4, Leaders: 2},
		{Draining: true, Replicas: 1, Leaders: 0},
		{Draining: true},
	}}
	var out bytes.Buffer
	if err := drainStore(context.Background(), Env{Stdout: &out}, f, 12, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"store 12: 4 replicas and 2 leaderships left", "store 12: 1 replicas and 0 leaderships left", "store 12 is drained"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "4 replicas"); n != 1 {
		t.Errorf("unchanged progress printed %d times, want once:\n%s", n, got)
	}
}

func TestDrainGivesUpWithWhatIsLeft(t *testing.T) {
	f := &fakeDrain{steps: []controller.DrainStatus{{Draining: true, Replicas: 3, Leaders: 1}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := drainStore(ctx, Env{Stdout: &bytes.Buffer{}}, f, 11, false)
	if err == nil || !strings.Contains(err.Error(), "still 3 replicas and 1 leaderships left") {
		t.Fatalf("err = %v, want one naming what is left", err)
	}
}

// fakeShutdown answers leadership-only drains from a scripted list of
// leadership counts, and fails a request that is not leadership-only.
type fakeShutdown struct {
	controller.Replication
	leaders []int
	calls   int
}

func (f *fakeShutdown) DrainStore(_ context.Context, req controller.DrainRequest) (controller.DrainStatus, error) {
	if !req.LeadershipOnly {
		return controller.DrainStatus{}, errors.New("a full drain was asked for")
	}
	n := f.leaders[min(f.calls, len(f.leaders)-1)]
	f.calls++
	return controller.DrainStatus{ID: req.ID, ShuttingDown: true, Replicas: 5, Leaders: n}, nil
}

func TestShutdownFollowsLeadershipToZero(t *testing.T) {
	f := &fakeShutdown{leaders: []int{3, 3, 1, 0}}
	var out bytes.Buffer
	if err := shutdownStore(context.Background(), Env{Stdout: &out}, f, 12, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"store 12: 3 leaderships left", "store 12: 1 leaderships left", "store 12 leads no partition"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "3 leaderships"); n != 1 {
		t.Errorf("unchanged progress printed %d times, want once:\n%s", n, got)
	}
	if strings.Contains(got, "replicas") {
		t.Errorf("a leadership-only drain reported replicas, which stay:\n%s", got)
	}
}

func TestShutdownGivesUpWithWhatIsLeft(t *testing.T) {
	f := &fakeShutdown{leaders: []int{2}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := shutdownStore(ctx, Env{Stdout: &bytes.Buffer{}}, f, 11, false)
	if err == nil || !strings.Contains(err.Error(), "still 2 leaderships left") {
		t.Fatalf("err = %v, want one naming what is left", err)
	}
}

func TestPartitionStateNamesUnderReplication(t *testing.T) {
	live := map[int32]bool{11: true, 12: true, 13: false}
	cases := []struct {
		p    controller.PartitionInfo
		want string
	}{
		{controller.PartitionInfo{Leader: 11, Replicas: []int32{11, 12, 13}, ISR: []int32{11, 12, 13}}, "online"},
		{controller.PartitionInfo{Leader: 11, Replicas: []int32{11, 12, 13}, ISR: []int32{11, 12}}, "under-replicated"},
		{controller.PartitionInfo{Leader: 11}, "online"},
		{controller.PartitionInfo{Leader: controller.NoLeader, Replicas: []int32{13}, ISR: []int32{13}}, "offline (no in-sync replica is live)"},
		{controller.PartitionInfo{Leader: 13, Replicas: []int32{13}, ISR: []int32{13}}, "offline (store down)"},
		{controller.PartitionInfo{Leader: 11, Replicas: []int32{11, 12, 13}, ISR: []int32{11, 12, 13}, TargetReplicas: []int32{11, 12}}, "online, reassigning to [11,12]"},
	}
	for _, c := range cases {
		if got := partitionState(c.p, live); got != c.want {
			t.Errorf("partitionState(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestStoppingStoreLeavesLeadership(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	f := &fakeShutdown{leaders: []int{2, 0}}
	leaveLeadership(context.Background(), f, 12, time.Minute, logger)
	if f.calls != 2 || !strings.Contains(logs.String(), "leaderships moved") {
		t.Errorf("%d calls, log:\n%s\nwant 2 calls and the leaderships moved", f.calls, logs.String())
	}
	// A leadership that cannot move does not hold the stop beyond wait.
	logs.Reset()
	leaveLeadership(context.Background(), &fakeShutdown{leaders: []int{1}}, 12, time.Millisecond, logger)
	if !strings.Contains(logs.String(), "did not move") || !strings.Contains(logs.String(), "still 1 leaderships left") {
		t.Errorf("log:\n%s\nwant a warning naming what is left", logs.String())
	}
}
