package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aerostream/aerostream/auth"
)

// Users and ACLs: the security state of issue 28, replicated like every
// other piece of metadata so that each controller, and through it each
// gateway, authenticates and authorizes alike.
//
// Users are SCRAM credentials only (salt, iterations, StoredKey, ServerKey
// per mechanism: auth.ScramCredential), never a password. ACLs are
// Kafka's bindings (auth.ACL), kept sorted and without duplicates.
//
// One command (opSecurity) carries every write, its kind in Op. Security
// writes do not bump the metadata version (no store acts on them); they
// bump the security version, which gateways watch to refresh their
// authorizers (SecurityChanged in process, SecurityState over the
// network).

// ErrUnknownUser: a credential to delete (or describe) that does not
// exist. Kafka's RESOURCE_NOT_FOUND.
var ErrUnknownUser = errors.New("unknown user or credential")

// MaxUsers and MaxACLs bound the security state, so that no command can
// bloat the replicated state.
const (
	MaxUsers = 100000
	MaxACLs  = 100000
	// MaxUserNameLen bounds a user name, in bytes.
	MaxUserNameLen = 255
)

// Security operations.
const (
	secAlterUsers = "alter_users"
	secCreateACLs = "create_acls"
	secDeleteACLs = "delete_acls"
)

type cmdSecurity struct {
	Op string `json:"op"`
	// alter_users: upserts, then deletions, each with its own outcome.
	Upserts   []ScramUpsert   `json:"upserts,omitempty"`
	Deletions []ScramDeletion `json:"deletions,omitempty"`
	// create_acls
	ACLs []auth.ACL `json:"acls,omitempty"`
	// delete_acls
	Filters []auth.ACLFilter `json:"filters,omitempty"`
	// The role operations (roles.go): put_roles, delete_roles,
	// bind_roles and unbind_roles, set_groups.
	Roles     []auth.Role        `json:"roles,omitempty"`
	RoleNames []string           `json:"role_names,omitempty"`
	Bindings  []auth.RoleBinding `json:"bindings,omitempty"`
	Groups    []UserGroups       `json:"groups,omitempty"`
}

// ScramUpsert sets one user's credential for one mechanism.
type ScramUpsert struct {
	User       string               `json:"user"`
	Mechanism  string               `json:"mechanism"`
	Credential auth.ScramCredential `json:"credential"`
}

// ScramDeletion removes one user's credential for one mechanism.
type ScramDeletion struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

type securityState struct {
	users   map[string]map[string]auth.ScramCredential
	acls    []auth.ACL
	rbac    rbacState
	version uint64
	// changed is closed (and replaced) when version moves.
	changed chan struct{}
}

func (s *securityState) init() {
	if s.users == nil {
		s.users = map[string]map[string]auth.ScramCredential{}
	}
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
}

func (s *securityState) bump() {
	s.version++
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
}

func checkUserName(name string) error {
	if name == "" || len(name) > MaxUserNameLen {
		return fmt.Errorf("%w: user name must be 1 to %d bytes", ErrInvalidRequest, MaxUserNameLen)
	}
	return nil
}

func aclLess(a, b auth.ACL) int {
	return strings.Compare(a.ResourceType+"\x00"+a.PatternType+"\x00"+a.ResourceName+"\x00"+a.Principal+"\x00"+a.Host+"\x00"+a.Operation+"\x00"+a.Permission,
		b.ResourceType+"\x00"+b.PatternType+"\x00"+b.ResourceName+"\x00"+b.Principal+"\x00"+b.Host+"\x00"+b.Operation+"\x00"+b.Permission)
}

// security applies a security write. It answers one error per item
// (items); delete_acls also answers the ACLs each filter removed.
func (a *applier) security(c *cmdSecurity) *applyResult {
	s := &a.st.security
	s.init()
	r := &applyResult{}
	changed := false
	switch c.Op {
	case secAlterUsers:
		for _, u := range c.Upserts {
			err := checkUserName(u.User)
			if err == nil {
				err = u.Credential.Check(u.Mechanism)
				if err != nil {
					err = fmt.Errorf("%w: %v", ErrInvalidRequest, err)
				}
			}
			if err == nil && s.users[u.User] == nil && len(s.users) >= MaxUsers {
				err = fmt.Errorf("%w: at most %d users", ErrInvalidRequest, MaxUsers)
			}
			if err == nil {
				m := maps.Clone(s.users[u.User])
				if m == nil {
					m = map[string]auth.ScramCredential{}
				}
				m[u.Mechanism] = u.Credential
				s.users[u.User] = m
				changed = true
			}
			r.items = append(r.items, err)
		}
		for _, d := range c.Deletions {
			var err error
			if _, ok := s.users[d.User][d.Mechanism]; !ok {
				err = fmt.Errorf("%w: user %q has no %s credential", ErrUnknownUser, d.User, d.Mechanism)
			} else {
				m := maps.Clone(s.users[d.User])
				delete(m, d.Mechanism)
				if len(m) == 0 {
					delete(s.users, d.User)
					// A deleted user's groups must not pass to a new
					// user of the same name.
					delete(s.rbac.groups, d.User)
				} else {
					s.users[d.User] = m
				}
				changed = true
			}
			r.items = append(r.items, err)
		}
	case secCreateACLs:
		acls := slices.Clone(s.acls)
		for _, acl := range c.ACLs {
			err := acl.Check()
			if err != nil {
				err = fmt.Errorf("%w: %v", ErrInvalidRequest, err)
			} else if i, found := slices.BinarySearchFunc(acls, acl, aclLess); !found {
				if len(acls) >= MaxACLs {
					err = fmt.Errorf("%w: at most %d ACLs", ErrInvalidRequest, MaxACLs)
				} else {
					acls = slices.Insert(acls, i, acl)
					changed = true
				}
			}
			r.items = append(r.items, err)
		}
		s.acls = acls
	case secDeleteACLs:
		keep := s.acls
		for _, f := range c.Filters {
			var removed []auth.ACL
			next := make([]auth.ACL, 0, len(keep))
			for _, acl := range keep {
				if f.Matches(acl) {
					removed = append(removed, acl)
				} else {
					next = append(next, acl)
				}
			}
			keep = next
			r.acls = append(r.acls, removed)
			r.items = append(r.items, nil)
			changed = changed || len(removed) > 0
		}
		s.acls = keep
	case secPutRoles, secDeleteRoles, secBindRoles, secUnbindRoles, secSetGroups:
		changed = a.rbac(c, r)
	default:
		return &applyResult{err: fmt.Errorf("%w: unknown security op %q", ErrMalformedCommand, c.Op)}
	}
	if changed {
		s.bump()
	}
	return r
}

// securitySnapshot is the security state in a snapshot.
type securitySnapshot struct {
	Version uint64                                     `json:"version"`
	Users   map[string]map[string]auth.ScramCredential `json:"users,omitempty"`
	ACLs    []auth.ACL                                 `json:"acls,omitempty"`
	RBAC    *rbacSnapshot                              `json:"rbac,omitempty"`
}

func (s *securityState) snapshot() *securitySnapshot {
	if len(s.users) == 0 && len(s.acls) == 0 && s.version == 0 && s.rbac.empty() {
		return nil
	}
	return &securitySnapshot{Version: s.version, Users: maps.Clone(s.users), ACLs: s.acls, RBAC: s.rbac.snapshot()}
}

func (s *securityState) restore(d *securitySnapshot) error {
	s.init()
	if d == nil {
		return s.rbac.restore(nil)
	}
	if err := s.rbac.restore(d.RBAC); err != nil {
		return fmt.Errorf("roles: %w", err)
	}
	for name, m := range d.Users {
		if err := checkUserName(name); err != nil {
			return err
		}
		for mech, c := range m {
			if err := c.Check(mech); err != nil {
				return fmt.Errorf("user %q: %v", name, err)
			}
		}
	}
	for _, acl := range d.ACLs {
		if err := acl.Check(); err != nil {
			return err
		}
	}
	acls := slices.Clone(d.ACLs)
	slices.SortFunc(acls, aclLess)
	acls = slices.CompactFunc(acls, func(a, b auth.ACL) bool { return aclLess(a, b) == 0 })
	s.users, s.acls = maps.Clone(d.Users), acls
	if s.users == nil {
		s.users = map[string]map[string]auth.ScramCredential{}
	}
	// A restore is a change to whoever waits on the old version.
	s.version = d.Version
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}

// Read side.

// ScramCredential returns a user's credential for a mechanism.
func (f *FSM) ScramCredential(user, mechanism string) (auth.ScramCredential, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	c, ok := f.mu.st.security.users[user][mechanism]
	return c, ok
}

// SecurityACLs returns the security version and every ACL.
func (f *FSM) SecurityACLs() (uint64, []auth.ACL) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.mu.st.security.version, slices.Clone(f.mu.st.security.acls)
}

// WaitSecurity returns the security version and ACLs once the version is
// no longer known (at once if it already is not), or ctx's error.
func (f *FSM) WaitSecurity(ctx context.Context, known uint64) (uint64, []auth.ACL, error) {
	for {
		f.mu.RLock()
		s := &f.mu.st.security
		v, acls := s.version, slices.Clone(s.acls)
		// A Restore replaces the whole state, security channel and all,
		// and closes the metadata channel: wait on both.
		secCh, metaCh := s.changed, f.mu.changed
		f.mu.RUnlock()
		if v != known || secCh == nil {
			return v, acls, nil
		}
		select {
		case <-secCh:
		case <-metaCh:
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// Client API types.

// ScramUser describes a user's credentials without their secrets (Kafka's
// DescribeUserScramCredentials).
type ScramUser struct {
	User        string           `json:"user"`
	Credentials []ScramMechanism `json:"credentials"`
	Error       *Error           `json:"error,omitempty"`
}

// ScramMechanism is one mechanism a user has a credential for.
type ScramMechanism struct {
	Mechanism  string `json:"mechanism"`
	Iterations int    `json:"iterations"`
}

// DescribeScramRequest names users; empty describes all.
type DescribeScramRequest struct {
	Users []string `json:"users,omitempty"`
}

// DescribeScramResponse lists users.
type DescribeScramResponse struct {
	Users []ScramUser `json:"users"`
}

// AlterScramRequest upserts and deletes credentials.
type AlterScramRequest struct {
	Upserts   []ScramUpsert   `json:"upserts,omitempty"`
	Deletions []ScramDeletion `json:"deletions,omitempty"`
}

// AlterScramResponse has one error per upsert, then one per deletion.
type AlterScramResponse struct {
	Errors []*Error `json:"errors"`
}

// GetScramRequest asks for one stored credential.
type GetScramRequest struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
}

// GetScramResponse is a stored credential (Found false: none).
type GetScramResponse struct {
	Found      bool                 `json:"found"`
	Credential auth.ScramCredential `json:"credential"`
}

// CreateACLsRequest adds ACLs; one already present is not an error.
type CreateACLsRequest struct {
	ACLs []auth.ACL `json:"acls"`
}

// CreateACLsResponse has one error per ACL.
type CreateACLsResponse struct {
	Errors []*Error `json:"errors"`
}

// DescribeACLsRequest selects ACLs.
type DescribeACLsRequest struct {
	Filter auth.ACLFilter `json:"filter"`
	// Bindings asks also for the entries the role bindings expand to,
	// which the filter selects as auth.BoundACL.Listed shows them.
	Bindings bool `json:"bindings,omitempty"`
}

// ACLsResponse lists ACLs, with the security version they are from.
type ACLsResponse struct {
	Version uint64     `json:"version"`
	ACLs    []auth.ACL `json:"acls"`
	// Bindings are the role bindings' entries, when asked for: apart, so
	// that no one takes them for ACLs.
	Bindings []auth.BoundACL `json:"bindings,omitempty"`
}

// DeleteACLsRequest removes the ACLs each filter selects.
type DeleteACLsRequest struct {
	Filters []auth.ACLFilter `json:"filters"`
}

// DeleteACLsResponse lists, per filter, the ACLs it removed.
type DeleteACLsResponse struct {
	Deleted [][]auth.ACL `json:"deleted"`
	// Bindings lists, per filter, the role bindings whose entries it
	// selected, which it left in place: only unbinding removes them.
	Bindings [][]auth.RoleBinding `json:"bindings,omitempty"`
}

// Security is the users-and-ACLs part of the client API, implemented by
// *Controller and *Client.
type Security interface {
	DescribeScramUsers(ctx context.Context, req DescribeScramRequest) (DescribeScramResponse, error)
	AlterScramUsers(ctx context.Context, req AlterScramRequest) (AlterScramResponse, error)
	GetScramCredential(ctx context.Context, req GetScramRequest) (GetScramResponse, error)
	CreateACLs(ctx context.Context, req CreateACLsRequest) (CreateACLsResponse, error)
	DescribeACLs(ctx context.Context, req DescribeACLsRequest) (ACLsResponse, error)
	DeleteACLs(ctx context.Context, req DeleteACLsRequest) (DeleteACLsResponse, error)
}

var (
	_ Security = (*Controller)(nil)
	_ Security = (*Client)(nil)
)

// DescribeScramUsers describes users' credentials (mechanism and
// iterations, never the keys).
func (c *Controller) DescribeScramUsers(_ context.Context, req DescribeScramRequest) (DescribeScramResponse, error) {
	var resp DescribeScramResponse
	c.fsm.read(func(st *state) {
		users := req.Users
		if len(users) == 0 {
			users = slices.Sorted(maps.Keys(st.security.users))
		}
		for _, name := range users {
			u := ScramUser{User: name, Credentials: []ScramMechanism{}}
			m, ok := st.security.users[name]
			if !ok {
				u.Error = toError(fmt.Errorf("%w: user %q", ErrUnknownUser, name))
			}
			for _, mech := range slices.Sorted(maps.Keys(m)) {
				u.Credentials = append(u.Credentials, ScramMechanism{Mechanism: mech, Iterations: m[mech].Iterations})
			}
			resp.Users = append(resp.Users, u)
		}
	})
	if resp.Users == nil {
		resp.Users = []ScramUser{}
	}
	return resp, nil
}

// AlterScramUsers upserts and deletes credentials through Raft.
func (c *Controller) AlterScramUsers(ctx context.Context, req AlterScramRequest) (AlterScramResponse, error) {
	errs, err := c.proposeSecurity(ctx, len(req.Upserts)+len(req.Deletions),
		&cmdSecurity{Op: secAlterUsers, Upserts: req.Upserts, Deletions: req.Deletions})
	if err != nil {
		return AlterScramResponse{}, err
	}
	return AlterScramResponse{Errors: errs}, nil
}

// proposeSecurity proposes cmd, which carries n items, and answers one
// error (nil for success) per item in order; with no items there is
// nothing to agree on, so nothing is proposed.
func (c *Controller) proposeSecurity(ctx context.Context, n int, cmd *cmdSecurity) ([]*Error, error) {
	if n == 0 {
		return []*Error{}, nil
	}
	r, err := c.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	errs := make([]*Error, len(r.items))
	for i, e := range r.items {
		errs[i] = toError(e)
	}
	return errs, nil
}

// GetScramCredential returns one stored credential, for a gateway
// verifying a client. It is answered from this node's state.
func (c *Controller) GetScramCredential(_ context.Context, req GetScramRequest) (GetScramResponse, error) {
	cred, ok := c.fsm.ScramCredential(req.User, req.Mechanism)
	return GetScramResponse{Found: ok, Credential: cred}, nil
}

// CreateACLs adds ACLs through Raft.
func (c *Controller) CreateACLs(ctx context.Context, req CreateACLsRequest) (CreateACLsResponse, error) {
	errs, err := c.proposeSecurity(ctx, len(req.ACLs), &cmdSecurity{Op: secCreateACLs, ACLs: req.ACLs})
	if err != nil {
		return CreateACLsResponse{}, err
	}
	return CreateACLsResponse{Errors: errs}, nil
}

// DescribeACLs lists the ACLs the filter selects, sorted.
func (c *Controller) DescribeACLs(_ context.Context, req DescribeACLsRequest) (ACLsResponse, error) {
	v, all := c.fsm.SecurityACLs()
	resp := ACLsResponse{Version: v, ACLs: []auth.ACL{}}
	for _, a := range all {
		if req.Filter.Matches(a) {
			resp.ACLs = append(resp.ACLs, a)
		}
	}
	sort.SliceStable(resp.ACLs, func(i, j int) bool { return aclLess(resp.ACLs[i], resp.ACLs[j]) < 0 })
	if req.Bindings {
		_, rbac := c.fsm.SecurityRBAC()
		for _, b := range rbac.BoundACLs() {
			if req.Filter.Matches(b.Listed()) {
				resp.Bindings = append(resp.Bindings, b)
			}
		}
	}
	return resp, nil
}

// boundBy returns, per filter, the role bindings whose entries it
// selects.
func boundBy(rbac auth.RBAC, filters []auth.ACLFilter) [][]auth.RoleBinding {
	bound := rbac.BoundACLs()
	out := make([][]auth.RoleBinding, len(filters))
	for i, f := range filters {
		for _, b := range bound {
			if f.Matches(b.Listed()) && !slices.Contains(out[i], b.Binding) {
				out[i] = append(out[i], b.Binding)
			}
		}
	}
	return out
}

// DeleteACLs removes the ACLs each filter selects, through Raft.
func (c *Controller) DeleteACLs(ctx context.Context, req DeleteACLsRequest) (DeleteACLsResponse, error) {
	if len(req.Filters) == 0 {
		return DeleteACLsResponse{Deleted: [][]auth.ACL{}}, nil
	}
	r, err := c.propose(ctx, &cmdSecurity{Op: secDeleteACLs, Filters: req.Filters})
	if err != nil {
		return DeleteACLsResponse{}, err
	}
	_, rbac := c.fsm.SecurityRBAC()
	resp := DeleteACLsResponse{Deleted: r.acls, Bindings: boundBy(rbac, req.Filters)}
	for i := range resp.Deleted {
		if resp.Deleted[i] == nil {
			resp.Deleted[i] = []auth.ACL{}
		}
	}
	return resp, nil
}

// Client API paths of the security state.
const (
	pathScramDescribe = "/v1/users/describe"
	pathScramAlter    = "/v1/users/alter"
	pathScramGet      = "/v1/users/credential"
	pathACLsCreate    = "/v1/acls/create"
	pathACLsDescribe  = "/v1/acls/describe"
	pathACLsDelete    = "/v1/acls/delete"
)

// securityRoutes mounts the security API on the client API's mux.
func (c *Controller) securityRoutes(route func(string, bool, func(context.Context, []byte) (any, error)), decode func([]byte, any) error) {
	route(pathScramDescribe, true, decoded(decode, c.DescribeScramUsers))
	route(pathScramAlter, false, decoded(decode, c.AlterScramUsers))
	route(pathScramGet, true, decoded(decode, c.GetScramCredential))
	route(pathACLsCreate, false, decoded(decode, c.CreateACLs))
	route(pathACLsDescribe, true, decoded(decode, c.DescribeACLs))
	route(pathACLsDelete, false, decoded(decode, c.DeleteACLs))
	c.rbacRoutes(route, decode)
}

// DescribeScramUsers describes users' credentials.
func (c *Client) DescribeScramUsers(ctx context.Context, req DescribeScramRequest) (resp DescribeScramResponse, err error) {
	return resp, c.call(ctx, pathScramDescribe, read, req, &resp)
}

// AlterScramUsers upserts and deletes credentials.
func (c *Client) AlterScramUsers(ctx context.Context, req AlterScramRequest) (resp AlterScramResponse, err error) {
	return resp, c.call(ctx, pathScramAlter, write, req, &resp)
}

// GetScramCredential returns one stored credential.
func (c *Client) GetScramCredential(ctx context.Context, req GetScramRequest) (resp GetScramResponse, err error) {
	return resp, c.call(ctx, pathScramGet, read, req, &resp)
}

// CreateACLs adds ACLs; adding one again is harmless.
func (c *Client) CreateACLs(ctx context.Context, req CreateACLsRequest) (resp CreateACLsResponse, err error) {
	return resp, c.call(ctx, pathACLsCreate, idempotent, req, &resp)
}

// DescribeACLs lists ACLs.
func (c *Client) DescribeACLs(ctx context.Context, req DescribeACLsRequest) (resp ACLsResponse, err error) {
	return resp, c.call(ctx, pathACLsDescribe, read, req, &resp)
}

// DeleteACLs removes ACLs.
func (c *Client) DeleteACLs(ctx context.Context, req DeleteACLsRequest) (resp DeleteACLsResponse, err error) {
	return resp, c.call(ctx, pathACLsDelete, write, req, &resp)
}
