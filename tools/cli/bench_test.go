package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/aerostream/aerostream/tools/bench"
	"github.com/aerostream/aerostream/tools/cli"
)

// TestBenchAgainstFakeBroker runs `aerostream bench` in-process against
// kfake, franz-go's in-memory broker: flags to result file, with the
// progress lines on stderr and the summary on stdout.
func TestBenchAgainstFakeBroker(t *testing.T) {
	defer goleak.VerifyNone(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(t.TempDir(), "result.json")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{
		"bench", "--brokers", strings.Join(c.ListenAddrs(), ","),
		"--partitions", "4", "--producers", "2", "--consumers", "2",
		"--message-size", "128", "--acks", "1", "--rate", "1000",
		"--warmup", "250ms", "--duration", "750ms", "--progress-interval", "250ms",
		"--json", out,
	}, cli.Env{Stdout: &stdout, Stderr: &stderr, Environ: cleanEnv()})
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if n := strings.Count(stderr.String(), "msg/s"); n < 4 {
		t.Errorf("%d progress lines on stderr, want 4:\n%s", n, stderr.String())
	}
	for _, want := range []string{"publish", "end-to-end", "p99.9"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout.String())
		}
	}
	res, err := bench.ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Publish.Messages == 0 || res.EndToEndLatency.Count == 0 || res.Workload.Partitions != 4 || res.Workload.Acks != "1" {
		t.Fatalf("result %+v", res)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--acks", "2"},
		{"bench", "--consume-mode", "share"},
		{"bench", "--message-size", "4"},
		{"bench", "--compression", "brotli"},
	} {
		r := run(t, nil, args...)
		if r.code != 1 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "bench config") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and one line", args, r.code, r.stderr)
		}
	}
}
