package ring

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// Mutual TLS on the ring. A store's listener and every client that dials
// it (gateways, and follower stores replicating) present the node
// certificate and verify the other side's against the cluster CA, so only
// the cluster's own nodes reach a store's shards. The Server's and
// DialOptions' TLS fields turn it on; tools/ builds both from [tls].

// tlsHandshakeTimeout bounds how long an accepted connection may take to
// complete its TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// acceptTLS completes the server side of nc's handshake. On failure it
// logs why, answers a plaintext ring client with an error frame it can
// read, and closes nc.
func (s *Server) acceptTLS(ctx context.Context, cfg *tls.Config, nc net.Conn) (net.Conn, bool) {
	tc := tls.Server(nc, cfg)
	hctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	err := tc.HandshakeContext(hctx)
	if err == nil {
		return tc, true
	}
	s.stats.tlsFailures.Add(1)
	log := s.logger.With("remote", nc.RemoteAddr().String())
	var rhe tls.RecordHeaderError
	if errors.As(err, &rhe) && rhe.Conn != nil {
		log.Warn("ring: a client that does not speak TLS reached a mutual TLS listener; closing it (is its listeners.ring SSL://?)")
		refusePlaintext(nc)
		return nil, false
	}
	log.Warn("ring: TLS handshake failed; closing the connection", "err", err)
	_ = nc.Close()
	return nil, false
}

// refusePlaintext tells a plaintext ring client, in its own framing, that
// the listener needs TLS, then closes nc. It stops sending first and
// reads what the client still sends for a moment, so that the close does
// not reset the connection before the client has read the answer.
func refusePlaintext(nc net.Conn) {
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	code, msg := wireError(fmt.Errorf("%w: dial it with the node certificate", ErrTLSRequired))
	if _, err := nc.Write(appendResponse(nil, &response{Op: OpError, Corr: 1, Code: code, Msg: msg})); err != nil {
		return
	}
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(nc, 1<<20))
}

// clientTLS is opts.TLS for a dial of address: with the server name set to
// the dialled host when the caller left it empty, as tls.Dial does.
func clientTLS(cfg *tls.Config, network, address string) *tls.Config {
	if cfg == nil || cfg.ServerName != "" {
		return cfg
	}
	c := cfg.Clone()
	host := "localhost" // a Unix socket: the node certificate names localhost
	if network != "unix" {
		host = address
		if h, _, err := net.SplitHostPort(address); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	c.ServerName = host
	return c
}
