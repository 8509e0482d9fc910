package registry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/aerostream/aerostream/registry"
)

// Two registrations racing on an empty subject with schemas that are
// incompatible with each other: each sees no version when it checks, so
// without the state machine's ExpectLatest guard both would register.
// Exactly one may.
func TestConcurrentIncompatibleRegistrations(t *testing.T) {
	c := openVoter(t)
	reg, err := registry.New(registry.Options{Store: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for round := range 20 {
		subject := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, typ := range []string{"int", "string"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = reg.Register(ctx, subject, registry.SchemaInput{
					Schema: `{"type":"record","name":"R","fields":[{"name":"x","type":"` + typ + `"}]}`}, false)
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: errors %v and %v; want exactly one registered", round, errs[0], errs[1])
		}
	}
}

// Many compatible registrations at once all land, as consecutive versions.
func TestConcurrentCompatibleRegistrations(t *testing.T) {
	c := openVoter(t)
	reg, err := registry.New(registry.Options{Store: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	ids := make([]int32, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = reg.Register(ctx, "many", registry.SchemaInput{
				Schema: fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"f%d","type":"int","default":0}]}`, i)}, false)
		}()
	}
	wg.Wait()
	seen := map[int32]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("register %d: %v", i, errs[i])
		}
		if seen[ids[i]] {
			t.Fatalf("id %d twice", ids[i])
		}
		seen[ids[i]] = true
	}
}
