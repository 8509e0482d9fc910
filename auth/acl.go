package auth

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Resource types, operations, pattern types and permissions, named as
// Kafka names them (kafka-acls.sh, the Admin API's enums).
const (
	ResourceTopic           = "TOPIC"
	ResourceGroup           = "GROUP"
	ResourceCluster         = "CLUSTER"
	ResourceTransactionalID = "TRANSACTIONAL_ID"

	PatternLiteral  = "LITERAL"
	PatternPrefixed = "PREFIXED"

	OpAll             = "ALL"
	OpRead            = "READ"
	OpWrite           = "WRITE"
	OpCreate          = "CREATE"
	OpDelete          = "DELETE"
	OpAlter           = "ALTER"
	OpDescribe        = "DESCRIBE"
	OpClusterAction   = "CLUSTER_ACTION"
	OpDescribeConfigs = "DESCRIBE_CONFIGS"
	OpAlterConfigs    = "ALTER_CONFIGS"
	OpIdempotentWrite = "IDEMPOTENT_WRITE"

	Allow = "ALLOW"
	Deny  = "DENY"

	// Any matches every value in a filter.
	Any = "ANY"
	// Match, as a filter's pattern type, finds every ACL that applies to
	// the filter's resource name: literal, wildcard and prefixed.
	Match = "MATCH"

	// ClusterName is the one name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
	// Wildcard is the literal resource name, principal or host that
	// matches all.
	Wildcard = "*"
)

var (
	resourceTypes = []string{ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID}
	operations    = []string{OpAll, OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpClusterAction,
		OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite}
)

// Operations lists the operations an ACL may name.
func Operations() []string { return slices.Clone(operations) }

// ACL is one access control entry bound to a resource pattern (Kafka's
// AclBinding).
type ACL struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"` // User:NAME, User:* or Group:NAME
	Host         string `json:"host"`      // an IP address or *
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s on %s:%s:%s from %s", a.Principal, a.Permission, a.Operation, a.PatternType, a.ResourceType, a.ResourceName, a.Host)
}

// Check validates an ACL as CreateAcls does.
func (a ACL) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ACL: "+format, append([]any{ErrInvalid}, args...)...)
	}
	switch {
	case !slices.Contains(resourceTypes, a.ResourceType):
		return bad("resource type %q (want one of %s)", a.ResourceType, strings.Join(resourceTypes, ", "))
	case a.PatternType != PatternLiteral && a.PatternType != PatternPrefixed:
		return bad("pattern type %q (want LITERAL or PREFIXED)", a.PatternType)
	case a.ResourceName == "":
		return bad("empty resource name")
	case a.ResourceType == ResourceCluster && (a.ResourceName != ClusterName || a.PatternType != PatternLiteral):
		return bad("the cluster resource is LITERAL %q", ClusterName)
	case !slices.Contains(operations, a.Operation):
		return bad("operation %q (want one of %s)", a.Operation, strings.Join(operations, ", "))
	case a.Permission != Allow && a.Permission != Deny:
		return bad("permission %q (want ALLOW or DENY)", a.Permission)
	case a.Host == "":
		return bad("empty host (use * for any)")
	case strings.HasPrefix(a.Host, BindingHostPrefix):
		return bad("host %q marks an entry of a role binding in listings, not an ACL: bind the role instead", a.Host)
	}
	// Group:* would name a group called "*", not every group: User:* is
	// everyone.
	if CheckBindingPrincipal(a.Principal) != nil || a.Principal == GroupPrefix+Wildcard {
		return bad("principal %q (want User:NAME, User:* or Group:NAME)", a.Principal)
	}
	return nil
}

// ACLFilter selects ACLs (DescribeAcls, DeleteAcls). "ANY" (or "") in a
// field matches every value; a PatternType of MATCH selects the ACLs that
// apply to ResourceName.
type ACLFilter struct {
	ResourceType string `json:"resource_type,omitempty"`
	ResourceName string `json:"resource_name,omitempty"` // "" = any
	PatternType  string `json:"pattern_type,omitempty"`
	Principal    string `json:"principal,omitempty"`
	Host         string `json:"host,omitempty"`
	Operation    string `json:"operation,omitempty"`
	Permission   string `json:"permission,omitempty"`
}

func anyOr(f, v string) bool { return f == "" || f == Any || f == v }

// Matches reports whether the filter selects a.
func (f ACLFilter) Matches(a ACL) bool {
	if !anyOr(f.ResourceType, a.ResourceType) || !anyOr(f.Operation, a.Operation) || !anyOr(f.Permission, a.Permission) {
		return false
	}
	if f.Principal != "" && f.Principal != a.Principal || f.Host != "" && f.Host != a.Host {
		return false
	}
	switch f.PatternType {
	case "", Any:
		return f.ResourceName == "" || f.ResourceName == a.ResourceName
	case Match:
		if f.ResourceName == "" {
			return true
		}
		return resourceMatches(a, f.ResourceName)
	default:
		return f.PatternType == a.PatternType && (f.ResourceName == "" || f.ResourceName == a.ResourceName)
	}
}

// resourceMatches reports whether a's pattern covers the resource name.
func resourceMatches(a ACL, name string) bool {
	switch a.PatternType {
	case PatternLiteral:
		return a.ResourceName == name || a.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

// implies lists, for an operation asked for, the operations whose ALLOW
// grants it besides itself and ALL (Kafka's implied operations).
var implies = map[string][]string{
	OpDescribe:        {OpRead, OpWrite, OpDelete, OpAlter},
	OpDescribeConfigs: {OpAlterConfigs},
}

// Authorizer decides requests against a set of ACLs. The zero value is
// off: it allows everything. It is safe for concurrent use; Set replaces
// the ACLs atomically.
type Authorizer struct {
	// gen moves with every change that can turn a decision: ACLs, roles
	// and the groups stored with users (Generation).
	gen atomic.Uint64
	mu  struct {
		sync.RWMutex
		enabled bool
		super   map[string]bool
		// byType holds the ACLs of each resource type, and the ALLOW
		// entries the role bindings expand to (roles.go).
		byType  map[string][]ACL
		version uint64
		// explicit and rbac are what byType is built from.
		explicit []ACL
		rbac     RBAC
		// groups maps User:NAME to its stored Group:NAME principals. A
		// bearer token's groups are the session's (Request.Groups), never
		// kept here: two sessions of a user may hold different ones.
		groups map[string][]string
	}
}

// NewAuthorizer returns an authorizer, enforcing when enabled, that allows
// superUsers (User:NAME) everything.
func NewAuthorizer(enabled bool, superUsers []string) *Authorizer {
	a := &Authorizer{}
	a.mu.enabled = enabled
	a.mu.super = map[string]bool{}
	for _, u := range superUsers {
		a.mu.super[u] = true
	}
	a.mu.byType = map[string][]ACL{}
	return a
}

// Enabled reports whether the authorizer enforces ACLs.
func (z *Authorizer) Enabled() bool {
	if z == nil {
		return false
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.mu.enabled
}

// Set replaces the ACLs with those of a state at version; an older
// version than the one held is ignored, so two refreshers cannot move it
// back.
func (z *Authorizer) Set(version uint64, acls []ACL) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if version < z.mu.version {
		return
	}
	z.setLocked(version, acls, z.mu.rbac)
}

// Version is the version of the ACLs held.
func (z *Authorizer) Version() uint64 {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.mu.version
}

// Generation moves whenever a decision may have changed: with the ACLs,
// the roles and the users' stored groups. A session's cache of decisions
// (one principal, host and token groups) is valid while it holds. It is
// one atomic load, for hot paths to ask per request.
func (z *Authorizer) Generation() uint64 { return z.gen.Load() }

// Request is one access decision's question.
type Request struct {
	Principal string // User:NAME; User:ANONYMOUS when unauthenticated
	// Groups are the Group:NAME principals the session's bearer token
	// named (Token.Groups), beside the groups stored with the user; the
	// caller ends the session when the token expires. Read-only.
	Groups       []string
	Host         string // the client's IP address
	Operation    string
	ResourceType string
	ResourceName string
}

// Authorize decides a request: super users and an authorizer that is off
// allow all; otherwise a matching DENY wins, then a matching ALLOW (of the
// operation, one that implies it, or ALL), and with neither the answer is
// no.
func (z *Authorizer) Authorize(r Request) bool {
	if z == nil {
		return true
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	if !z.mu.enabled || z.mu.super[r.Principal] {
		return true
	}
	acls := z.mu.byType[r.ResourceType]
	stored := z.mu.groups[r.Principal]
	allowed := false
	for i := range acls {
		a := &acls[i]
		if !resourceMatches(*a, r.ResourceName) ||
			!principalMatches(a.Principal, r.Principal, stored, r.Groups) ||
			a.Host != Wildcard && a.Host != r.Host {
			continue
		}
		if a.Permission == Deny {
			if a.Operation == r.Operation || a.Operation == OpAll {
				return false
			}
			continue
		}
		if a.Operation == r.Operation || a.Operation == OpAll || slices.Contains(implies[r.Operation], a.Operation) {
			allowed = true
		}
	}
	return allowed
}

// AuthorizeAny reports whether r's principal may do r's operation on some
// resource of r's type, whatever r.ResourceName says (Kafka's
// authorizeByResourceType, used by InitProducerId for idempotent
// producers): an ALLOW of any pattern that no DENY of the whole type
// (literal wildcard) cancels.
func (z *Authorizer) AuthorizeAny(r Request) bool {
	if z == nil {
		return true
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	if !z.mu.enabled || z.mu.super[r.Principal] {
		return true
	}
	stored := z.mu.groups[r.Principal]
	allowed := false
	for _, a := range z.mu.byType[r.ResourceType] {
		if !principalMatches(a.Principal, r.Principal, stored, r.Groups) || a.Host != Wildcard && a.Host != r.Host {
			continue
		}
		opOK := a.Operation == r.Operation || a.Operation == OpAll
		if a.Permission == Deny && opOK && a.PatternType == PatternLiteral && a.ResourceName == Wildcard {
			return false
		}
		if a.Permission == Allow && opOK {
			allowed = true
		}
	}
	return allowed
}
