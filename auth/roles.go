package auth

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Role-based access control on top of the ACLs. A role is a named set of
// operations per resource type; a binding gives a role to a principal
// (User:NAME, User:* or Group:NAME), on every resource or on the
// resources of one pattern (a literal or prefixed topic, group or
// transactional id). The authorizer expands each binding into ALLOW
// entries beside the ACLs, so a DENY ACL still wins over a role, as it
// wins over an ALLOW ACL.
//
// A user's groups are the ones stored with the user in the controller
// (UserGroups) and, for a session a bearer token authenticated, those its
// groups claim names (Token.Groups, asked with as Request.Groups); a
// Group:NAME binding applies to every member.

// Built-in role names.
const (
	RoleReader   = "reader"
	RoleWriter   = "writer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"

	// GroupPrefix starts a group principal.
	GroupPrefix = "Group:"
	// UserPrefix starts a user principal.
	UserPrefix = "User:"

	// MaxRoleNameLen and MaxGroupNameLen bound names, in bytes.
	MaxRoleNameLen  = 64
	MaxGroupNameLen = 255
)

// RolePermission is the operations a role allows on one resource type.
type RolePermission struct {
	ResourceType string   `json:"resource_type"`
	Operations   []string `json:"operations"`
}

// Role is a named set of permissions.
type Role struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	Permissions []RolePermission `json:"permissions"`
	// BuiltIn marks the roles every cluster has; they cannot be changed.
	BuiltIn bool `json:"built_in,omitempty"`
}

// RoleBinding gives a role to a principal. An empty ResourceType binds it
// on every resource; otherwise only the role's operations on that type
// apply, and only to the resources the pattern names.
type RoleBinding struct {
	Role         string `json:"role"`
	Principal    string `json:"principal"` // User:NAME, User:* or Group:NAME
	ResourceType string `json:"resource_type,omitempty"`
	PatternType  string `json:"pattern_type,omitempty"` // LITERAL or PREFIXED when scoped
	ResourceName string `json:"resource_name,omitempty"`
}

func (b RoleBinding) String() string {
	if b.ResourceType == "" {
		return fmt.Sprintf("%s: %s on everything", b.Principal, b.Role)
	}
	return fmt.Sprintf("%s: %s on %s:%s:%s", b.Principal, b.Role, b.PatternType, b.ResourceType, b.ResourceName)
}

// RBAC is the role state the authorizer expands: the custom roles (the
// built-in ones are always known), the bindings, and each user's groups
// (user name -> group names, neither with its prefix).
type RBAC struct {
	Roles      []Role              `json:"roles,omitempty"`
	Bindings   []RoleBinding       `json:"bindings,omitempty"`
	UserGroups map[string][]string `json:"user_groups,omitempty"`
}

var (
	readerPerms = []RolePermission{
		{ResourceTopic, []string{OpRead, OpDescribe}},
		{ResourceGroup, []string{OpRead, OpDescribe}},
	}
	writerPerms = []RolePermission{
		{ResourceTopic, []string{OpRead, OpDescribe, OpWrite}},
		{ResourceGroup, []string{OpRead, OpDescribe}},
		{ResourceTransactionalID, []string{OpWrite, OpDescribe}},
		{ResourceCluster, []string{OpIdempotentWrite}},
	}
	operatorPerms = []RolePermission{
		{ResourceTopic, []string{OpRead, OpDescribe, OpWrite, OpCreate, OpAlter, OpAlterConfigs, OpDescribeConfigs, OpDelete}},
		{ResourceGroup, []string{OpRead, OpDescribe, OpCreate, OpAlter, OpAlterConfigs, OpDescribeConfigs, OpDelete}},
		{ResourceTransactionalID, []string{OpWrite, OpDescribe}},
		{ResourceCluster, []string{OpIdempotentWrite, OpDescribe}},
	}
	adminPerms = []RolePermission{
		{ResourceTopic, []string{OpAll}},
		{ResourceGroup, []string{OpAll}},
		{ResourceTransactionalID, []string{OpAll}},
		{ResourceCluster, []string{OpAll}},
	}
	builtInRoles = []Role{
		{Name: RoleReader, Description: "read and describe topics and consumer groups", Permissions: readerPerms},
		{Name: RoleWriter, Description: "reader, and produce (idempotent and transactional)", Permissions: writerPerms},
		{Name: RoleOperator, Description: "writer, and create, alter, configure and delete topics and groups; describe the cluster", Permissions: operatorPerms},
		{Name: RoleAdmin, Description: "every operation on every resource, the cluster included (the HTTP admin routes need ALTER on the cluster)", Permissions: adminPerms},
	}
	roleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// BuiltInRoles returns the roles every cluster has.
func BuiltInRoles() []Role {
	out := make([]Role, len(builtInRoles))
	for i, r := range builtInRoles {
		r.BuiltIn = true
		r.Permissions = clonePerms(r.Permissions)
		out[i] = r
	}
	return out
}

// IsBuiltInRole reports whether name is a built-in role's.
func IsBuiltInRole(name string) bool {
	return slices.ContainsFunc(builtInRoles, func(r Role) bool { return r.Name == name })
}

func clonePerms(ps []RolePermission) []RolePermission {
	out := make([]RolePermission, len(ps))
	for i, p := range ps {
		out[i] = RolePermission{p.ResourceType, slices.Clone(p.Operations)}
	}
	return out
}

// FindRole returns the role called name: a built-in one, or one of
// custom.
func FindRole(custom []Role, name string) (Role, bool) {
	for _, r := range BuiltInRoles() {
		if r.Name == name {
			return r, true
		}
	}
	for _, r := range custom {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// CheckRoleName validates a role name: 1 to 64 letters, digits, '.', '_'
// and '-', not starting with a punctuation mark.
func CheckRoleName(name string) error {
	if len(name) > MaxRoleNameLen || !roleNameRE.MatchString(name) {
		return fmt.Errorf("%w: role name %q (want 1 to %d letters, digits, '.', '_' or '-')", ErrInvalid, name, MaxRoleNameLen)
	}
	return nil
}

// Check validates a custom role.
func (r Role) Check() error {
	if err := CheckRoleName(r.Name); err != nil {
		return err
	}
	if IsBuiltInRole(r.Name) {
		return fmt.Errorf("%w: role %q is built in", ErrInvalid, r.Name)
	}
	if len(r.Permissions) == 0 {
		return fmt.Errorf("%w: role %q allows no operation", ErrInvalid, r.Name)
	}
	seen := map[string]bool{}
	for _, p := range r.Permissions {
		if !slices.Contains(resourceTypes, p.ResourceType) {
			return fmt.Errorf("%w: role %q: resource type %q (want one of %s)", ErrInvalid, r.Name, p.ResourceType, strings.Join(resourceTypes, ", "))
		}
		if seen[p.ResourceType] {
			return fmt.Errorf("%w: role %q names %s twice", ErrInvalid, r.Name, p.ResourceType)
		}
		seen[p.ResourceType] = true
		if len(p.Operations) == 0 {
			return fmt.Errorf("%w: role %q: no operation on %s", ErrInvalid, r.Name, p.ResourceType)
		}
		for _, op := range p.Operations {
			if !slices.Contains(operations, op) {
				return fmt.Errorf("%w: role %q: operation %q (want one of %s)", ErrInvalid, r.Name, op, strings.Join(operations, ", "))
			}
		}
	}
	return nil
}

// CheckGroupName validates a group name (without its Group: prefix).
func CheckGroupName(name string) error {
	if name == "" || len(name) > MaxGroupNameLen || strings.ContainsAny(name, ",\n\r\t ") {
		return fmt.Errorf("%w: group name %q (want 1 to %d bytes, no comma or space)", ErrInvalid, name, MaxGroupNameLen)
	}
	return nil
}

// CheckBindingPrincipal validates a binding's principal: User:NAME,
// User:* or Group:NAME.
func CheckBindingPrincipal(p string) error {
	if name, ok := strings.CutPrefix(p, UserPrefix); ok && name != "" {
		return nil
	}
	if name, ok := strings.CutPrefix(p, GroupPrefix); ok && CheckGroupName(name) == nil {
		return nil
	}
	return fmt.Errorf("%w: principal %q (want User:NAME, User:* or Group:NAME)", ErrInvalid, p)
}

// Check validates a binding's form; whether its role exists is the
// caller's question.
func (b RoleBinding) Check() error {
	if err := CheckRoleName(b.Role); err != nil {
		return err
	}
	if err := CheckBindingPrincipal(b.Principal); err != nil {
		return err
	}
	if b.ResourceType == "" {
		if b.PatternType != "" || b.ResourceName != "" {
			return fmt.Errorf("%w: binding: a pattern without a resource type", ErrInvalid)
		}
		return nil
	}
	switch {
	case b.ResourceType != ResourceTopic && b.ResourceType != ResourceGroup && b.ResourceType != ResourceTransactionalID:
		return fmt.Errorf("%w: binding: resource type %q (want TOPIC, GROUP or TRANSACTIONAL_ID; bind without one for the cluster)", ErrInvalid, b.ResourceType)
	case b.PatternType != PatternLiteral && b.PatternType != PatternPrefixed:
		return fmt.Errorf("%w: binding: pattern type %q (want LITERAL or PREFIXED)", ErrInvalid, b.PatternType)
	case b.ResourceName == "":
		return fmt.Errorf("%w: binding: empty resource name", ErrInvalid)
	}
	return nil
}

// ExpandBinding returns the ALLOW entries a binding of role grants: on
// every resource when the binding is not scoped, else the role's
// operations on the scope's type, on the scope's pattern only.
func ExpandBinding(role Role, b RoleBinding) []ACL {
	var out []ACL
	for _, p := range role.Permissions {
		rt, pattern, name := p.ResourceType, PatternLiteral, Wildcard
		if rt == ResourceCluster {
			name = ClusterName
		}
		if b.ResourceType != "" {
			if rt != b.ResourceType {
				continue
			}
			pattern, name = b.PatternType, b.ResourceName
		}
		for _, op := range p.Operations {
			out = append(out, ACL{ResourceType: rt, ResourceName: name, PatternType: pattern,
				Principal: b.Principal, Host: Wildcard, Operation: op, Permission: Allow})
		}
	}
	return out
}

// Expand returns the ALLOW entries of every binding whose role exists; a
// binding of an unknown role grants nothing.
func (r RBAC) Expand() []ACL {
	var out []ACL
	for _, b := range r.Bindings {
		if role, ok := FindRole(r.Roles, b.Role); ok {
			out = append(out, ExpandBinding(role, b)...)
		}
	}
	return out
}

// groupPrincipals maps User:NAME to its Group:NAME principals.
func (r RBAC) groupPrincipals() map[string][]string {
	out := make(map[string][]string, len(r.UserGroups))
	for u, gs := range r.UserGroups {
		ps := make([]string, len(gs))
		for i, g := range gs {
			ps[i] = GroupPrefix + g
		}
		out[UserPrefix+u] = ps
	}
	return out
}

// Clone returns a deep copy.
func (r RBAC) Clone() RBAC {
	out := RBAC{Bindings: slices.Clone(r.Bindings)}
	for _, role := range r.Roles {
		role.Permissions = clonePerms(role.Permissions)
		out.Roles = append(out.Roles, role)
	}
	if r.UserGroups != nil {
		out.UserGroups = maps.Clone(r.UserGroups)
		for u, gs := range out.UserGroups {
			out.UserGroups[u] = slices.Clone(gs)
		}
	}
	return out
}

// MaxTokenGroups bounds the groups taken from one token.
const MaxTokenGroups = 256

// claimGroups returns the Group:NAME principals a token's claim lists: a
// JSON array of strings, or one string of names separated by spaces (as
// OAuth's scope). Names that are not valid group names are skipped.
func claimGroups(claims map[string]any, claim string) []string {
	if claim == "" {
		return nil
	}
	var names []string
	switch v := claims[claim].(type) {
	case string:
		names = strings.Fields(v)
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				names = append(names, s)
			}
		}
	}
	var out []string
	for _, n := range names {
		if CheckGroupName(n) == nil && !slices.Contains(out, GroupPrefix+n) && len(out) < MaxTokenGroups {
			out = append(out, GroupPrefix+n)
		}
	}
	return out
}

// BindingHostPrefix starts the host by which listings (DescribeAcls,
// aerostream acl list) mark an entry a role binding expands to:
// role-binding:ROLE. No client address looks like it, and Check refuses
// it, so such an entry is neither mistaken for an ACL nor restored as one
// from a listing.
const BindingHostPrefix = "role-binding:"

// BoundACL is an ALLOW entry a role binding expands to, with the binding:
// what listings show beside the ACLs.
type BoundACL struct {
	ACL     ACL         `json:"acl"`
	Binding RoleBinding `json:"binding"`
}

// Listed is the entry as listings show it: the host names the binding's
// role (the entry itself applies from every host).
func (b BoundACL) Listed() ACL {
	a := b.ACL
	a.Host = BindingHostPrefix + b.Binding.Role
	return a
}

// BoundACLs returns the entries of every binding whose role exists, each
// with its binding, in Expand's order.
func (r RBAC) BoundACLs() []BoundACL {
	var out []BoundACL
	for _, b := range r.Bindings {
		if role, ok := FindRole(r.Roles, b.Role); ok {
			for _, a := range ExpandBinding(role, b) {
				out = append(out, BoundACL{ACL: a, Binding: b})
			}
		}
	}
	return out
}

// UnbindCommand is the aerostream command that removes the binding.
func (b RoleBinding) UnbindCommand() string {
	cmd := fmt.Sprintf("aerostream role unbind %s --principal %s", b.Role, b.Principal)
	if b.ResourceType == "" {
		return cmd
	}
	flag := map[string]string{ResourceTopic: "--topic", ResourceGroup: "--group", ResourceTransactionalID: "--transactional-id"}[b.ResourceType]
	if b.PatternType == PatternPrefixed {
		flag += "-prefix"
	}
	return fmt.Sprintf("%s %s %s", cmd, flag, b.ResourceName)
}

// ErrBindingEntries is the refusal to delete the entries of role
// bindings as if they were ACLs: it names each binding and the command
// that removes it. It wraps ErrInvalid.
func ErrBindingEntries(bs []RoleBinding) error {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = fmt.Sprintf("%s (remove it with: %s)", b, b.UnbindCommand())
	}
	return fmt.Errorf("%w: the filter selects only entries of role bindings, which are not ACLs and are not deleted: %s", ErrInvalid, strings.Join(parts, "; "))
}
