package auth

import (
	"slices"
	"strings"
	"time"
)

// The authorizer's side of the roles: the bindings' ALLOW entries sit in
// byType beside the ACLs, so a decision walks one list, and a principal's
// groups are looked up once per decision.

// maxTokenGroups bounds the users whose token groups are remembered, so a
// stream of distinct token subjects cannot grow the map without end.
const maxTokenGroups = 100000

type tokenGroups struct {
	groups []string // Group:NAME
	until  time.Time
}

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

// SetTokenGroups records the groups (names without the Group: prefix) a
// user's (without User:) bearer token named, until the token expires:
// the authorizer treats the user as their member beside the groups stored
// with the user. The latest token of a user wins. Nil z is a no-op.
func (z *Authorizer) SetTokenGroups(user string, groups []string, until time.Time) {
	if z == nil {
		return
	}
	ps := make([]string, 0, len(groups))
	for _, g := range groups {
		if CheckGroupName(g) == nil {
			ps = append(ps, GroupPrefix+g)
		}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	key := UserPrefix + user
	prev, had := z.mu.tokenGroups[key]
	if len(ps) == 0 {
		if had {
			delete(z.mu.tokenGroups, key)
			z.gen.Add(1)
		}
		return
	}
	if z.mu.tokenGroups == nil {
		z.mu.tokenGroups = map[string]tokenGroups{}
	}
	if !had && len(z.mu.tokenGroups) >= maxTokenGroups {
		now := time.Now()
		for k, tg := range z.mu.tokenGroups {
			if !now.Before(tg.until) {
				delete(z.mu.tokenGroups, k)
			}
		}
		if len(z.mu.tokenGroups) >= maxTokenGroups {
			clear(z.mu.tokenGroups)
			z.gen.Add(1)
		}
	}
	z.mu.tokenGroups[key] = tokenGroups{groups: ps, until: until}
	// Another token of the same user with the same groups changes no
	// decision, so cached ones stay; other groups, or groups that had
	// lapsed, may change them.
	if !had || !slices.Equal(prev.groups, ps) || !time.Now().Before(prev.until) {
		z.gen.Add(1)
	}
}

// GroupsUntil is when the token groups principal (User:NAME) holds
// lapse, zero when it holds none: decisions cached for it are stale from
// then on, though Generation does not move.
func (z *Authorizer) GroupsUntil(principal string) time.Time {
	if z == nil {
		return time.Time{}
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	tg, ok := z.mu.tokenGroups[principal]
	if !ok || !time.Now().Before(tg.until) {
		return time.Time{}
	}
	return tg.until
}

// groupsLocked returns principal's Group:NAME principals; the slice is
// read-only.
func (z *Authorizer) groupsLocked(principal string) []string {
	stored := z.mu.groups[principal]
	tg, ok := z.mu.tokenGroups[principal]
	if !ok || !time.Now().Before(tg.until) {
		return stored
	}
	if len(stored) == 0 {
		return tg.groups
	}
	return append(slices.Clip(stored), tg.groups...)
}

// principalMatches reports whether an entry's principal covers a request
// by principal, a member of groups.
func principalMatches(entry, principal string, groups []string) bool {
	if strings.HasPrefix(entry, GroupPrefix) {
		// Only membership grants a group's entries: a request never acts
		// as a group.
		return slices.Contains(groups, entry)
	}
	return entry == principal || entry == UserPrefix+Wildcard
}

// RBAC returns the role state held.
func (z *Authorizer) RBAC() RBAC {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.mu.rbac.Clone()
}
