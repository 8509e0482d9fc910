package controller

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestClusterSecret: three voters given the cluster secret form a cluster
// over authenticated Raft streams; the client API answers a client holding
// the secret and refuses, each with ErrUnauthenticated naming why, one
// without it, one with another secret, a replayed request, one signed by a
// clock far off, logging the refusals, and carries on.
func TestClusterSecret(t *testing.T) {
	secret := []byte(strings.Repeat("0123456789abcdef", 4))
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	nodes := startNetCluster(t, 3, func(o *Options) { o.ClusterSecret, o.Logger = secret, logger })

	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 20 * time.Second, ClusterSecret: secret})
	defer cl.Close()
	mustCreate(t, cl, "orders")
	for _, nd := range nodes {
		waitFor(t, 10*time.Second, "the topic on every voter", func() bool { return len(mustTopics(nd.c)) == 1 })
	}

	other := bytes.Repeat([]byte("x"), MinClusterSecretBytes)
	for _, tc := range []struct {
		name   string
		secret []byte
		want   string
	}{
		{"no secret", nil, "carries no credential"},
		{"another secret", other, "another cluster secret"},
	} {
		bad := NewClient(addrsOf(nodes), ClientOptions{Timeout: 20 * time.Second, ClusterSecret: tc.secret})
		_, err := bad.Metadata(context.Background(), MetadataRequest{})
		bad.Close()
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Metadata: %v, want ErrUnauthenticated saying %q", tc.name, err, tc.want)
		}
	}

	// curl, a replay and a far clock, by hand.
	post := func(sign func(r *http.Request, body []byte)) (int, string) {
		t.Helper()
		body := []byte("{}")
		r, err := http.NewRequest(http.MethodPost, "http://"+nodes[0].addr+pathMetadata, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if sign != nil {
			sign(r, body)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post(nil); code != http.StatusUnauthorized || !strings.Contains(body, `"UNAUTHENTICATED"`) {
		t.Errorf("curl without the credential: %d %s", code, body)
	}
	var captured string
	if code, body := post(func(r *http.Request, body []byte) {
		signRequest(secret, r, body, time.Now())
		captured = r.Header.Get("Authorization")
	}); code != http.StatusOK {
		t.Errorf("a signed request: %d %s", code, body)
	}
	if code, body := post(func(r *http.Request, _ []byte) { r.Header.Set("Authorization", captured) }); code != http.StatusUnauthorized || !strings.Contains(body, "used before") {
		t.Errorf("the same request replayed: %d %s", code, body)
	}
	if code, body := post(func(r *http.Request, body []byte) { signRequest(secret, r, body, time.Now().Add(-time.Hour)) }); code != http.StatusUnauthorized || !strings.Contains(body, "check the clocks") {
		t.Errorf("a request signed an hour ago: %d %s", code, body)
	}
	if code, body := post(func(r *http.Request, _ []byte) { signRequest(secret, r, []byte(`{"topics":["other"]}`), time.Now()) }); code != http.StatusUnauthorized || !strings.Contains(body, "another cluster secret") {
		t.Errorf("a signature of another body: %d %s", code, body)
	}

	waitFor(t, 10*time.Second, "the refusals logged", func() bool {
		return strings.Contains(logs.String(), "refused a client without a valid cluster credential")
	})

	// And the cluster carries on.
	mustCreate(t, cl, "payments")
	for _, nd := range nodes {
		waitFor(t, 10*time.Second, "the second topic on every voter", func() bool { return len(mustTopics(nd.c)) == 2 })
	}
}

// TestRaftStreamCredential: with the cluster secret, the mux hands Raft a
// stream that opens with the credential (as streamLayer dials one), and
// closes one without it, or with another secret's, unread.
func TestRaftStreamCredential(t *testing.T) {
	secret := bytes.Repeat([]byte("s"), MinClusterSecretBytes)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(ln, ln.Addr(), nil, newClusterAuth(secret, nil, logger), logger, func(error) {})
	defer m.close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := m.raft.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raft.ServerAddress(ln.Addr().String())
	for _, tc := range []struct {
		name   string
		secret []byte
	}{{"no secret", nil}, {"another secret", bytes.Repeat([]byte("o"), MinClusterSecretBytes)}} {
		c, err := streamLayer{chanListener: m.raft, secret: tc.secret}.Dial(addr, 5*time.Second)
		if tc.secret != nil {
			// Closed unanswered, so the dialer's wait for the
			// controller's proof already fails.
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("%s: dial: %v, want ErrUnauthenticated", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		// The bare marker byte, then silence: the controller waits for
		// the credential no longer than the peer takes to hang up.
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err = c.Read(make([]byte, 1))
		var ne net.Error
		if err == nil || errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: the stream was not closed: %v", tc.name, err)
		}
		c.Close()
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("Raft was handed a stream without the credential")
	default:
	}
	c, err := streamLayer{chanListener: m.raft, secret: secret}.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case got := <-accepted:
		got.Close()
	case <-time.After(30 * time.Second):
		t.Fatal("a stream with the credential never reached Raft")
	}
}

// TestRaftStreamUnprovenPeer: a voter holding the cluster secret does not
// hand Raft a stream to a peer that does not prove it holds the secret
// too: one without a secret (whose Raft closes the stream on the
// opening), one with another secret, and one answering with a proof
// under another secret; the error names the peer and the key to set.
func TestRaftStreamUnprovenPeer(t *testing.T) {
	secret, other := bytes.Repeat([]byte("s"), MinClusterSecretBytes), bytes.Repeat([]byte("o"), MinClusterSecretBytes)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	// muxed is a peer's mux whose Raft closes each stream after its
	// first byte, as raft.NetworkTransport does with an opening it cannot
	// decode.
	muxed := func(auth *clusterAuth) string {
		ln := listen()
		m := newMux(ln, ln.Addr(), nil, auth, logger, func(error) {})
		t.Cleanup(m.close)
		go func() {
			for {
				c, err := m.raft.Accept()
				if err != nil {
					return
				}
				_, _ = c.Read(make([]byte, 1))
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	// forger answers every opening with a proof under another secret.
	forger := func() string {
		ln := listen()
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				open := make([]byte, 1+raftHelloLen)
				if _, err := io.ReadFull(c, open); err == nil {
					_, _ = c.Write(raftAnswer(other, open[1:]))
				}
				c.Close()
			}
		}()
		return ln.Addr().String()
	}
	for _, tc := range []struct{ name, addr string }{
		{"a peer without a secret", muxed(nil)},
		{"a peer with another secret", muxed(newClusterAuth(other, nil, logger))},
		{"a peer forging the proof", forger()},
	} {
		c, err := streamLayer{secret: secret}.Dial(raft.ServerAddress(tc.addr), 10*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("%s: dialled", tc.name)
			continue
		}
		if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.addr) || !strings.Contains(err.Error(), "auth.controller_secret_file") {
			t.Errorf("%s: %v, want ErrUnauthenticated naming the peer and auth.controller_secret_file", tc.name, err)
		}
	}
}

// TestClusterSecretUnprovenAnswer: a client holding the cluster secret
// refuses, with ErrUnauthenticated naming the controller and what to set,
// and without retrying, the answer of a controller without the secret and
// an answer whose proof is missing, under another secret, of another
// body, status or request, or not hex; a proof made right is taken.
func TestClusterSecretUnprovenAnswer(t *testing.T) {
	secret, other := bytes.Repeat([]byte("s"), MinClusterSecretBytes), bytes.Repeat([]byte("o"), MinClusterSecretBytes)

	nodes := startNetCluster(t, 1)
	cl := NewClient(addrsOf(nodes), ClientOptions{Timeout: 20 * time.Second, ClusterSecret: secret})
	_, err := cl.Metadata(context.Background(), MetadataRequest{})
	if !errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), nodes[0].addr) ||
		!strings.Contains(err.Error(), "does not require the cluster secret") || !strings.Contains(err.Error(), "auth.controller_secret_file") {
		t.Errorf("a controller without the secret: %v, want ErrUnauthenticated naming it and auth.controller_secret_file", err)
	}
	// A write is not sent to a controller that has not proven the secret,
	// so it cannot take effect there.
	_, err = cl.CreateTopics(context.Background(), CreateTopicsRequest{Topics: []NewTopic{{Name: "unproven", Partitions: 1, ReplicationFactor: 1}}})
	cl.Close()
	if !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a create on a controller without the secret: %v, want ErrUnauthenticated", err)
	}
	open := NewClient(addrsOf(nodes), ClientOptions{Timeout: 20 * time.Second})
	md, err := open.Metadata(context.Background(), MetadataRequest{})
	open.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range md.Topics {
		if tp.Name == "unproven" {
			t.Errorf("a create refused for want of a proof was carried out on the controller")
		}
	}

	body := []byte("{}\n")
	for _, tc := range []struct {
		name  string
		proof func(nonce string) string
		ok    bool
	}{
		{"no proof", func(string) string { return "" }, false},
		{"another secret", func(n string) string { return hex.EncodeToString(answerMAC(other, n, http.StatusOK, body)) }, false},
		{"another body", func(n string) string {
			return hex.EncodeToString(answerMAC(secret, n, http.StatusOK, []byte("{\"topics\":[]}\n")))
		}, false},
		{"another status", func(n string) string {
			return hex.EncodeToString(answerMAC(secret, n, http.StatusMisdirectedRequest, body))
		}, false},
		{"another request", func(string) string {
			return hex.EncodeToString(answerMAC(secret, strings.Repeat("n", 16), http.StatusOK, body))
		}, false},
		{"not hex", func(string) string { return "zz" }, false},
		{"made right", func(n string) string { return hex.EncodeToString(answerMAC(secret, n, http.StatusOK, body)) }, true},
	} {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			_, params, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			var nonce []byte
			for _, kv := range strings.Split(params, ",") {
				if v, ok := strings.CutPrefix(kv, "n="); ok {
					nonce, _ = hex.DecodeString(v)
				}
			}
			if p := tc.proof(string(nonce)); p != "" {
				w.Header().Set(ClusterProofHeader, p)
			}
			_, _ = w.Write(body)
		}))
		addr := strings.TrimPrefix(srv.URL, "http://")
		cl := NewClient([]string{addr}, ClientOptions{Timeout: 20 * time.Second, ClusterSecret: secret})
		_, err := cl.Metadata(context.Background(), MetadataRequest{})
		cl.Close()
		srv.Close()
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && (!errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "auth.controller_secret_file")):
			t.Errorf("%s: %v, want ErrUnauthenticated naming %s and auth.controller_secret_file", tc.name, err, addr)
		case !tc.ok && hits.Load() != 1:
			t.Errorf("%s: sent %d times, want once", tc.name, hits.Load())
		}
	}
}

// TestClusterSecretRotationOrder: through the three rolls of a rotation
// (clusterauth.go), a node holding the secrets of one step and a
// controller holding those of the step before or after answer each other
// with proven answers; presenting the new secret in the first roll, as
// the two-roll order would, is refused by a controller not yet rolled.
func TestClusterSecretRotationOrder(t *testing.T) {
	older, newer := bytes.Repeat([]byte("o"), MinClusterSecretBytes), bytes.Repeat([]byte("n"), MinClusterSecretBytes)
	type step struct {
		current []byte
		old     [][]byte
	}
	steps := []step{{older, nil}, {older, [][]byte{newer}}, {newer, [][]byte{older}}, {newer, nil}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	talk := func(client, ctl step) error {
		r, _ := http.NewRequest(http.MethodPost, "http://x/v1/metadata?leader=1", nil)
		nonce := signRequest(client.current, r, []byte("{}"), time.Now())
		p, err := newClusterAuth(ctl.current, ctl.old, logger).verifyRequest(r, []byte("{}"))
		if err != nil {
			return err
		}
		h := http.Header{}
		p.prove(h, http.StatusOK, []byte("{}\n"))
		return checkAnswer(client.current, nonce, h, http.StatusOK, []byte("{}\n"))
	}
	for i := 1; i < len(steps); i++ {
		for _, pair := range [][2]step{{steps[i-1], steps[i]}, {steps[i], steps[i-1]}} {
			if err := talk(pair[0], pair[1]); err != nil {
				t.Errorf("roll %d: a node at one step and a controller at the other: %v", i, err)
			}
		}
	}
	if err := talk(step{newer, [][]byte{older}}, steps[0]); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("the new secret presented before every controller holds it: %v, want ErrUnauthenticated", err)
	}
}

// TestClusterSecretRefusals: a secret too short to be one is refused, and
// a malformed Authorization header or Raft opening is ErrUnauthenticated.
func TestClusterSecretRefusals(t *testing.T) {
	if err := CheckClusterSecret([]byte("changeme")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("a short secret: %v", err)
	}
	a := newClusterAuth(bytes.Repeat([]byte("k"), MinClusterSecretBytes), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, h := range []string{"Bearer abc", ClusterAuthScheme + " t=1,n=zz,s=00", ClusterAuthScheme + " garbage"} {
		r, _ := http.NewRequest(http.MethodPost, "http://x/v1/metadata", nil)
		r.Header.Set("Authorization", h)
		if _, err := a.verifyRequest(r, nil); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%q: %v, want ErrUnauthenticated", h, err)
		}
	}
	if _, err := a.verifyRaftHello(make([]byte, raftHelloLen)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("a zero Raft opening: %v", err)
	}
	if _, err := a.verifyRaftHello(raftHello(a.secrets[0], time.Now())); err != nil {
		t.Errorf("a Raft opening made with the secret: %v", err)
	}
}

// TestClusterSecretRotation: a controller holding a new secret and the
// old one accepts requests and Raft openings signed with either, proving
// its answers under the one each was signed with, so that a client not
// yet rotated checks them with the old secret alone, and refuses a
// third.
func TestClusterSecretRotation(t *testing.T) {
	newer, older, other := bytes.Repeat([]byte("n"), 32), bytes.Repeat([]byte("o"), 32), bytes.Repeat([]byte("x"), 32)
	a := newClusterAuth(newer, [][]byte{older}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, tc := range []struct {
		name   string
		secret []byte
		ok     bool
	}{{"the new secret", newer, true}, {"the old secret", older, true}, {"another secret", other, false}} {
		r, _ := http.NewRequest(http.MethodPost, "http://x/v1/metadata?leader=1", nil)
		nonce := signRequest(tc.secret, r, []byte("{}"), time.Now())
		p, err := a.verifyRequest(r, []byte("{}"))
		if (err == nil) != tc.ok {
			t.Errorf("a request signed with %s: %v, want accepted %v", tc.name, err, tc.ok)
		}
		if err == nil {
			h := http.Header{}
			p.prove(h, http.StatusOK, []byte("{}\n"))
			if err := checkAnswer(tc.secret, nonce, h, http.StatusOK, []byte("{}\n")); err != nil {
				t.Errorf("the answer to a request signed with %s: %v", tc.name, err)
			}
		}
		hello := raftHello(tc.secret, time.Now())
		answer, err := a.verifyRaftHello(hello)
		if (err == nil) != tc.ok {
			t.Errorf("a Raft opening made with %s: %v, want accepted %v", tc.name, err, tc.ok)
		}
		if err == nil && !bytes.Equal(answer, raftAnswer(tc.secret, hello)) {
			t.Errorf("the answer to a Raft opening made with %s is not proven under it", tc.name)
		}
	}
}
