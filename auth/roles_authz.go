package auth

import (
	"slices"
	"strings"
)

// The authorizer's side of the roles: the bindings' ALLOW entries sit in
// byType beside the ACLs, so a decision walks one list, and a principal's
// stored groups are looked up once per decision; its token's groups come
// with the request.

// setLocked replaces the ACLs and the role state; z.mu is held for
// writing.
func (z *Authorizer) setLocked(version uint64, acls []ACL, rbac RBAC) {
	by := map[string][]ACL{}
	for _, a := range acls {
		by[a.ResourceType] = append(by[a.ResourceType], a)
	}
	for _, a := range rbac.Expand() {
		by[a.ResourceType] = append(by[a.ResourceType], a)
	}
	z.mu.byType, z.mu.version = by, version
	// Kept for SetRBAC to rebuild byType with: a copy, so that the
	// caller's later use of its slice cannot change decisions.
	z.mu.explicit, z.mu.rbac = slices.Clone(acls), rbac
	z.mu.groups = rbac.groupPrincipals()
	z.gen.Add(1)
}

// SetAll replaces the ACLs and the role state together, with the same
// versioning as Set.
func (z *Authorizer) SetAll(version uint64, acls []ACL, rbac RBAC) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if version < z.mu.version {
		return
	}
	z.setLocked(version, acls, rbac.Clone())
}

// SetRBAC replaces the role state and keeps the ACLs held.
func (z *Authorizer) SetRBAC(version uint64, rbac RBAC) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if version < z.mu.version {
		return
	}
	z.setLocked(version, z.mu.explicit, rbac.Clone())
}

// principalMatches reports whether an entry's principal covers a request
// by principal, a member of the stored groups and of the session's token
// groups. The two lists are searched apart, so a decision joins nothing.
func principalMatches(entry, principal string, stored, token []string) bool {
	if strings.HasPrefix(entry, GroupPrefix) {
		// Only membership grants a group's entries: a request never acts
		// as a group.
		return slices.Contains(stored, entry) || slices.Contains(token, entry)
	}
	return entry == principal || entry == UserPrefix+Wildcard
}

// RBAC returns the role state held.
func (z *Authorizer) RBAC() RBAC {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.mu.rbac.Clone()
}
