package native

import (
	"fmt"

	"github.com/aerostream/aerostream/gateways"
	"github.com/aerostream/aerostream/gateways/native/wire"
)

// Handshake (0x01): the first request of a connection. It agrees the
// protocol revision (1) and the feature bits both sides have, tells the
// client the largest frame the gateway reads, and names the SASL mechanism
// the client authenticates with next on a SASL listener (sasl.go); a
// mechanism not offered, or one named on a listener without SASL, is
// refused with UNSUPPORTED_SASL_MECHANISM.

// serverFeatures are the feature bits this gateway has.
const serverFeatures = wire.FeatureIdempotence | wire.FeatureZeroCopyFetch | wire.FeatureLongPoll | wire.FeaturePush | wire.FeatureFetchCommit

func (s *session) handshake(corr uint32, r *wire.Reader) (*gateways.Response, error) {
	var m wire.Handshake
	if err := m.Decode(r); err != nil {
		return nil, err
	}
	if s.hello {
		return s.fail(wire.OpHandshake, corr, fmt.Errorf("%w: second Handshake on a connection", ErrBadRequest), -1), nil
	}
	if m.Version != uint16(wire.Version) {
		err := fmt.Errorf("%w: client speaks revision %d, this gateway %d", ErrUnsupportedVersion, m.Version, wire.Version)
		resp := s.fail(wire.OpHandshake, corr, err, -1)
		resp.CloseAfter()
		return resp, fmt.Errorf("%w: %v", gateways.ErrMalformedFrame, err)
	}
	if err := s.handshakeMechanism(&m); err != nil { // sasl.go
		resp := s.fail(wire.OpHandshake, corr, err, -1)
		resp.CloseAfter()
		return resp, nil
	}
	s.hello = true
	s.conn.Log.Debug("native handshake", "client_id", m.ClientID, "features", m.Features)
	hr := wire.HandshakeResponse{Version: uint16(wire.Version), Features: m.Features & serverFeatures,
		MaxFrameBytes: uint32(s.g.opts.MaxFrameBytes), ClusterID: s.g.opts.Cluster.ClusterID(), NodeID: s.g.opts.NodeID}
	return s.respond(wire.OpHandshake, ok(corr), hr.Append), nil
}
