package auth

import "errors"

// Sentinels. Every error the package returns wraps one of them.
var (
	// ErrAuthentication: the client did not prove who it is (a wrong
	// password, an unknown user, a bad proof). Kafka's
	// SASL_AUTHENTICATION_FAILED.
	ErrAuthentication = errors.New("authentication failed")
	// ErrMalformed: a SASL message that does not parse. Also
	// SASL_AUTHENTICATION_FAILED on the wire, but logged apart.
	ErrMalformed = errors.New("malformed SASL message")
	// ErrUnsupportedMechanism: a mechanism not offered.
	ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")
	// ErrInvalid: an ACL, credential or configuration value that is not
	// well-formed.
	ErrInvalid = errors.New("invalid value")
)
