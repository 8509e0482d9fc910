package nativetest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aerostream/aerostream/gateways/native/client"
)

// TestGroupAcrossProtocols: a group a native consumer committed continues
// in kcat -G from where it stopped, and the native consumer continues from
// kcat's commits: one __consumer_offsets for both protocols. The CLI line
// `consume orders --group g1 --follow` commits as it goes and leaves the
// group cleanly on Ctrl-C.
func TestGroupAcrossProtocols(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatalf("kcat is needed on the Kafka side (apt-get install kcat): %v", err)
	}
	nativeAddr, kafkaAddr := serve(t)
	e := []string{"AEROSTREAM_NATIVE_ADDR=" + nativeAddr}
	sh(t, e, `aerostream create-topic orders 2 1`)
	sh(t, e, `seq 1 20 | aerostream produce orders`)

	// Native reads 5 and commits them.
	first := lines(sh(t, e, `aerostream consume orders --group g1 -n 5`))
	if len(first) != 5 {
		t.Fatalf("native -n 5 printed %q", first)
	}
	// kcat continues the group: exactly the other 15.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", "-b", kafkaAddr, "-G", "g1", "-X", "auto.offset.reset=earliest",
		"-e", "-q", "-f", "%s\n", "orders").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -G: %v\n%s", err, out)
	}
	second := lines(string(out))
	if got := sorted(append(append([]string{}, first...), second...)); strings.Join(got, ",") != strings.Join(seq(1, 20), ",") {
		t.Fatalf("native read %q, kcat then %q: want 1..20 once each", first, second)
	}

	// Native continues from kcat's commits, following; Ctrl-C leaves.
	follow := startProc(t, "consume --group --follow", e, "consume", "orders", "--group", "g1", "--follow")
	sh(t, e, `seq 21 24 | aerostream produce orders`)
	third := follow.waitOut(t, 4)
	if got := sorted(third); strings.Join(got, ",") != strings.Join(seq(21, 24), ",") {
		t.Fatalf("native --group --follow after kcat printed %q, want 21..24", third)
	}
	if code := follow.stop(t); code != 0 {
		t.Fatalf("consume --group --follow exit %d after Ctrl-C:\n%s", code, follow.text())
	}
	// Its commits hold: kcat finds nothing more.
	sh(t, e, `seq 25 26 | aerostream produce orders`)
	// The gateway lists the group and computes its lag: the two records
	// just produced.
	cl, err := client.Dial(ctx, nativeAddr, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gs, err := cl.ListGroups(ctx)
	if err != nil || !slices.Contains(gs, client.GroupListing{Group: "g1"}) {
		t.Fatalf("ListGroups = %+v, %v; want g1 (no native members)", gs, err)
	}
	lag, err := cl.Lag(ctx, "g1", "orders")
	if err != nil || lag[0]+lag[1] != 2 {
		t.Fatalf("lag of g1 = %v, %v; want 2 in all", lag, err)
	}
	out, err = exec.CommandContext(ctx, "kcat", "-b", kafkaAddr, "-G", "g1", "-e", "-q", "-f", "%s\n", "orders").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -G: %v\n%s", err, out)
	}
	if got := sorted(lines(string(out))); strings.Join(got, ",") != "25,26" {
		t.Fatalf("kcat after the native follower read %q, want 25 and 26", got)
	}
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func sorted(ss []string) []string {
	out := append([]string{}, ss...)
	sort.Slice(out, func(i, j int) bool {
		var a, b int
		fmt.Sscan(out[i], &a)
		fmt.Sscan(out[j], &b)
		return a < b
	})
	return out
}

func seq(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}
