// Package auth owns what security decisions are made of, independent of any
// wire protocol:
//
//   - TLS server configuration (tls.go): modern cipher suites only, which
//     Kafka's ssl.cipher.suites and ssl.enabled.protocols names narrow, client
//     certificate policy, and a certificate that is re-read when its files
//     change, so a renewed certificate needs no restart;
//   - client certificate principals (principal_mapping.go): a verified
//     certificate's subject as Java writes it (RFC 2253), mapped by Kafka's
//     ssl.principal.mapping.rules grammar;
//   - SASL mechanisms (sasl.go, scram.go, plain.go): a server-side SCRAM
//     (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and Kafka use them)
//     and PLAIN, verified against salted and hashed SCRAM credentials, so a
//     password is never stored;
//   - the authorizer (acl.go): Kafka's ACL model of principal, host,
//     operation, permission and resource pattern (literal, prefixed, or the
//     wildcard "*"), with deny winning over allow, the operations Kafka
//     implies (READ implies DESCRIBE, and so on), super users, and default
//     deny; a principal may be Group:NAME too (Confluent's and Redpanda's
//     convention, not Kafka's), which a user matches through its groups;
//   - roles (roles.go, roles_authz.go): built-in and custom roles bound to
//     User: and Group: principals, expanded into ALLOW entries beside the
//     ACLs, so a DENY ACL still wins; a user's groups are those stored
//     with the user in the controller's state plus, for a session a
//     bearer token authenticated, those its groups claim names. The
//     latter belong to the session, not the user: the gateway keeps them
//     with the connection (Token.Groups, Grouped) and asks with them
//     (Request.Groups), so two connections of one user holding tokens of
//     different groups get different decisions, and the groups end with
//     the session when the token expires. Listings show a binding's
//     entries marked with the host role-binding:ROLE (BoundACL), never as
//     ACLs.
//
// The gateways run the exchanges (Kafka's SaslHandshake and
// SaslAuthenticate) and ask the Authorizer; the controller stores the
// credentials and ACLs in its replicated state; tools/ wires the three.
//
// auth is a leaf: it imports no other aerostream package.
package auth
