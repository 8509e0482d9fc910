package kafka

import (
	"context"

	"github.com/aerostream/aerostream/auth"
)

// Security manages users and ACLs for the admin APIs
// (DescribeUserScramCredentials, AlterUserScramCredentials, CreateAcls,
// DescribeAcls, DeleteAcls). tools/ implements it over the controller.
// Errors, per item or for the whole call, may wrap a *kerr.Error to pick
// the code the client sees.
type Security interface {
	DescribeScramUsers(ctx context.Context, users []string) ([]ScramUser, error)
	// AlterScramUsers answers one error per upsert, then per deletion.
	AlterScramUsers(ctx context.Context, upserts []ScramUpsert, deletions []ScramDeletion) ([]error, error)
	CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, error)
	// DescribeACLs lists the ACLs, and the entries role bindings expand
	// to as auth.BoundACL.Listed marks them.
	DescribeACLs(ctx context.Context, filter auth.ACLFilter) ([]auth.ACL, error)
	// DeleteACLs answers, per filter, the ACLs it removed and an error
	// (nil, or a short errs: none) for a filter it refused, such as one
	// that selects only role bindings' entries.
	DeleteACLs(ctx context.Context, filters []auth.ACLFilter) (deleted [][]auth.ACL, errs []error, err error)
}

// ScramUser is a user's credentials as DescribeUserScramCredentials
// shows them: mechanisms and iterations, no secret.
type ScramUser struct {
	User       string
	Mechanisms []string
	Iterations []int
	Err        error
}

// ScramUpsert sets a user's credential for a mechanism.
type ScramUpsert struct {
	User, Mechanism string
	Credential      auth.ScramCredential
}

// ScramDeletion removes a user's credential for a mechanism.
type ScramDeletion struct{ User, Mechanism string }

// scramMechanismCode is Kafka's number for a SCRAM mechanism.
func scramMechanismCode(m string) int8 {
	switch m {
	case auth.ScramSHA256:
		return 1
	case auth.ScramSHA512:
		return 2
	}
	return 0
}

func scramMechanismName(c int8) string {
	switch c {
	case 1:
		return auth.ScramSHA256
	case 2:
		return auth.ScramSHA512
	}
	return ""
}
