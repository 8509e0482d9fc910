package controller

import (
	"crypto/hmac"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// One port serves both Raft and the client API (DESIGN §1: the controller
// listens on --controller-listen). The first byte of a connection says
// which: raftStreamByte for Raft's own RPC stream, anything else for the
// client API, which is HTTP/1.1 (a request line starts with an ASCII
// letter). The Raft dialer writes the marker byte; the client API needs no
// marker, so curl works against the controller address.
//
// With Options.TLS the listener serves mutual TLS: the handshake comes
// first, and the marker byte and HTTP travel inside it, so Raft and the
// client API are both encrypted and both open only to holders of a
// certificate of the cluster CA. With Options.ClusterSecret the marker
// byte is followed by the cluster credential, which the listener answers
// with its proof of the same secret before Raft's own bytes flow; an HTTP
// request carries it in its Authorization header, and the answer its
// proof in ClusterProofHeader (clusterauth.go).
const raftStreamByte = 0xAF

// sniffTimeout bounds how long a new connection may stay silent before its
// first byte.
const sniffTimeout = 10 * time.Second

// mux splits one listener into the Raft stream layer and the HTTP listener.
type mux struct {
	ln        net.Listener
	advertise net.Addr
	log       *slog.Logger
	onFail    func(error)
	// tls, when set, is completed on each connection before the first
	// byte is read, so the marker byte and the client API both travel
	// inside it.
	tls *tls.Config
	// auth, when set, requires a Raft stream to open with the cluster
	// credential after its marker byte (clusterauth.go).
	auth *clusterAuth

	raft *chanListener
	api  *chanListener

	wg     sync.WaitGroup
	closed chan struct{}
	once   sync.Once

	mu struct {
		sync.Mutex
		conns map[net.Conn]struct{} // being sniffed or handed to raft
	}
}

// newMux starts accepting on ln; onFail is told if the accept loop dies
// other than by close.
func newMux(ln net.Listener, advertise net.Addr, tlsCfg *tls.Config, auth *clusterAuth, log *slog.Logger, onFail func(error)) *mux {
	m := &mux{ln: ln, advertise: advertise, tls: tlsCfg, auth: auth, log: log, onFail: onFail, closed: make(chan struct{})}
	m.mu.conns = map[net.Conn]struct{}{}
	m.raft = newChanListener(advertise, m.closed)
	m.api = newChanListener(ln.Addr(), m.closed)
	m.wg.Add(1)
	go m.accept()
	return m
}

func (m *mux) accept() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.closed:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			m.onFail(fmt.Errorf("controller listener %s: %w", m.ln.Addr(), err))
			return
		}
		delay = 0
		if !m.track(c) {
			c.Close()
			return
		}
		m.wg.Add(1)
		go m.sniff(c)
	}
}

// track registers c so close can end it; false once closed.
func (m *mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.closed:
		return false
	default:
	}
	m.mu.conns[c] = struct{}{}
	return true
}

func (m *mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.mu.conns, c)
}

func (m *mux) sniff(raw net.Conn) {
	defer m.wg.Done()
	c := raw
	_ = raw.SetDeadline(time.Now().Add(sniffTimeout))
	if m.tls != nil {
		tc := tls.Server(raw, m.tls)
		if err := tc.Handshake(); err != nil {
			m.refuse(raw, err)
			m.untrack(raw)
			raw.Close()
			return
		}
		c = tc
	}
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil {
		m.untrack(raw)
		raw.Close()
		return
	}
	if b[0] == raftStreamByte && m.auth != nil {
		var hello [raftHelloLen]byte
		_, err := io.ReadFull(c, hello[:])
		if err == nil {
			var answer []byte
			if answer, err = m.auth.verifyRaftHello(hello[:]); err == nil {
				_, err = c.Write(answer)
			}
		} else {
			err = fmt.Errorf("%w: the Raft stream did not open with the cluster credential: %v", ErrUnauthenticated, err)
		}
		if err != nil {
			m.auth.refused(raw.RemoteAddr().String(), "raft", err)
			m.untrack(raw)
			raw.Close()
			return
		}
	}
	_ = raw.SetDeadline(time.Time{})
	if b[0] == raftStreamByte {
		// Raft's handler goroutines block reading until the peer hangs
		// up; the conn stays tracked so close can end them.
		m.raft.deliver(&trackedConn{Conn: c, raw: raw, m: m})
		return
	}
	m.untrack(raw) // http.Server tracks and closes its own connections
	m.api.deliver(&peekedConn{Conn: c, first: b[0], has: true})
}

// refuse logs why a TLS handshake failed. A client that sent plaintext
// HTTP gets a 400 saying so, as net/http's own TLS server answers, so
// that curl or a misconfigured node shows the reason rather than a reset.
func (m *mux) refuse(raw net.Conn, err error) {
	log := m.log.With("remote", raw.RemoteAddr().String())
	var rhe tls.RecordHeaderError
	if !errors.As(err, &rhe) || rhe.Conn == nil {
		log.Warn("controller: TLS handshake failed; closing the connection", "err", err)
		return
	}
	first := rhe.RecordHeader[0]
	if first == raftStreamByte {
		log.Warn("controller: a plaintext Raft peer reached a mutual TLS listener; closing it (is its listeners.controller SSL://?)")
		return
	}
	log.Warn("controller: a client that does not speak TLS reached a mutual TLS listener; closing it (is its listeners.controller SSL://?)")
	if first >= 'A' && first <= 'Z' {
		_, _ = io.WriteString(raw, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"+
			"this controller listener serves mutual TLS: use https with a client certificate of the cluster CA\n")
	}
}

// close stops accepting and closes every connection handed to Raft.
func (m *mux) close() {
	m.once.Do(func() {
		m.mu.Lock()
		close(m.closed)
		conns := m.mu.conns
		m.mu.conns = map[net.Conn]struct{}{}
		m.mu.Unlock()
		m.ln.Close()
		for c := range conns {
			c.Close()
		}
	})
	m.wg.Wait()
}

// streamLayer is raft.StreamLayer over the mux. With tls set it dials
// other voters over mutual TLS, presenting the node certificate; the mux
// of a voter with TLS on completes the server side.
type streamLayer struct {
	*chanListener
	tls    *tls.Config // nil: plaintext
	secret []byte      // the cluster credential's; nil: none
}

var _ raft.StreamLayer = streamLayer{}

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	var (
		c   net.Conn
		err error
	)
	if s.tls != nil {
		c, err = tls.DialWithDialer(d, "tcp", string(addr), s.tls)
	} else {
		c, err = d.Dial("tcp", string(addr))
	}
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	open := []byte{raftStreamByte}
	var hello []byte
	if len(s.secret) > 0 {
		hello = raftHello(s.secret, time.Now())
		open = append(open, hello...)
	}
	if _, err := c.Write(open); err != nil {
		c.Close()
		return nil, err
	}
	if hello != nil {
		// A peer without the secret hands the opening to Raft, which
		// closes the stream on it, or keeps silent: neither proves.
		var answer [raftAnswerLen]byte
		if _, err := io.ReadFull(c, answer[:]); err != nil || !hmac.Equal(answer[:], raftAnswer(s.secret, hello)) {
			c.Close()
			if err == nil {
				err = errors.New("a wrong proof")
			}
			return nil, fmt.Errorf("%w: controller %s did not prove it holds the cluster secret (%v): it runs without the cluster secret, or with another; set the same auth.controller_secret_file on every controller", ErrUnauthenticated, addr, err)
		}
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr   net.Addr
	ch     chan net.Conn
	closed <-chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr, closed <-chan struct{}) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), closed: closed, done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.closed:
		c.Close()
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
	case <-l.done:
	}
	return nil, net.ErrClosed
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// peekedConn gives back the byte the mux read.
type peekedConn struct {
	net.Conn
	first byte
	has   bool
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0] = c.first
		c.has = false
		return 1, nil
	}
	return c.Conn.Read(p)
}

type trackedConn struct {
	net.Conn
	raw  net.Conn // what the mux tracks: Conn itself, or the socket under its TLS
	m    *mux
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.m.untrack(c.raw) })
	return c.Conn.Close()
}

// tcpAddr is a net.Addr for an advertised host:port that need not resolve.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }
