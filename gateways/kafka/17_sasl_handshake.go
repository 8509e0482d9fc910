package kafka

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake: v0-v1.
//
// Chooses the SASL mechanism of the exchange that follows in
// SaslAuthenticate requests (v1). v0 is advertised because librdkafka
// looks for it before it enables SASL at all, but v0's raw tokens after
// the handshake are not served: a v0 handshake answers UNSUPPORTED_VERSION
// and closes the connection (every current client sends v1). It answers the enabled
// mechanisms, with UNSUPPORTED_SASL_MECHANISM for one not among them. On
// an authenticated connection it starts a re-authentication (KIP-368),
// which must keep the mechanism. On a listener without SASL it answers
// ILLEGAL_SASL_STATE, as Kafka does.

func init() { regKey(17, 0, 1, (*Gateway).handleSaslHandshake) }

func (g *Gateway) handleSaslHandshake(_ context.Context, rc *reqCtx) (kmsg.Response, error) {
	req := rc.req.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	a := &rc.s.auth
	if !g.opts.Auth.SASL {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = slices.Clone(g.opts.Auth.Mechanisms)
	if req.Version == 0 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		rc.closeAfter = true
		return resp, nil
	}
	if !slices.Contains(g.opts.Auth.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return resp, nil
	}
	if a.exchange != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		rc.closeAfter = true
		return resp, nil
	}
	if a.authenticated && req.Mechanism != a.authMechanism {
		rc.s.conn.Log.Warn("sasl: closing connection", "err", errSASLMechanism, "principal", a.principal, "mechanism", req.Mechanism)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		rc.closeAfter = true
		return resp, nil
	}
	ex, err := newExchange(g, req.Mechanism)
	if err != nil {
		return nil, fmt.Errorf("sasl: %w", err)
	}
	a.mechanism, a.exchange = req.Mechanism, ex
	return resp, nil
}
