package registry

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aerostream/aerostream/controller"
)

// Sentinels. Every error the registry answers with is an *Error carrying
// one of Confluent's codes; these name the conditions Go callers test for.
var (
	// ErrInvalidSchema: a schema that does not parse (42201).
	ErrInvalidSchema = errors.New("invalid schema")
	// ErrSchemaTooLarge: a schema above Options.MaxSchemaBytes (42201).
	ErrSchemaTooLarge = errors.New("schema too large")
	// ErrCircularReference: references that lead back to themselves (42201).
	ErrCircularReference = errors.New("circular schema reference")
	// ErrNoStore: Options without a Store.
	ErrNoStore = errors.New("registry: Options.Store is required")
)

// Error is an answer in Confluent's error shape. Code is one of
// Confluent's error codes (controller.SchemaErr*, or 50001-50003 for the
// registry's own failures); the HTTP status is its first three digits.
type Error struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
	err     error
}

func (e *Error) Error() string { return fmt.Sprintf("%s (error code %d)", e.Message, e.Code) }

// Unwrap returns the sentinel or cause, if any.
func (e *Error) Unwrap() error { return e.err }

// Status is the HTTP status the code answers with.
func (e *Error) Status() int {
	switch {
	case e.Code >= 10000:
		return e.Code / 100
	case e.Code >= 400 && e.Code < 600:
		return e.Code
	}
	return http.StatusInternalServerError
}

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func wrapf(code int, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), err: cause}
}

// Codes of the registry's own failures (Confluent's).
const (
	codeStore      = controller.SchemaErrStore // 50001
	codeTimeout    = 50002
	codeForwarding = 50003
)

// storeError turns a controller failure into an answer.
func storeError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, controller.ErrTimeout):
		return wrapf(codeTimeout, err, "Operation timed out: %v", err)
	case errors.Is(err, controller.ErrNotLeader):
		return wrapf(codeForwarding, err, "Error while forwarding the request to the leader: %v", err)
	}
	return wrapf(codeStore, err, "Error in the backend data store: %v", err)
}

func subjectNotFound(s string) *Error {
	return errorf(controller.SchemaErrSubjectNotFound, "Subject '%s' not found.", s)
}

func versionNotFound(v int32) *Error {
	return errorf(controller.SchemaErrVersionNotFound, "Version %d not found.", v)
}

func schemaNotFound(id int32) *Error {
	return errorf(controller.SchemaErrSchemaNotFound, "Schema %d not found", id)
}
