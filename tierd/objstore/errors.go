package objstore

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Sentinel errors. Providers translate their SDK's errors into these (keeping
// the SDK error in the chain for the message), so callers branch with
// errors.Is or the Is* helpers and never on provider types or text.
var (
	// ErrNotFound: the object does not exist. Callers use it to tell "never
	// uploaded or already deleted" from a failure (e.g. `tier verify` reports
	// an object deleted behind our back).
	ErrNotFound = errors.New("object not found")
	// ErrPreconditionFailed: a conditional write lost, i.e. PutIfAbsent or a
	// multipart upload with IfAbsent found the key already there. Azure
	// answers 409 BlobAlreadyExists rather than 412 here; both map to this.
	ErrPreconditionFailed = errors.New("precondition failed: object already exists")
	// ErrInvalidRange: GetRange started beyond the end of the object.
	ErrInvalidRange = errors.New("range not satisfiable")
	// ErrInvalidArgument: a key, size, offset or option is outside its
	// domain. Rejected before any request, because it would fail the same way
	// on every retry.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrBucketNotFound: the bucket or container itself is missing. Kept
	// apart from ErrNotFound so that a misconfigured bucket is reported as
	// such and never read as "every object was deleted".
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrAccessDenied: the credentials were rejected or lack a permission.
	// Permanent: retrying with the same credentials cannot help.
	ErrAccessDenied = errors.New("access denied")
	// ErrTransient: the service failed in a way a retry may fix (5xx, 429,
	// throttling, a dropped connection). IsTransient reports it, and Retry
	// retries only such errors.
	ErrTransient = errors.New("transient object store error")
	// ErrInvalidConfig: a provider's configuration is unusable; the message
	// names the key.
	ErrInvalidConfig = errors.New("invalid object store config")
	// ErrClosed: a MultipartWriter was used after Close or Abort.
	ErrClosed = errors.New("multipart writer closed")
	// ErrInjected marks every failure FaultBucket makes up, so a test can tell
	// an injected fault from a real one. Injected errors also wrap
	// ErrTransient, except where FaultConfig says otherwise.
	ErrInjected = errors.New("injected fault")
)

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPreconditionFailed reports whether err says a conditional write found the
// key already present.
func IsPreconditionFailed(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// IsInvalidRange reports whether err says a read started beyond the end.
func IsInvalidRange(err error) bool { return errors.Is(err, ErrInvalidRange) }

// IsTransient reports whether a retry of the same request may succeed.
//
// Providers mark throttling and 5xx answers with ErrTransient; the rest of
// the rules catch failures below the SDK, which reach us as plain network
// errors: timeouts, resets, refused connections (a server restarting) and a
// body cut short. A cancelled context is never transient: the caller gave up,
// and retrying would only delay its return.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	switch {
	case errors.Is(err, ErrTransient):
		return true
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrPreconditionFailed),
		errors.Is(err, ErrInvalidArgument), errors.Is(err, ErrInvalidRange),
		errors.Is(err, ErrBucketNotFound), errors.Is(err, ErrAccessDenied),
		errors.Is(err, ErrInvalidConfig), errors.Is(err, ErrClosed):
		return false
	case errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ETIMEDOUT):
		return true
	case errors.Is(err, context.DeadlineExceeded):
		// A per-attempt timeout (http.Client.Timeout, a request deadline);
		// Retry itself stops when the caller's own context has expired.
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// HTTPStatusTransient reports whether an HTTP status is one the object stores
// document as retryable: 408 (request timeout), 429 (throttled) and every 5xx
// (500 internal, 502/504 from a proxy, 503 SlowDown/ServerBusy).
// Providers use it when mapping their SDK errors.
func HTTPStatusTransient(code int) bool {
	return code == 408 || code == 429 || (code >= 500 && code <= 599)
}
