package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aerostream/aerostream/auth"
)

// Roles, role bindings and users' groups: the RBAC part of the security
// state (auth/roles.go has the model). They ride the same security
// command and version as users and ACLs, so a gateway's refresh picks
// them up with the ACLs and a snapshot carries them.

// MaxRoles, MaxRoleBindings and MaxGroupsPerUser bound the role state, as
// MaxACLs bounds the ACLs.
const (
	MaxRoles         = 10000
	MaxRoleBindings  = 100000
	MaxGroupsPerUser = 256
	MaxGroupUsers    = MaxUsers
)

// Role security operations.
const (
	secPutRoles    = "put_roles"
	secDeleteRoles = "delete_roles"
	secBindRoles   = "bind_roles"
	secUnbindRoles = "unbind_roles"
	secSetGroups   = "set_groups"
)

// UserGroups sets one user's groups (names without Group:); none clears
// them.
type UserGroups struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

type rbacState struct {
	roles    map[string]auth.Role // custom roles by name
	bindings []auth.RoleBinding   // sorted, no duplicates
	groups   map[string][]string  // user -> groups, sorted
}

func bindingLess(a, b auth.RoleBinding) int {
	return strings.Compare(a.Principal+"\x00"+a.Role+"\x00"+a.ResourceType+"\x00"+a.PatternType+"\x00"+a.ResourceName,
		b.Principal+"\x00"+b.Role+"\x00"+b.ResourceType+"\x00"+b.PatternType+"\x00"+b.ResourceName)
}

func (s *rbacState) empty() bool {
	return len(s.roles) == 0 && len(s.bindings) == 0 && len(s.groups) == 0
}

func (s *rbacState) roleExists(name string) bool {
	_, custom := s.roles[name]
	return custom || auth.IsBuiltInRole(name)
}

func checkUserGroups(u UserGroups) ([]string, error) {
	if err := checkUserName(u.User); err != nil {
		return nil, err
	}
	if len(u.Groups) > MaxGroupsPerUser {
		return nil, fmt.Errorf("%w: user %q: at most %d groups", ErrInvalidRequest, u.User, MaxGroupsPerUser)
	}
	for _, g := range u.Groups {
		if err := auth.CheckGroupName(g); err != nil {
			return nil, fmt.Errorf("%w: user %q: %v", ErrInvalidRequest, u.User, err)
		}
	}
	gs := slices.Clone(u.Groups)
	slices.Sort(gs)
	return slices.Compact(gs), nil
}

// rbac applies a role write: one error per item, in request order. It
// reports whether the state changed.
func (a *applier) rbac(c *cmdSecurity, r *applyResult) bool {
	s := &a.st.security.rbac
	if s.roles == nil {
		s.roles = map[string]auth.Role{}
	}
	if s.groups == nil {
		s.groups = map[string][]string{}
	}
	invalid := func(err error) error { return fmt.Errorf("%w: %v", ErrInvalidRequest, err) }
	changed := false
	switch c.Op {
	case secPutRoles:
		for _, role := range c.Roles {
			role.BuiltIn = false
			err := role.Check()
			if err != nil {
				err = invalid(err)
			} else if _, ok := s.roles[role.Name]; !ok && len(s.roles) >= MaxRoles {
				err = fmt.Errorf("%w: at most %d roles", ErrInvalidRequest, MaxRoles)
			} else {
				s.roles[role.Name] = role
				changed = true
			}
			r.items = append(r.items, err)
		}
	case secDeleteRoles:
		for _, name := range c.RoleNames {
			var err error
			switch {
			case auth.IsBuiltInRole(name):
				err = fmt.Errorf("%w: role %q is built in", ErrInvalidRequest, name)
			case !s.roleExists(name):
				err = fmt.Errorf("%w: no role %q", ErrInvalidRequest, name)
			default:
				n := 0
				for _, b := range s.bindings {
					if b.Role == name {
						n++
					}
				}
				if n > 0 {
					err = fmt.Errorf("%w: role %q has %d bindings; unbind them first", ErrInvalidRequest, name, n)
				} else {
					delete(s.roles, name)
					changed = true
				}
			}
			r.items = append(r.items, err)
		}
	case secBindRoles:
		bs := slices.Clone(s.bindings)
		for _, b := range c.Bindings {
			err := b.Check()
			if err != nil {
				err = invalid(err)
			} else if !s.roleExists(b.Role) {
				err = fmt.Errorf("%w: no role %q", ErrInvalidRequest, b.Role)
			} else if i, found := slices.BinarySearchFunc(bs, b, bindingLess); !found {
				if len(bs) >= MaxRoleBindings {
					err = fmt.Errorf("%w: at most %d role bindings", ErrInvalidRequest, MaxRoleBindings)
				} else {
					bs = slices.Insert(bs, i, b)
					changed = true
				}
			}
			r.items = append(r.items, err)
		}
		s.bindings = bs
	case secUnbindRoles:
		bs := slices.Clone(s.bindings)
		for _, b := range c.Bindings {
			var err error
			if i, found := slices.BinarySearchFunc(bs, b, bindingLess); found {
				bs = slices.Delete(bs, i, i+1)
				changed = true
			} else {
				err = fmt.Errorf("%w: no binding %s", ErrInvalidRequest, b)
			}
			r.items = append(r.items, err)
		}
		s.bindings = bs
	case secSetGroups:
		for _, u := range c.Groups {
			gs, err := checkUserGroups(u)
			switch {
			case err != nil:
			case len(gs) == 0:
				if _, ok := s.groups[u.User]; ok {
					delete(s.groups, u.User)
					changed = true
				}
			case s.groups[u.User] == nil && len(s.groups) >= MaxGroupUsers:
				err = fmt.Errorf("%w: at most %d users with groups", ErrInvalidRequest, MaxGroupUsers)
			default:
				s.groups[u.User] = gs
				changed = true
			}
			r.items = append(r.items, err)
		}
	}
	return changed
}

// rbacSnapshot is the role state in a snapshot.
type rbacSnapshot struct {
	Roles    []auth.Role         `json:"roles,omitempty"`
	Bindings []auth.RoleBinding  `json:"bindings,omitempty"`
	Groups   map[string][]string `json:"groups,omitempty"`
}

func (s *rbacState) snapshot() *rbacSnapshot {
	if s.empty() {
		return nil
	}
	d := &rbacSnapshot{Bindings: s.bindings, Groups: maps.Clone(s.groups)}
	for _, name := range slices.Sorted(maps.Keys(s.roles)) {
		d.Roles = append(d.Roles, s.roles[name])
	}
	return d
}

func (s *rbacState) restore(d *rbacSnapshot) error {
	*s = rbacState{roles: map[string]auth.Role{}, groups: map[string][]string{}}
	if d == nil {
		return nil
	}
	for _, role := range d.Roles {
		if err := role.Check(); err != nil {
			return err
		}
		s.roles[role.Name] = role
	}
	for _, b := range d.Bindings {
		if err := b.Check(); err != nil {
			return err
		}
		if !s.roleExists(b.Role) {
			return fmt.Errorf("binding %s: no role %q", b, b.Role)
		}
	}
	for u, gs := range d.Groups {
		cleaned, err := checkUserGroups(UserGroups{User: u, Groups: gs})
		if err != nil {
			return err
		}
		if len(cleaned) > 0 {
			s.groups[u] = cleaned
		}
	}
	bs := slices.Clone(d.Bindings)
	slices.SortFunc(bs, bindingLess)
	s.bindings = slices.CompactFunc(bs, func(a, b auth.RoleBinding) bool { return bindingLess(a, b) == 0 })
	return nil
}

// rbacLocked is the role state as the authorizer takes it.
func (s *rbacState) rbacLocked() auth.RBAC {
	r := auth.RBAC{Bindings: slices.Clone(s.bindings), UserGroups: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(s.roles)) {
		r.Roles = append(r.Roles, s.roles[name])
	}
	for u, gs := range s.groups {
		r.UserGroups[u] = slices.Clone(gs)
	}
	return r
}

// SecurityRBAC returns the security version and the role state.
func (f *FSM) SecurityRBAC() (uint64, auth.RBAC) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mu.st.security.version, f.mu.st.security.rbac.rbacLocked()
}

// Client API types.

// RBACRequest asks for the role state; it has no fields yet.
type RBACRequest struct{}

// RBACResponse is the role state: every role (built-in ones first), every
// binding, every user's groups, and the security version they are from.
type RBACResponse struct {
	Version    uint64              `json:"version"`
	Roles      []auth.Role         `json:"roles"`
	Bindings   []auth.RoleBinding  `json:"bindings"`
	UserGroups map[string][]string `json:"user_groups"`
}

// RBAC returns the part of the response the authorizer expands.
func (r RBACResponse) RBAC() auth.RBAC {
	out := auth.RBAC{Bindings: r.Bindings, UserGroups: r.UserGroups}
	for _, role := range r.Roles {
		if !role.BuiltIn {
			out.Roles = append(out.Roles, role)
		}
	}
	return out
}

// PutRolesRequest creates or replaces custom roles.
type PutRolesRequest struct {
	Roles []auth.Role `json:"roles"`
}

// DeleteRolesRequest deletes custom roles that nothing is bound to.
type DeleteRolesRequest struct {
	Names []string `json:"names"`
}

// RoleBindingsRequest adds (BindRoles) or removes (UnbindRoles)
// bindings; adding one that exists is not an error, removing one that
// does not is.
type RoleBindingsRequest struct {
	Bindings []auth.RoleBinding `json:"bindings"`
}

// SetUserGroupsRequest sets users' groups.
type SetUserGroupsRequest struct {
	Users []UserGroups `json:"users"`
}

// RBACWriteResponse has one error per item of the request.
type RBACWriteResponse struct {
	Errors []*Error `json:"errors"`
}

// RBAC is the roles part of the client API, implemented by *Controller
// and *Client.
type RBAC interface {
	DescribeRBAC(ctx context.Context, req RBACRequest) (RBACResponse, error)
	PutRoles(ctx context.Context, req PutRolesRequest) (RBACWriteResponse, error)
	DeleteRoles(ctx context.Context, req DeleteRolesRequest) (RBACWriteResponse, error)
	BindRoles(ctx context.Context, req RoleBindingsRequest) (RBACWriteResponse, error)
	UnbindRoles(ctx context.Context, req RoleBindingsRequest) (RBACWriteResponse, error)
	SetUserGroups(ctx context.Context, req SetUserGroupsRequest) (RBACWriteResponse, error)
}

var (
	_ RBAC = (*Controller)(nil)
	_ RBAC = (*Client)(nil)
)

// DescribeRBAC returns the role state, answered from this node's state.
func (c *Controller) DescribeRBAC(_ context.Context, _ RBACRequest) (RBACResponse, error) {
	v, r := c.fsm.SecurityRBAC()
	resp := RBACResponse{Version: v, Roles: append(auth.BuiltInRoles(), r.Roles...), Bindings: r.Bindings, UserGroups: r.UserGroups}
	if resp.Bindings == nil {
		resp.Bindings = []auth.RoleBinding{}
	}
	return resp, nil
}

func (c *Controller) rbacWrite(ctx context.Context, n int, cmd *cmdSecurity) (RBACWriteResponse, error) {
	errs, err := c.proposeSecurity(ctx, n, cmd)
	if err != nil {
		return RBACWriteResponse{}, err
	}
	return RBACWriteResponse{Errors: errs}, nil
}

// PutRoles creates or replaces custom roles through Raft.
func (c *Controller) PutRoles(ctx context.Context, req PutRolesRequest) (RBACWriteResponse, error) {
	return c.rbacWrite(ctx, len(req.Roles), &cmdSecurity{Op: secPutRoles, Roles: req.Roles})
}

// DeleteRoles deletes custom roles through Raft.
func (c *Controller) DeleteRoles(ctx context.Context, req DeleteRolesRequest) (RBACWriteResponse, error) {
	return c.rbacWrite(ctx, len(req.Names), &cmdSecurity{Op: secDeleteRoles, RoleNames: req.Names})
}

// BindRoles adds role bindings through Raft.
func (c *Controller) BindRoles(ctx context.Context, req RoleBindingsRequest) (RBACWriteResponse, error) {
	return c.rbacWrite(ctx, len(req.Bindings), &cmdSecurity{Op: secBindRoles, Bindings: req.Bindings})
}

// UnbindRoles removes role bindings through Raft.
func (c *Controller) UnbindRoles(ctx context.Context, req RoleBindingsRequest) (RBACWriteResponse, error) {
	return c.rbacWrite(ctx, len(req.Bindings), &cmdSecurity{Op: secUnbindRoles, Bindings: req.Bindings})
}

// SetUserGroups sets users' groups through Raft.
func (c *Controller) SetUserGroups(ctx context.Context, req SetUserGroupsRequest) (RBACWriteResponse, error) {
	return c.rbacWrite(ctx, len(req.Users), &cmdSecurity{Op: secSetGroups, Groups: req.Users})
}

// Client API paths of the role state.
const (
	pathRBACDescribe = "/v1/roles/describe"
	pathRolesPut     = "/v1/roles/put"
	pathRolesDelete  = "/v1/roles/delete"
	pathRolesBind    = "/v1/roles/bind"
	pathRolesUnbind  = "/v1/roles/unbind"
	pathUserGroups   = "/v1/users/groups"
)

// rbacRoutes mounts the roles API on the client API's mux.
func (c *Controller) rbacRoutes(route func(string, bool, func(context.Context, []byte) (any, error)), decode func([]byte, any) error) {
	route(pathRBACDescribe, true, decoded(decode, c.DescribeRBAC))
	route(pathRolesPut, false, decoded(decode, c.PutRoles))
	route(pathRolesDelete, false, decoded(decode, c.DeleteRoles))
	route(pathRolesBind, false, decoded(decode, c.BindRoles))
	route(pathRolesUnbind, false, decoded(decode, c.UnbindRoles))
	route(pathUserGroups, false, decoded(decode, c.SetUserGroups))
}

// DescribeRBAC returns the role state.
func (c *Client) DescribeRBAC(ctx context.Context, req RBACRequest) (resp RBACResponse, err error) {
	return resp, c.call(ctx, pathRBACDescribe, read, req, &resp)
}

// PutRoles creates or replaces custom roles; doing it again is harmless.
func (c *Client) PutRoles(ctx context.Context, req PutRolesRequest) (resp RBACWriteResponse, err error) {
	return resp, c.call(ctx, pathRolesPut, idempotent, req, &resp)
}

// DeleteRoles deletes custom roles.
func (c *Client) DeleteRoles(ctx context.Context, req DeleteRolesRequest) (resp RBACWriteResponse, err error) {
	return resp, c.call(ctx, pathRolesDelete, write, req, &resp)
}

// BindRoles adds role bindings; adding one again is harmless.
func (c *Client) BindRoles(ctx context.Context, req RoleBindingsRequest) (resp RBACWriteResponse, err error) {
	return resp, c.call(ctx, pathRolesBind, idempotent, req, &resp)
}

// UnbindRoles removes role bindings.
func (c *Client) UnbindRoles(ctx context.Context, req RoleBindingsRequest) (resp RBACWriteResponse, err error) {
	return resp, c.call(ctx, pathRolesUnbind, write, req, &resp)
}

// SetUserGroups sets users' groups; setting them again is harmless.
func (c *Client) SetUserGroups(ctx context.Context, req SetUserGroupsRequest) (resp RBACWriteResponse, err error) {
	return resp, c.call(ctx, pathUserGroups, idempotent, req, &resp)
}
