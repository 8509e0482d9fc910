package native_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// TestGroupAssignsAndCommits: two members share a topic's partitions
// without overlap once both have joined, a commit is what the next member
// starts from, and a member that leaves hands its partitions over.
func TestGroupAssignsAndCommits(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, e.addr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.CreateTopic(ctx, "g", 4, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := client.NewProducer(cl, client.ProducerOptions{})
	for i := range 40 {
		p.Produce(ctx, &client.Record{Topic: "g", Partition: int32(i % 4), Value: fmt.Appendf(nil, "%d", i)}, nil)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	opts := client.GroupOptions{Group: "g1", Topic: "g", SessionTimeout: 3 * time.Second}
	a, err := client.JoinGroup(ctx, cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Assigned(); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("lone member assigned %v", got)
	}
	// Read everything and commit it.
	n := 0
	for n < 40 || !a.CaughtUp() {
		msgs, err := a.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(msgs)
	}
	if err := a.CommitPositions(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := cl.FetchOffsets(ctx, "g1", "g")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if offs[p] != 10 {
			t.Fatalf("committed %v, want 10 per partition", offs)
		}
	}
	lag, err := cl.Lag(ctx, "g1", "g")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		if lag[p] != 0 {
			t.Fatalf("lag after the commit: %v", lag)
		}
	}
	if lag, err := cl.Lag(ctx, "nobody", "g"); err != nil || lag[2] != 10 {
		t.Fatalf("lag of a group without commits: %v %v", lag, err)
	}
	b, err := client.JoinGroup(ctx, cl, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A stale generation cannot commit.
	if err := a.Commit(ctx, map[int32]int64{0: 1}); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("commit of a stale generation: %v", err)
	}
	// a learns of b at its next heartbeat and takes its new share.
	for _, m := range []*client.GroupConsumer{a} {
		for {
			_, gen := m.Member()
			_, bgen := b.Member()
			if gen == bgen {
				break
			}
			if _, err := m.Poll(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := append(slices.Clone(a.Assigned()), b.Assigned()...)
	slices.Sort(all)
	if !slices.Equal(all, []int32{0, 1, 2, 3}) || len(a.Assigned()) != 2 {
		t.Fatalf("assignments %v and %v", a.Assigned(), b.Assigned())
	}
	// b starts from the commits: nothing left to read.
	msgs, err := b.Poll(ctx)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("b read %d records (%v) after the commit", len(msgs), err)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for len(a.Assigned()) != 4 {
		if _, err := a.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
