package kafka

// The audit log: authentication failures and denied operations, one log
// line each with the principal, the client's address, the operation and
// the resource, under the "audit" key, rate-limited per (principal,
// client) pair by auth.AuditLimiter.

// audit logs a denied operation, or a failed authentication when err is
// set.
func (g *Gateway) audit(rc *reqCtx, operation, resourceType, resource string, err error) {
	principal, client := rc.s.principal(), rc.s.clientHost()
	ok, dropped := g.auditLimit.Allow(g.now(), principal+"|"+client)
	if !ok {
		return
	}
	args := []any{"audit", true, "principal", principal, "client", client, "operation", operation}
	if resourceType != "" {
		args = append(args, "resource_type", resourceType, "resource", resource)
	}
	if dropped > 0 {
		args = append(args, "suppressed", dropped)
	}
	if err != nil {
		g.log.Warn("authentication failed", append(args, "err", err)...)
		return
	}
	g.log.Warn("operation denied", args...)
}
