package registry

import (
	"context"
	"testing"
	"time"

	"github.com/aerostream/aerostream/controller"
)

// countingStore answers subject reads from a fixed list and counts them.
type countingStore struct {
	versions map[string][]controller.SubjectVersion
	reads    int
}

func (s *countingStore) SchemaWrite(context.Context, controller.SchemaWriteRequest) (controller.SchemaWriteResponse, error) {
	return controller.SchemaWriteResponse{}, nil
}

func (s *countingStore) SchemaRead(_ context.Context, req controller.SchemaReadRequest) (controller.SchemaReadResponse, error) {
	s.reads++
	return controller.SchemaReadResponse{Versions: s.versions[req.Subject]}, nil
}

func TestIDCache(t *testing.T) {
	st := &countingStore{versions: map[string][]controller.SubjectVersion{"t-value": {{Version: 1, ID: 4}}}}
	reg, err := New(Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c := NewIDCache(reg)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	ask := func(subject string, id int32, want bool) {
		t.Helper()
		ok, err := c.SubjectHasID(ctx, subject, id)
		if err != nil || ok != want {
			t.Fatalf("%s %d = %v, %v; want %v", subject, id, ok, err, want)
		}
	}
	ask("t-value", 4, true)
	ask("t-value", 4, true)
	ask("t-value", 5, false)
	ask("t-value", 5, false)
	if st.reads != 2 {
		t.Fatalf("%d reads, want 2 (one per answer)", st.reads)
	}
	// A schema registered after a miss is seen once the miss expires.
	st.versions["t-value"] = append(st.versions["t-value"], controller.SubjectVersion{Version: 2, ID: 5})
	now = now.Add(NegativeTTL)
	ask("t-value", 5, true)
	// A deleted version stops validating once the hit expires.
	st.versions["t-value"] = nil
	ask("t-value", 4, true)
	now = now.Add(PositiveTTL)
	ask("t-value", 4, false)
}
