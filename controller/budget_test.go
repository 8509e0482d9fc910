package controller

import (
	"fmt"
	"strings"
	"testing"
)

// registerBudgeted registers store id with a partition budget.
func registerBudgeted(t *testing.T, f *FSM, id, budget int32) {
	t.Helper()
	r := applyCmd(t, f, &cmdRegisterNode{ID: id, Kind: KindStore, Shards: 1, RingAddr: fmt.Sprintf("127.0.0.1:%d", 7000+id), MaxPartitions: budget, NowMs: 1})
	if r.err != nil {
		t.Fatal(r.err)
	}
}

// replicasOn counts the replicas each store holds.
func replicasOn(t *testing.T, f *FSM) map[int32]int {
	t.Helper()
	n := map[int32]int{}
	topics, _ := f.Topics(nil)
	for _, ti := range topics {
		for _, p := range ti.Partitions {
			if len(p.Replicas) == 0 {
				t.Errorf("%s/%d is unplaced", ti.Name, p.Partition)
			}
			for _, r := range p.Replicas {
				n[r]++
			}
		}
	}
	return n
}

// TestPlacementKeepsToPartitionBudgets: placement puts no more replicas on
// a store than the budget it registered with, placing them on stores with
// room; a create (topics or partitions) that does not fit is refused whole
// with an error naming the budgets, and nothing of it is left behind.
func TestPlacementKeepsToPartitionBudgets(t *testing.T) {
	f := NewFSM(nil)
	registerBudgeted(t, f, 1, 1)
	registerBudgeted(t, f, 2, 10)

	if err := createRF(t, f, "a", 5, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := replicasOn(t, f); got[1] != 1 || got[2] != 4 {
		t.Fatalf("replicas per store %v, want store 1 at its budget of 1 and the rest on store 2", got)
	}

	err := createRF(t, f, "b", 7, 1, nil)
	wantErr(t, err, ErrTooManyPartitions, "store 1 holds 1 of its 1, store 2 holds 4 of its 10")
	if _, err := f.Topic(TopicRef{Name: "b"}); err == nil {
		t.Fatal("a refused create left its topic behind")
	}
	// Two copies need two stores with room; store 1 has none.
	wantErr(t, createRF(t, f, "c", 1, 2, nil), ErrTooManyPartitions, `topic "c"`)

	r := applyCmd(t, f, &cmdCreatePartitions{Topics: []PartitionCount{{Name: "a", Count: 12}}})
	if r.err != nil {
		t.Fatal(r.err)
	}
	wantErr(t, r.items[0], ErrTooManyPartitions, "store 2 holds 4 of its 10")
	if ti, _ := f.Topic(TopicRef{Name: "a"}); len(ti.Partitions) != 5 {
		t.Fatalf("a refused CreatePartitions left %d partitions, want 5", len(ti.Partitions))
	}
	r = applyCmd(t, f, &cmdCreatePartitions{Topics: []PartitionCount{{Name: "a", Count: 11}}})
	if r.err != nil || r.items[0] != nil {
		t.Fatalf("CreatePartitions to the budget: %v %v", r.err, r.items[0])
	}
	if got := replicasOn(t, f); got[1] != 1 || got[2] != 10 {
		t.Fatalf("replicas per store %v, want 1 and 10", got)
	}

	// A store registering later with room takes what fits.
	registerBudgeted(t, f, 3, 0)
	if err := createRF(t, f, "d", 3, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := replicasOn(t, f); got[3] != 3 {
		t.Fatalf("replicas per store %v, want 3 on store 3 (no budget)", got)
	}
}

func TestRegistrationBudgetMustBeSane(t *testing.T) {
	f := NewFSM(nil)
	r := applyCmd(t, f, &cmdRegisterNode{ID: 1, Kind: KindStore, Shards: 1, RingAddr: "127.0.0.1:7001", MaxPartitions: -1, NowMs: 1})
	wantErr(t, r.err, ErrInvalidRequest, "partition budget of -1")
	r = applyCmd(t, f, &cmdRegisterNode{ID: 2, Kind: KindGateway, MaxPartitions: 5, NowMs: 1})
	if r.err == nil || !strings.Contains(r.err.Error(), "partition budget") {
		t.Fatalf("a gateway with a partition budget: %v", r.err)
	}
}
