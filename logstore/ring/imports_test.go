package ring_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestForbiddenImports enforces doc.go: the ring (and its conformance
// suite) depends on logstore and below, never on a gateway, the controller,
// the tier, or tools.
func TestForbiddenImports(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".", "./ringtest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/aerostream/aerostream/"
	forbidden := []string{"gateways", "controller", "tierd", "fetchcache", "iceberg", "tools"}
	for _, dep := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(dep, mod)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rest == f || strings.HasPrefix(rest, f+"/") {
				t.Errorf("logstore/ring depends on %s", dep)
			}
		}
	}
}
