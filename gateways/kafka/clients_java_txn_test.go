package kafka_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJavaTxnEos runs testdata/java/TxnEos.java with Kafka's own
// kafka-clients 4.4.0: a transactional consume-transform-produce loop is
// killed with SIGKILL three times, each time after a few transactions,
// and started again; then a read_committed consumer of the output must
// see every input exactly once. Each restart fences the killed producer
// and aborts whatever it left open (txn_coordinator.go). It takes a few
// minutes (JVM starts, group joins), so it has its own target, make
// test-kafka-eos, rather than a place in make test-kafka (^TestClient).
func TestJavaTxnEos(t *testing.T) {
	gate(t)
	lib := os.Getenv("KAFKA_JAVA_LIB")
	if lib == "" {
		lib = "/tmp/aerostream-kafka-peer/lib-4.4.0" // deploy/kafka-peer/setup.sh puts them there
	}
	if _, err := os.Stat(filepath.Join(lib, "kafka-clients-4.4.0.jar")); err != nil {
		t.Fatalf("Kafka's Java clients: %v (run deploy/kafka-peer/setup.sh, or set KAFKA_JAVA_LIB)", err)
	}
	classes := t.TempDir()
	cp := lib + "/*"
	run(t, "", "javac", "-cp", cp, "-d", classes, "testdata/java/TxnEos.java")
	p, broker := serve(t, filepath.Join(t.TempDir(), "data"))
	jcp := classes + string(os.PathListSeparator) + cp
	const n = "2000"
	run(t, "", "java", "-cp", jcp, "TxnEos", "produce", broker, "eos-in", "eos-out", n)
	loop := []string{"-cp", jcp, "TxnEos", "loop", broker, "eos-in", "eos-out", "eos-group", n}
	for kill := 1; kill <= 3; kill++ {
		cmd := exec.Command("java", loop...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it after a few more transactions than it starts with: a
		// crash between transactions or in the middle of one.
		sc := bufio.NewScanner(out)
		seen := 0
		for sc.Scan() && seen < 3 {
			if strings.HasPrefix(sc.Text(), "committed ") {
				seen++
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if seen < 3 {
			t.Fatalf("loop run %d ended after %d transactions without being killed", kill, seen)
		}
		t.Logf("loop run %d killed with SIGKILL after %d transactions", kill, seen)
	}
	final := run(t, "", "java", loop...)
	if !strings.Contains(final, "OK loop") {
		t.Fatalf("the last loop run did not finish:\n%s", final)
	}
	res := run(t, "", "java", "-cp", jcp, "TxnEos", "verify", broker, "eos-out", n)
	for _, l := range strings.Split(res, "\n") {
		if strings.HasPrefix(l, "verify:") {
			t.Log(l)
		}
	}
	if !strings.Contains(res, "OK verify") {
		t.Fatalf("exactly once did not hold:\n%s", res)
	}
	p.stop(t)
}
