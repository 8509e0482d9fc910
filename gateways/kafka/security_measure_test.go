package kafka

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

// TestMeasureSecurityOverhead measures, in one run on one store, what
// SASL_SSL with the authorizer on costs against PLAINTEXT: produce
// throughput (franz-go, 512-byte records, acks=all, alternating the two
// listeners) and the latency of a new client's first request (TCP, TLS,
// ApiVersions, SCRAM-SHA-256 and Metadata). Run it with
//
//	SECURITY_MEASURE=1 go test -run TestMeasureSecurityOverhead -v ./gateways/kafka/
//
// It is a measurement, not a check: it asserts only that every produce
// succeeded.
func TestMeasureSecurityOverhead(t *testing.T) {
	if os.Getenv("SECURITY_MEASURE") == "" {
		t.Skip("a measurement: set SECURITY_MEASURE=1 to run it")
	}
	e := newTestEnv(t)
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	z := auth.NewAuthorizer(true, nil)
	sec := newMemSecurity(z)
	sec.addUser(t, "alice", "alice-secret")
	ctx := testCtx(t)
	var acls []auth.ACL
	for _, op := range []string{auth.OpWrite, auth.OpDescribe, auth.OpCreate} {
		acls = append(acls, auth.ACL{ResourceType: auth.ResourceTopic, ResourceName: "m-", PatternType: auth.PatternPrefixed,
			Principal: "User:alice", Host: "*", Operation: op, Permission: auth.Allow})
	}
	acls = append(acls, auth.ACL{ResourceType: auth.ResourceCluster, ResourceName: auth.ClusterName, PatternType: auth.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: auth.OpIdempotentWrite, Permission: auth.Allow})
	if _, err := sec.CreateACLs(ctx, acls); err != nil {
		t.Fatal(err)
	}
	gw, err := New(Options{Backend: e.backend, Cluster: e.cluster, Logger: quietLogger(), AdvertisedAddr: raw.Addr().String(),
		AutoCreateTopics: true, OffsetsPartitions: 4,
		Auth: AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: sec.lookup, Security: sec, Authorizer: z}})
	if err != nil {
		t.Fatal(err)
	}
	// The same SASL and authorizer without TLS, to tell the two costs
	// apart.
	rawPlain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gwPlain, err := New(Options{Backend: e.backend, Cluster: e.cluster, Logger: quietLogger(), AdvertisedAddr: rawPlain.Addr().String(),
		AutoCreateTopics: true, OffsetsPartitions: 4,
		Auth: AuthOptions{SASL: true, Mechanisms: auth.Mechanisms, Credentials: sec.lookup, Security: sec, Authorizer: z}})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = gw.Serve(sctx, tls.NewListener(raw, tc)) }()
	go func() { defer wg.Done(); _ = gwPlain.Serve(sctx, rawPlain) }()
	defer func() { cancel(); wg.Wait() }()
	secure := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool(), ServerName: "127.0.0.1"}),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())}

	const n, size = 100_000, 512
	produce := func(addr, topic string, extra []kgo.Opt) float64 {
		cl := newClient(t, addr, append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2 * time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression())}, extra...)...)
		createTopic(t, cl, topic, 4)
		val := make([]byte, size)
		start := time.Now()
		var failed error
		var mu sync.Mutex
		var pw sync.WaitGroup
		for range n {
			pw.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
				pw.Done()
			})
		}
		pw.Wait()
		if failed != nil {
			t.Fatal(failed)
		}
		return float64(n) / time.Since(start).Seconds()
	}
	var plain, saslz, sslz []float64
	for i := range 2 {
		r := string(rune('a' + i))
		plain = append(plain, produce(e.addr, "m-plain-"+r, nil))
		saslz = append(saslz, produce(rawPlain.Addr().String(), "m-sasl-"+r, secure[1:]))
		sslz = append(sslz, produce(raw.Addr().String(), "m-secure-"+r, secure))
	}
	best := func(xs []float64) float64 { return slices.Max(xs) }
	t.Logf("produce %d x %d B, best of 2: PLAINTEXT %.0f records/s (%.1f MB/s); SASL_PLAINTEXT+authorizer %.0f records/s: ratio %.2f; SASL_SSL+authorizer %.0f records/s (%.1f MB/s): ratio %.2f",
		n, size, best(plain), best(plain)*size/1e6, best(saslz), best(saslz)/best(plain), best(sslz), best(sslz)*size/1e6, best(sslz)/best(plain))

	connect := func(addr string, extra []kgo.Opt) time.Duration {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		start := time.Now()
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	var pl, sc []time.Duration
	for range 50 {
		pl = append(pl, connect(e.addr, nil))
		sc = append(sc, connect(raw.Addr().String(), secure))
	}
	slices.Sort(pl)
	slices.Sort(sc)
	t.Logf("first request of a new client, 50 each: PLAINTEXT p50 %v p99 %v; SASL_SSL SCRAM-SHA-256 p50 %v p99 %v",
		pl[25], pl[49], sc[25], sc[49])
}
