package ring_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
	"github.com/aerostream/aerostream/logstore/logtest"
	"github.com/aerostream/aerostream/logstore/ring"
	"github.com/aerostream/aerostream/logstore/ring/ringtest"
)

// nodeTLS is the mutual TLS of a cluster's nodes: the server side of a
// ring listener and the client side of its dialers, from one PKI.
func nodeTLS(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, Logger: quiet()}
	if server, err = auth.InternalServerTLS(o); err != nil {
		t.Fatal(err)
	}
	if client, err = auth.ClientTLS(o); err != nil {
		t.Fatal(err)
	}
	return server, client
}

func dialTLS(ctx context.Context, addr string, cfg *tls.Config) (ring.Backend, error) {
	return ring.Dial(ctx, addr, ring.DialOptions{Logger: quiet(), TLS: cfg, DialTimeout: 5 * time.Second})
}

// The whole Backend contract holds over mutual TLS.
func TestNetworkMutualTLSSuite(t *testing.T) {
	srvTLS, cliTLS := nodeTLS(t)
	ringtest.BackendSuite(t, func(t *testing.T) ring.Backend {
		ln, addr := listenTCP(t)
		serve(t, newStore(t), ln, nil, func(s *ring.Server) { s.TLS = srvTLS })
		b, err := dialTLS(bg(t), addr, cliTLS)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

// A mutual TLS ring listener refuses a client without a certificate, one
// whose certificate another CA signed, and one that does not speak TLS
// (which is told so in a ring error frame); each is logged, and the
// server goes on serving the cluster's own nodes.
func TestMutualTLSRefusesStrangers(t *testing.T) {
	srvTLS, cliTLS := nodeTLS(t)
	var logs syncBuffer
	ln, addr := listenTCP(t)
	srv := serve(t, newStore(t), ln, slog.New(slog.NewTextHandler(&logs, nil)), func(s *ring.Server) { s.TLS = srvTLS })

	// A certificate of another CA, from a client that trusts the server.
	_, otherCA := nodeTLS(t)
	otherCA.RootCAs = cliTLS.RootCAs
	noCert := cliTLS.Clone()
	noCert.GetClientCertificate = nil
	for _, tc := range []struct {
		name    string
		cfg     *tls.Config
		wantLog string
	}{
		{"no certificate", noCert, "certificate"},
		{"another CA", otherCA, "certificate"},
		{"plaintext", nil, "does not speak TLS"},
	} {
		before := srv.Stats().TLSFailures
		_, err := dialTLS(bg(t), addr, tc.cfg)
		if err == nil {
			t.Fatalf("%s: dial succeeded", tc.name)
		}
		if tc.cfg == nil && !errors.Is(err, ring.ErrTLSRequired) {
			t.Errorf("plaintext client: %v, want ErrTLSRequired", err)
		}
		waitUntil(t, tc.name+" to be counted", func() bool { return srv.Stats().TLSFailures > before })
		t.Logf("%s: %v", tc.name, err)
	}
	for _, want := range []string{"does not speak TLS", "TLS handshake failed", "certificate signed by unknown authority"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("server log lacks %q:\n%s", want, logs.String())
		}
	}

	b, err := dialTLS(bg(t), addr, cliTLS)
	if err != nil {
		t.Fatalf("node client after the refusals: %v", err)
	}
	defer b.Close()
	if err := b.CreatePartition(bg(t), "t", 0, ring.PartitionConfig{}); err != nil {
		t.Fatal(err)
	}
	produceFetch(t, b, "t", 0, 10)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNetworkProduce is the ring's produce throughput over loopback,
// in plaintext and over mutual TLS: 64 KiB batches, 8 producers.
func BenchmarkNetworkProduce(b *testing.B) {
	srvTLS, cliTLS := nodeTLS(b)
	for _, mode := range []struct {
		name     string
		srv, cli *tls.Config
	}{{"plaintext", nil, nil}, {"mtls", srvTLS, cliTLS}} {
		b.Run(mode.name, func(b *testing.B) {
			st := newStore(b)
			ln, addr := listenTCP(b)
			srv := ring.NewServer(st, quiet())
			srv.TLS = mode.srv
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx, ln) }()
			defer func() { cancel(); <-done }()
			cl, err := dialTLS(context.Background(), addr, mode.cli)
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			const parts = 8
			for p := range int32(parts) {
				if err := cl.CreatePartition(context.Background(), "bench", p, ring.PartitionConfig{}); err != nil {
					b.Fatal(err)
				}
			}
			batch := logtest.Filler(1, 64, 1000, 7)
			b.SetBytes(int64(len(batch)))
			// With GOMAXPROCS 2, eight producers in flight.
			b.SetParallelism(4)
			var next atomic.Int32
			cpu0 := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				p := next.Add(1) % parts
				for pb.Next() {
					if _, err := cl.Produce(context.Background(), &ring.ProduceRequest{Topic: "bench", Partition: p, Acks: 1, Records: bytes.Clone(batch)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			// On a shared machine wall time mostly measures the other
			// load; the process's CPU time per batch (client and server
			// both live here) compares the two modes fairly.
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
