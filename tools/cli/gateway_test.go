package cli_test

import (
	"syscall"
	"testing"
)

// TestGatewayKafkaRoutesWithoutRingAddr: the cluster's gateway command
// names no ring address; the gateway starts and routes each partition to
// its leader store, as the controller lists them. It used to refuse to
// start without gateway.ring_addr.
func TestGatewayKafkaRoutesWithoutRingAddr(t *testing.T) {
	// No controller answers there: the gateway serves (and retries its
	// registration) all the same.
	p := start(t, nil, "gateway", "kafka", "--gateway.node_id", "1001", "--controller.join", "127.0.0.1:1",
		"--kafka-listen", "127.0.0.1:0", "--data-dir", t.TempDir())
	p.waitFor(t, `msg=running .*ring_addr=none routing="by partition leader"`)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.logText())
	}
}
