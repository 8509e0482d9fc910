package controller

import (
	"errors"
	"fmt"
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
func newMux(ln net.Listener, advertise net.Addr, log *slog.Logger, onFail func(error)) *mux {
	m := &mux{ln: ln, advertise: advertise, log: log, onFail: onFail, closed: make(chan struct{})}
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

func (m *mux) sniff(c net.Conn) {
	defer m.wg.Done()
	var b [1]byte
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	if _, err := c.Read(b[:]); err != nil {
		m.untrack(c)
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if b[0] == raftStreamByte {
		// Raft's handler goroutines block reading until the peer hangs
		// up; the conn stays tracked so close can end them.
		m.raft.deliver(&trackedConn{Conn: c, m: m})
		return
	}
	m.untrack(c) // http.Server tracks and closes its own connections
	m.api.deliver(&peekedConn{Conn: c, first: b[0], has: true})
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

// streamLayer is raft.StreamLayer over the mux.
type streamLayer struct {
	*chanListener
}

var _ raft.StreamLayer = streamLayer{}

func (s streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{raftStreamByte}); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
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
	m    *mux
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.m.untrack(c.Conn) })
	return c.Conn.Close()
}

// tcpAddr is a net.Addr for an advertised host:port that need not resolve.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }
