package replica

import (
	"context"
	"fmt"
	"sync"

	"github.com/aerostream/aerostream/logstore/ring"
)

// peer is the ring client of one other store, dialled on first use: a
// leader that is down must not hold up the view that names it.
type peer struct {
	id      int32
	addr    string
	version uint64
	mu      struct {
		sync.Mutex
		b      ring.Backend
		closed bool
	}
}

// errPeerGone: the view moved the store to another address (or dropped
// it) while a fetcher was using the old client.
var errPeerGone = fmt.Errorf("%w: the store's ring address changed", ring.ErrClosed)

// get returns the client, dialling it when there is none.
func (p *peer) get(ctx context.Context, dial func(context.Context, string) (ring.Backend, error)) (ring.Backend, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return nil, errPeerGone
	}
	if p.mu.b != nil {
		return p.mu.b, nil
	}
	if p.addr == "" || p.addr == "in-process" {
		return nil, fmt.Errorf("%w: store %d has no network ring address (%q)", ring.ErrInvalidRequest, p.id, p.addr)
	}
	b, err := dial(ctx, p.addr)
	if err != nil {
		return nil, err
	}
	p.mu.b = b
	return b, nil
}

// reset drops the client so the next get dials anew: a client that keeps
// failing may hold a ring layout the store no longer has.
func (p *peer) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.b != nil {
		_ = p.mu.b.Close()
		p.mu.b = nil
	}
}

func (p *peer) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.closed = true
	if p.mu.b != nil {
		_ = p.mu.b.Close()
		p.mu.b = nil
	}
}

// updatePeers follows the stores' ring addresses: a store whose address or
// ring version changed gets a new client, so the fetchers reach it where
// it now listens.
func (m *Manager) updatePeers(nodes map[int32]nodeAddr) {
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	for id, p := range m.peers {
		n, ok := nodes[id]
		if !ok || n.addr != p.addr || n.version != p.version {
			p.close()
			delete(m.peers, id)
		}
	}
	for id, n := range nodes {
		if id == m.opts.LocalID {
			continue
		}
		if _, ok := m.peers[id]; !ok {
			m.peers[id] = &peer{id: id, addr: n.addr, version: n.version}
		}
	}
}

// backend returns the ring client of store id.
func (m *Manager) backend(ctx context.Context, id int32) (ring.Backend, error) {
	m.peersMu.Lock()
	p := m.peers[id]
	m.peersMu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("%w: store %d is not in the metadata", ring.ErrInvalidRequest, id)
	}
	return p.get(ctx, m.opts.Dial)
}

// resetPeer drops store id's client; the next use dials it again.
func (m *Manager) resetPeer(id int32) {
	m.peersMu.Lock()
	p := m.peers[id]
	m.peersMu.Unlock()
	if p != nil {
		p.reset()
	}
}
