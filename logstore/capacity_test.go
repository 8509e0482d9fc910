package logstore

import (
	"context"
	"errors"
	"testing"
)

// TestPartitionCapacity: the capacity a store registers with the
// controller counts the partitions it holds and stops at the creates it
// would refuse, so placement never sends it one it cannot take.
func TestPartitionCapacity(t *testing.T) {
	ts := openTestStore(t, t.TempDir(), func(o *Options) { o.MaxPartitions = 3 })
	defer ts.close(t)
	ctx := context.Background()
	if got := ts.PartitionCapacity(); got != 3 {
		t.Fatalf("capacity %d of an empty store, want its MaxPartitions 3", got)
	}
	for p := int32(0); p < 3; p++ {
		if err := ts.CreatePartition(ctx, "cap", p, PartitionConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := ts.PartitionCapacity(); got != 3 {
		t.Fatalf("capacity %d of a full store, want 3", got)
	}
	if err := ts.CreatePartition(ctx, "cap", 3, PartitionConfig{}); !errors.Is(err, ErrTooManyPartitions) {
		t.Fatalf("a create past the capacity: %v, want ErrTooManyPartitions", err)
	}
}
