package controller

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The cluster credential. With Options.ClusterSecret set, every client API
// request and every Raft stream must prove it holds the same secret, or is
// refused: stores, gateways, the CLI and the other voters carry it
// (ClientOptions.ClusterSecret), anyone else who reaches the port gets
// ErrUnauthenticated. The secret itself never crosses the wire, so a
// plaintext listener does not give it away: a request carries an HMAC-SHA256
// under it of its method, path, body, a timestamp and a random nonce
//
//	Authorization: AeroStream-HMAC-SHA256 t=<unix seconds>,n=<32 hex>,s=<64 hex>
//
// and a Raft stream opens with the marker byte, then the timestamp, nonce
// and an HMAC of those. The controller accepts a timestamp within
// clusterAuthSkew of its clock and each nonce once, so a captured request
// or stream opening cannot be replayed. What plaintext still shows (the
// answers, topic names, SCRAM salts) and still allows (tampering with a
// connection in flight) needs SSL://; the two combine.
//
// The proof runs both ways, so that a client holding the secret never
// acts on a controller that lacks it (one started without the security
// keys would otherwise take anyone's calls while the secured nodes in
// front of it kept talking to it): each answer to a verified request
// carries, in ClusterProofHeader, an HMAC under the secret that verified
// it of the request's nonce, the status and the body, and a Raft listener
// answers a verified stream opening with an HMAC of it. The answer is
// proven under the secret the client signed with, so a client needs no
// other secret to check it, through a rotation too. A client with a
// secret refuses an answer without a valid proof (ErrUnauthenticated,
// naming the controller), and a voter a peer that does not prove it.
//
// A rolling rotation needs two secrets at once: Options.OldClusterSecrets
// are accepted beside the current one, which alone is presented. A node
// presenting the new secret is refused by one not holding it yet, so a
// rotation takes three rolls, each one node at a time and each finished
// on every node before the next begins, with the cluster up throughout:
// every node takes the new secret as an old one (accepted, the old one
// still presented), then presents it (the old one still accepted), then
// drops the old one.

// ClusterAuthScheme is the Authorization scheme of a signed request.
const ClusterAuthScheme = "AeroStream-HMAC-SHA256"

// ClusterProofHeader carries a controller's proof that it holds the
// secret a request was signed with: 64 hex digits of an HMAC.
const ClusterProofHeader = "AeroStream-Cluster-Proof"

// MinClusterSecretBytes is the shortest cluster secret accepted: 32
// random bytes' worth of hex or base64 is more than enough, and a short
// one is likely a placeholder.
const MinClusterSecretBytes = 32

const (
	// clusterAuthSkew is how far a signed request's clock may be from the
	// controller's.
	clusterAuthSkew = 2 * time.Minute
	// maxNonces bounds the nonces remembered within the skew window.
	maxNonces = 1 << 20
	// raftHelloLen is what follows the marker byte on an authenticated
	// Raft stream: timestamp, nonce and MAC.
	raftHelloLen = 8 + 16 + sha256.Size
	// raftAnswerLen is what a Raft listener holding the secret writes
	// back on a verified stream: an HMAC of the opening.
	raftAnswerLen = sha256.Size
)

// CheckClusterSecret refuses a secret too short to be one.
func CheckClusterSecret(secret []byte) error {
	if len(secret) < MinClusterSecretBytes {
		return fmt.Errorf("the cluster secret has %d bytes, want at least %d (openssl rand -hex 32 makes one)", len(secret), MinClusterSecretBytes)
	}
	return nil
}

// clusterMAC is the HMAC of a request or Raft stream opening: a purpose,
// then each field, length-prefixed so no two inputs share an encoding.
func clusterMAC(secret []byte, fields ...string) []byte {
	m := hmac.New(sha256.New, secret)
	var n [4]byte
	for _, f := range append([]string{"aerostream-controller-v1"}, fields...) {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

func bodyDigest(body []byte) string {
	d := sha256.Sum256(body)
	return string(d[:])
}

// signRequest sets r's Authorization to a signature of it with body and
// returns its nonce, which the answer's proof covers.
func signRequest(secret []byte, r *http.Request, body []byte, now time.Time) (nonce string) {
	var n [16]byte
	_, _ = rand.Read(n[:]) // never fails (crypto/rand)
	t := strconv.FormatInt(now.Unix(), 10)
	mac := clusterMAC(secret, "http", r.Method, r.URL.RequestURI(), t, string(n[:]), bodyDigest(body))
	r.Header.Set("Authorization", fmt.Sprintf("%s t=%s,n=%s,s=%s", ClusterAuthScheme, t, hex.EncodeToString(n[:]), hex.EncodeToString(mac)))
	return string(n[:])
}

// answerMAC is the proof of an answer to the request with nonce.
func answerMAC(secret []byte, nonce string, status int, body []byte) []byte {
	return clusterMAC(secret, "http-answer", nonce, strconv.Itoa(status), bodyDigest(body))
}

// prover proves the answers to one verified request.
type prover struct {
	secret []byte // the one the request was signed with
	nonce  string
}

// prove sets h's proof of an answer; nil p, a controller without a
// secret, proves nothing.
func (p *prover) prove(h http.Header, status int, body []byte) {
	if p != nil {
		h.Set(ClusterProofHeader, hex.EncodeToString(answerMAC(p.secret, p.nonce, status, body)))
	}
}

// checkAnswer verifies the proof of an answer (header h, status, body) to
// the request signed with secret and nonce.
func checkAnswer(secret []byte, nonce string, h http.Header, status int, body []byte) error {
	proof := h.Get(ClusterProofHeader)
	if proof == "" {
		return fmt.Errorf("%w: its answer carries no proof of the cluster secret: the controller does not require the cluster secret; set the same auth.controller_secret_file on every controller", ErrUnauthenticated)
	}
	mac, err := hex.DecodeString(proof)
	if err != nil || !hmac.Equal(mac, answerMAC(secret, nonce, status, body)) {
		return fmt.Errorf("%w: its answer's proof of the cluster secret does not verify: the controller holds another cluster secret, or the answer was altered in transit; set the same auth.controller_secret_file on every controller", ErrUnauthenticated)
	}
	return nil
}

// raftHello is what a Raft dialer writes after the marker byte.
func raftHello(secret []byte, now time.Time) []byte {
	b := make([]byte, 8+16, raftHelloLen)
	binary.BigEndian.PutUint64(b, uint64(now.Unix()))
	_, _ = rand.Read(b[8:24])
	return append(b, clusterMAC(secret, "raft", string(b[:24]))...)
}

// raftAnswer is what a Raft listener holding secret writes back on a
// stream that opened with hello.
func raftAnswer(secret, hello []byte) []byte {
	return clusterMAC(secret, "raft-answer", string(hello[:24]))
}

// clusterAuth checks the credential on the controller's side.
type clusterAuth struct {
	// secrets are the current secret, then the old ones still accepted.
	secrets [][]byte
	now     func() time.Time
	log     *slog.Logger
	// loggedAt is when a refusal was last logged (unix nanoseconds).
	loggedAt atomic.Int64
	mu       struct {
		sync.Mutex
		seen map[[16]byte]int64 // nonce -> unix second it may be forgotten at
	}
}

func newClusterAuth(secret []byte, old [][]byte, log *slog.Logger) *clusterAuth {
	if len(secret) == 0 {
		return nil
	}
	a := &clusterAuth{now: time.Now, log: log}
	for _, s := range append([][]byte{secret}, old...) {
		a.secrets = append(a.secrets, bytes.Clone(s))
	}
	a.mu.seen = map[[16]byte]int64{}
	return a
}

// noCredential names what a refused client lacks, for its error.
const noCredential = "this controller requires the cluster credential: give the client the cluster's secret (auth.controller_secret_file; for the CLI --controller-secret-file or AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE, or --data-dir naming the data_dir of a serve that made its own controller.secret)"

// verifyRequest checks r's signature over body and returns the prover of
// its answers; nil a is a controller without a secret, which takes every
// request and proves nothing.
func (a *clusterAuth) verifyRequest(r *http.Request, body []byte) (*prover, error) {
	if a == nil {
		return nil, nil
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, fmt.Errorf("%w: the request carries no credential: %s", ErrUnauthenticated, noCredential)
	}
	scheme, params, _ := strings.Cut(h, " ")
	if scheme != ClusterAuthScheme {
		return nil, fmt.Errorf("%w: authorization scheme %q, want %s: %s", ErrUnauthenticated, scheme, ClusterAuthScheme, noCredential)
	}
	var t, n, s string
	for _, kv := range strings.Split(params, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		switch k {
		case "t":
			t = v
		case "n":
			n = v
		case "s":
			s = v
		}
	}
	nonce, err1 := hex.DecodeString(n)
	mac, err2 := hex.DecodeString(s)
	sec, err3 := strconv.ParseInt(t, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(nonce) != 16 {
		return nil, fmt.Errorf("%w: malformed %s credential (want t=<unix seconds>,n=<32 hex>,s=<64 hex>)", ErrUnauthenticated, ClusterAuthScheme)
	}
	digest := bodyDigest(body)
	secret, err := a.accept(sec, [16]byte(nonce), mac, func(secret []byte) []byte {
		return clusterMAC(secret, "http", r.Method, r.URL.RequestURI(), t, string(nonce), digest)
	})
	if err != nil {
		return nil, err
	}
	return &prover{secret: secret, nonce: string(nonce)}, nil
}

// verifyRaftHello checks the opening of a Raft stream and returns what
// to answer it with.
func (a *clusterAuth) verifyRaftHello(b []byte) (answer []byte, err error) {
	if len(b) != raftHelloLen {
		return nil, fmt.Errorf("%w: a Raft stream opening of %d bytes, want %d", ErrUnauthenticated, len(b), raftHelloLen)
	}
	secret, err := a.accept(int64(binary.BigEndian.Uint64(b)), [16]byte(b[8:24]), b[24:], func(secret []byte) []byte {
		return clusterMAC(secret, "raft", string(b[:24]))
	})
	if err != nil {
		return nil, err
	}
	return raftAnswer(secret, b), nil
}

// accept checks a MAC against each secret held (macUnder makes the
// expected one), then its time and nonce, and returns the secret that
// verified it: only a proven holder of a secret can fill the nonce
// memory.
func (a *clusterAuth) accept(sec int64, nonce [16]byte, mac []byte, macUnder func(secret []byte) []byte) ([]byte, error) {
	var verified []byte
	for _, secret := range a.secrets {
		if hmac.Equal(mac, macUnder(secret)) {
			verified = secret
			break
		}
	}
	if verified == nil {
		return nil, fmt.Errorf("%w: the credential does not verify: this client holds another cluster secret than the controller", ErrUnauthenticated)
	}
	now := a.now()
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > clusterAuthSkew || d < -clusterAuthSkew {
		return nil, fmt.Errorf("%w: the credential was made at %s, %v from this controller's clock (at most %v): check the clocks (NTP)",
			ErrUnauthenticated, at.UTC().Format(time.RFC3339), d.Round(time.Second), clusterAuthSkew)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, seen := a.mu.seen[nonce]; seen {
		return nil, fmt.Errorf("%w: the credential was used before (a replay)", ErrUnauthenticated)
	}
	if len(a.mu.seen) >= maxNonces {
		for k, until := range a.mu.seen {
			if until < now.Unix() {
				delete(a.mu.seen, k)
			}
		}
		if len(a.mu.seen) >= maxNonces {
			return nil, fmt.Errorf("%w: more than %d signed requests within %v: try again", ErrUnauthenticated, maxNonces, clusterAuthSkew)
		}
	}
	// A nonce is remembered for as long as its timestamp is accepted.
	a.mu.seen[nonce] = sec + int64(clusterAuthSkew/time.Second) + 1
	return verified, nil
}

// peerOptions are what a voter reaches other controllers with: its node
// certificate and the cluster credential.
func peerOptions(o Options) ClientOptions {
	return ClientOptions{Logger: o.Logger, TLS: o.PeerTLS, ClusterSecret: o.ClusterSecret}
}

// refused logs a refused credential, at most once a second, so that a
// client without one cannot flood the log; the client reads why in its
// answer.
func (a *clusterAuth) refused(remote, what string, err error) {
	now := time.Now().UnixNano()
	last := a.loggedAt.Load()
	if now-last < int64(time.Second) || !a.loggedAt.CompareAndSwap(last, now) {
		return
	}
	a.log.Warn("controller: refused a client without a valid cluster credential", "remote", remote, "request", what, "err", err)
}
