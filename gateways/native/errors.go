package native

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/aerostream/aerostream/gateways/internal/kcode"
)

// Sentinels of the native gateway.
var (
	// ErrUnknownTopic: no topic has that name or id (Cluster returns it,
	// or a *kerr.Error with the same meaning).
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrHandshakeFirst: a request came before the handshake.
	ErrHandshakeFirst = errors.New("handshake required before any other request")
	// ErrUnsupportedVersion: a frame or handshake version this gateway
	// does not speak.
	ErrUnsupportedVersion = errors.New("unsupported native protocol version")
	// ErrUnknownOpcode: a request opcode this revision does not define.
	ErrUnknownOpcode = errors.New("unknown opcode")
	// ErrAuthUnsupported: the handshake names an authentication mechanism
	// the listener does not offer.
	ErrAuthUnsupported = errors.New("authentication mechanism not supported")
	// ErrSASLState: a request out of the SASL exchange's order (before
	// authentication on a SASL listener, or a SaslAuthenticate without a
	// mechanism).
	ErrSASLState = errors.New("illegal SASL state")
	// ErrSASLFailed: the client did not prove who it is.
	ErrSASLFailed = errors.New("SASL authentication failed")
	// ErrInternalTopic: clients may read internal topics but not write or
	// delete them.
	ErrInternalTopic = errors.New("internal topic")
	// ErrBadRequest: a request whose fields are out of range.
	ErrBadRequest = errors.New("invalid request")
	// ErrTopicAuthorization, ErrGroupAuthorization and
	// ErrClusterAuthorization: the ACLs do not let the principal do the
	// operation on that topic, group or the cluster (authz.go).
	ErrTopicAuthorization   = errors.New("topic authorization failed")
	ErrGroupAuthorization   = errors.New("group authorization failed")
	ErrClusterAuthorization = errors.New("cluster authorization failed")
)

// errorTable maps errors to the Kafka codes the protocol answers with
// (PROTOCOL.md, "Error codes"): the store's and the controller's rows are
// kcode's, shared with the Kafka gateway, then this gateway's own. An error
// that is (or wraps) a *kerr.Error keeps its code; otherwise the first
// sentinel it wraps wins; anything else is UNKNOWN_SERVER_ERROR.
var errorTable = kcode.Table([]kcode.Row{
	{Err: ErrUnknownTopic, Code: kerr.UnknownTopicOrPartition},
	{Err: ErrHandshakeFirst, Code: kerr.IllegalSaslState},
	{Err: ErrUnsupportedVersion, Code: kerr.UnsupportedVersion},
	{Err: ErrUnknownOpcode, Code: kerr.InvalidRequest},
	{Err: ErrAuthUnsupported, Code: kerr.UnsupportedSaslMechanism},
	{Err: ErrSASLState, Code: kerr.IllegalSaslState},
	{Err: ErrSASLFailed, Code: kerr.SaslAuthenticationFailed},
	{Err: ErrInternalTopic, Code: kerr.InvalidTopicException},
	{Err: ErrBadRequest, Code: kerr.InvalidRequest},
	{Err: ErrTopicAuthorization, Code: kerr.TopicAuthorizationFailed},
	{Err: ErrGroupAuthorization, Code: kerr.GroupAuthorizationFailed},
	{Err: ErrClusterAuthorization, Code: kerr.ClusterAuthorizationFailed},
}...)

// codeFor returns the Kafka code for err (0 for nil).
func codeFor(err error) int16 {
	if ke := kcode.Lookup(errorTable, err); ke != nil {
		return ke.Code
	}
	return 0
}
