package nativetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCLIAsWritten runs the CLI lines, as typed, against serve:
// the server comes from AEROSTREAM_NATIVE_ADDR, as a user points the CLI
// at a non-default port.
func TestCLIAsWritten(t *testing.T) {
	nativeAddr, _ := serve(t)
	e := []string{"AEROSTREAM_NATIVE_ADDR=" + nativeAddr}
	before := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)

	if out := sh(t, e, `aerostream create-topic orders 3 1`); !strings.Contains(out, "created topic orders: 3 partitions, replication factor 1") {
		t.Fatalf("create-topic: %q", out)
	}
	sh(t, e, `aerostream produce orders 0 '{"order_id": "ORD-1001", "amount": 99.50}'`)

	// consume --follow prints what is there, then what comes, until Ctrl-C.
	follow := startProc(t, "consume --follow", e, "consume", "orders", "0", "0", "--follow")
	if lines := follow.waitOut(t, 1); lines[0] != `{"order_id": "ORD-1001", "amount": 99.50}` {
		t.Fatalf("consume --follow printed %q", lines)
	}
	sh(t, e, `aerostream produce orders 0 second`)
	if lines := follow.waitOut(t, 2); lines[1] != "second" {
		t.Fatalf("consume --follow did not follow: %q", lines)
	}
	if code := follow.stop(t); code != 0 {
		t.Fatalf("consume --follow exit %d after Ctrl-C:\n%s", code, follow.text())
	}

	sh(t, e, `seq 1 10 | aerostream produce orders`)
	// --server overrides the environment.
	out := sh(t, nil, fmt.Sprintf(`aerostream consume orders --from-beginning -n 10 --server %s`, nativeAddr))
	if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 10 {
		t.Fatalf("consume -n 10 printed %d lines:\n%s", len(lines), out)
	}
	out = sh(t, e, `aerostream consume orders --from-time `+before+` --format '%p %o %k %v\n'`)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 12 {
		t.Fatalf("consume --from-time printed %d lines, want 12:\n%s", len(lines), out)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		f := strings.SplitN(l, " ", 4) // partition, offset, key (empty), value
		if len(f) != 4 || f[2] != "" {
			t.Fatalf("--format line %q", l)
		}
		seen[f[3]] = true
	}
	for i := 1; i <= 10; i++ {
		if !seen[fmt.Sprint(i)] {
			t.Errorf("line %d of seq not consumed:\n%s", i, out)
		}
	}
	// A time after every record: nothing to print.
	if out := sh(t, e, `aerostream consume orders --from-time 2099-01-01T00:00:00Z`); out != "" {
		t.Errorf("--from-time in the future printed %q", out)
	}

	// Keys: --key-separator splits each line, and a key always goes to
	// the same partition.
	sh(t, e, `printf 'a:1\nb:2\na:3\nb:4\n' | aerostream produce orders --key-separator ':'`)
	out = sh(t, e, `aerostream consume orders --from-beginning --format '%k %p\n'`)
	part := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, p, _ := strings.Cut(l, " ")
		if k == "" {
			continue
		}
		if prev, ok := part[k]; ok && prev != p {
			t.Errorf("key %s in partitions %s and %s", k, prev, p)
		}
		part[k] = p
	}
	if len(part) != 2 {
		t.Errorf("keys consumed: %v", part)
	}
}
