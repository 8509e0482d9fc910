package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/auth/authtest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clusterTLS is the mutual TLS of a cluster's nodes, from a fresh CA: the
// server side of a controller listener and the client side of its peers.
func clusterTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	pki, err := authtest.NewPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := auth.TLSOptions{CertFile: pki.CertFile, KeyFile: pki.KeyFile, CAFile: pki.CAFile, Logger: testLogger(t)}
	if server, err = auth.InternalServerTLS(o); err != nil {
		t.Fatal(err)
	}
	if client, err = auth.ClientTLS(o); err != nil {
		t.Fatal(err)
	}
	return server, client
}

// TestMutualTLSCluster: three voters form a cluster and replicate over
// mutual TLS; the client API answers a client with a certificate of the
// cluster CA and refuses one with none, one of another CA and one that
// speaks plaintext, logging each, and carries on.
func TestMutualTLSCluster(t *testing.T) {
	srvTLS, cliTLS := clusterTLS(t)
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	nodes := startNetCluster(t, 3, func(o *Options) { o.TLS, o.PeerTLS, o.Logger = srvTLS, cliTLS, logger })

	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 20 * time.Second, TLS: cliTLS})
	defer cl.Close()
	mustCreate(t, cl, "orders")
	for _, nd := range nodes {
		waitFor(t, 10*time.Second, "the topic on every voter", func() bool { return len(mustTopics(nd.c)) == 1 })
	}

	_, otherCA := clusterTLS(t)
	otherCA.RootCAs = cliTLS.RootCAs // trusts the cluster, presents a stranger's certificate
	noCert := cliTLS.Clone()
	noCert.GetClientCertificate = nil
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
		want string
	}{
		{"no certificate", noCert, "certificate required"},
		{"another CA", otherCA, "unknown certificate authority"},
		{"plaintext", nil, "serves mutual TLS"},
	} {
		// A refused certificate fails at once; the plaintext client
		// retries its read, as on any HTTP error, until its timeout.
		timeout := 20 * time.Second
		if tc.cfg == nil {
			timeout = time.Second
		}
		bad := NewClient(addrsOf(nodes), ClientOptions{Timeout: timeout, TLS: tc.cfg})
		start := time.Now()
		_, err := bad.Metadata(context.Background(), MetadataRequest{})
		bad.Close()
		t.Logf("%s: %v after %v", tc.name, err, time.Since(start))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Metadata: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	for _, want := range []string{"certificate signed by unknown authority", "does not speak TLS"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("controller log lacks %q", want)
		}
	}

	// curl without TLS is told why.
	resp, err := http.Post("http://"+nodes[0].addr+"/v1/metadata", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "mutual TLS") {
		t.Errorf("plaintext HTTP: %d %q", resp.StatusCode, body)
	}

	mustCreate(t, cl, "payments")
	md, err := cl.Metadata(context.Background(), MetadataRequest{})
	if err != nil || len(md.Topics) != 2 {
		t.Fatalf("after the refusals: %d topics, %v", len(md.Topics), err)
	}
}
