package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/aerostream/aerostream/auth"
	"github.com/aerostream/aerostream/controller"
	gwhttp "github.com/aerostream/aerostream/gateways/http"
	"github.com/aerostream/aerostream/gateways/http/adminapi"
	"github.com/aerostream/aerostream/gateways/kafka"
	"github.com/aerostream/aerostream/gateways/native"
	"github.com/aerostream/aerostream/tools/config"
)

// Security wiring: TLS on listeners whose address says SSL:// or
// SASL_SSL://, SASL and the authorizer on the Kafka gateway, the
// bootstrap user, and the ACL refresh that keeps every gateway's
// authorizer in step with the controller.

// tlsListener wraps ln in TLS when the listener address asks for it.
func tlsListener(cfg config.Config, key, addr string, ln net.Listener, logger *slog.Logger) (net.Listener, error) {
	if !config.IsTLS(config.ListenerProtocol(addr)) {
		return ln, nil
	}
	tc, err := auth.ServerTLS(auth.TLSOptions{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, CAFile: cfg.TLS.CAFile,
		ClientAuth: cfg.TLS.ClientAuth, CipherSuites: cfg.TLS.CipherSuites, Protocols: cfg.TLS.EnabledProtocols, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return tls.NewListener(ln, tc), nil
}

// kafkaSecurity is the Kafka gateway's authentication and authorization,
// and the loop that keeps its ACLs current.
type kafkaSecurity struct {
	opts    kafka.AuthOptions
	refresh func(ctx context.Context) // nil: nothing to refresh
}

func newKafkaSecurity(cfg config.Config, api controller.API, logger *slog.Logger) (*kafkaSecurity, error) {
	s := &kafkaSecurity{}
	sec := securityOf(api)
	proto := config.ListenerProtocol(cfg.Listeners.Kafka)
	if config.IsSASL(proto) {
		if sec == nil {
			return nil, errors.New("listeners.kafka: SASL needs the controller's user store")
		}
		s.opts.SASL = true
		s.opts.Mechanisms = cfg.Auth.SASLMechanisms
		s.opts.ReauthAfter = time.Duration(cfg.Auth.ReauthMs) * time.Millisecond
		s.opts.Credentials = scramLookup(sec)
		var err error
		if s.opts.Tokens, err = tokenValidator(cfg); err != nil {
			return nil, err
		}
	}
	if sec != nil {
		s.opts.Security = controllerSecurity{sec}
	}
	warnAnonymous(cfg, "listeners.kafka", cfg.Listeners.Kafka, config.IsSASL(proto), logger)
	z, refresh, err := aclAuthorizer(cfg, sec, logger)
	if err != nil {
		return nil, err
	}
	s.opts.Authorizer, s.refresh = z, refresh
	return s, nil
}

// takesClientCerts says whether the listener at addr asks TLS clients for
// a certificate (tls.client_auth requested or required), whose mapped
// subject is then the client's principal.
func takesClientCerts(cfg config.Config, addr string) bool {
	return config.IsTLS(config.ListenerProtocol(addr)) && cfg.TLS.ClientAuth != "none" && cfg.TLS.ClientAuth != ""
}

// warnAnonymous says, when auth.authorizer is on, which clients of the
// listener key (at addr) nothing identifies, so that they act as
// User:ANONYMOUS: all of them without SASL or client certificates, those
// sending no certificate when certificates are only requested.
func warnAnonymous(cfg config.Config, key, addr string, sasl bool, logger *slog.Logger) {
	switch {
	case !cfg.Auth.Authorizer || sasl:
	case !takesClientCerts(cfg, addr):
		logger.Warn("auth.authorizer is on but " + key + " has no SASL nor client certificates: every client is User:ANONYMOUS")
	case cfg.TLS.ClientAuth == "requested":
		logger.Info(key + " only requests client certificates (tls.client_auth): a client that sends none is User:ANONYMOUS")
	}
}

// securityOf is api's user and ACL store, nil when it has none (a nil
// controller pointer included).
func securityOf(api any) controller.Security {
	switch c := api.(type) {
	case *controller.Controller:
		if c == nil {
			return nil
		}
	case *controller.Client:
		if c == nil {
			return nil
		}
	}
	sec, _ := api.(controller.Security)
	return sec
}

// aclAuthorizer is the authorizer of auth.authorizer (nil when it is off)
// and the loop that keeps its ACLs in step with the controller (nil when
// there is nothing to refresh).
func aclAuthorizer(cfg config.Config, sec controller.Security, logger *slog.Logger) (*auth.Authorizer, func(ctx context.Context), error) {
	if !cfg.Auth.Authorizer {
		return nil, nil, nil
	}
	if sec == nil {
		return nil, nil, errors.New("auth.authorizer: the ACLs live in the controller, which this process cannot reach")
	}
	z := auth.NewAuthorizer(true, cfg.Auth.SuperUsers)
	if c, ok := sec.(*controller.Controller); ok {
		fsm := c.FSM()
		v, acls := fsm.SecurityACLs()
		_, roles := fsm.SecurityRBAC()
		z.SetAll(v, acls, roles)
		return z, func(ctx context.Context) {
			known := v
			for {
				nv, acls, err := fsm.WaitSecurity(ctx, known)
				if err != nil {
					return
				}
				// Roles read after the ACLs may be newer than them; the
				// next wait then returns at once and catches the ACLs up.
				_, roles := fsm.SecurityRBAC()
				z.SetAll(nv, acls, roles)
				known = nv
			}
		}, nil
	}
	// Over the network: poll. An ACL or role change reaches a separate
	// gateway process within a second.
	rbac, _ := sec.(controller.RBAC)
	return z, func(ctx context.Context) {
		for {
			r, err := sec.DescribeACLs(ctx, controller.DescribeACLsRequest{})
			var rr controller.RBACResponse
			if err == nil && rbac != nil {
				rr, err = rbac.DescribeRBAC(ctx, controller.RBACRequest{})
			}
			if err == nil {
				z.SetAll(r.Version, r.ACLs, rr.RBAC())
			} else if ctx.Err() == nil {
				logger.Warn("acl refresh failed; keeping the ACLs held", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}, nil
}

// controllerSecurity adapts the controller's user and ACL API to the
// Kafka gateway's, with Kafka's error codes.
type controllerSecurity struct{ api controller.Security }

var _ kafka.Security = controllerSecurity{}

// kafkaErr gives a controller error its Kafka code.
func kafkaErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, controller.ErrUnknownUser):
		return fmt.Errorf("%w: %v", kerr.ResourceNotFound, err)
	case errors.Is(err, controller.ErrInvalidRequest):
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	case errors.Is(err, controller.ErrNotLeader), errors.Is(err, controller.ErrTimeout):
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	}
	return err
}

func (c controllerSecurity) DescribeScramUsers(ctx context.Context, users []string) ([]kafka.ScramUser, error) {
	r, err := c.api.DescribeScramUsers(ctx, controller.DescribeScramRequest{Users: users})
	if err != nil {
		return nil, kafkaErr(err)
	}
	var out []kafka.ScramUser
	for _, u := range r.Users {
		if u.Error != nil {
			continue // unknown: the gateway answers RESOURCE_NOT_FOUND
		}
		ku := kafka.ScramUser{User: u.User}
		for _, m := range u.Credentials {
			ku.Mechanisms, ku.Iterations = append(ku.Mechanisms, m.Mechanism), append(ku.Iterations, m.Iterations)
		}
		out = append(out, ku)
	}
	return out, nil
}

func (c controllerSecurity) AlterScramUsers(ctx context.Context, ups []kafka.ScramUpsert, dels []kafka.ScramDeletion) ([]error, error) {
	req := controller.AlterScramRequest{}
	for _, u := range ups {
		req.Upserts = append(req.Upserts, controller.ScramUpsert{User: u.User, Mechanism: u.Mechanism, Credential: u.Credential})
	}
	for _, d := range dels {
		req.Deletions = append(req.Deletions, controller.ScramDeletion{User: d.User, Mechanism: d.Mechanism})
	}
	r, err := c.api.AlterScramUsers(ctx, req)
	if err != nil {
		return nil, kafkaErr(err)
	}
	return wireErrs(r.Errors), nil
}

func wireErrs(es []*controller.Error) []error {
	out := make([]error, len(es))
	for i, e := range es {
		if e != nil {
			out[i] = kafkaErr(e)
		}
	}
	return out
}

func (c controllerSecurity) CreateACLs(ctx context.Context, acls []auth.ACL) ([]error, error) {
	r, err := c.api.CreateACLs(ctx, controller.CreateACLsRequest{ACLs: acls})
	if err != nil {
		return nil, kafkaErr(err)
	}
	return wireErrs(r.Errors), nil
}

// DescribeACLs lists the ACLs, then the role bindings' entries marked
// as such (auth.BoundACL.Listed).
func (c controllerSecurity) DescribeACLs(ctx context.Context, f auth.ACLFilter) ([]auth.ACL, error) {
	r, err := c.api.DescribeACLs(ctx, controller.DescribeACLsRequest{Filter: f, Bindings: true})
	if err != nil {
		return nil, kafkaErr(err)
	}
	out := r.ACLs
	for _, b := range r.Bindings {
		out = append(out, b.Listed())
	}
	return out, nil
}

// DeleteACLs refuses a filter that removed nothing but selects role
// bindings' entries, naming the bindings to unbind; a filter that removed
// ACLs too succeeds, as Kafka's answer has room for one code only.
func (c controllerSecurity) DeleteACLs(ctx context.Context, fs []auth.ACLFilter) ([][]auth.ACL, []error, error) {
	r, err := c.api.DeleteACLs(ctx, controller.DeleteACLsRequest{Filters: fs})
	if err != nil {
		return nil, nil, kafkaErr(err)
	}
	errs := make([]error, len(fs))
	for i := range errs {
		if i < len(r.Bindings) && len(r.Bindings[i]) > 0 && (i >= len(r.Deleted) || len(r.Deleted[i]) == 0) {
			errs[i] = fmt.Errorf("%w: %v", kerr.InvalidRequest, auth.ErrBindingEntries(r.Bindings[i]))
		}
	}
	return r.Deleted, errs, nil
}

// bootstrapUser creates auth.bootstrap_user on first start, with the
// password in AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD, for both SCRAM
// mechanisms (as Kafka's `kafka-storage format --add-scram`). A user that
// exists is left alone, so a restart never resets a changed password. It
// waits for the controller to lead, which a fresh single-voter controller
// does at once.
func bootstrapUser(ctx context.Context, cfg config.Config, env Env, api controller.Security, logger *slog.Logger) error {
	user := cfg.Auth.BootstrapUser
	if user == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		d, err := api.DescribeScramUsers(ctx, controller.DescribeScramRequest{Users: []string{user}})
		if err == nil && len(d.Users) == 1 && d.Users[0].Error == nil {
			logger.Info("bootstrap user exists", "user", user)
			return nil
		}
		pass := envValue(env.Environ, config.EnvBootstrapPassword)
		if pass == "" {
			return fmt.Errorf("auth.bootstrap_user = %q: user does not exist and %s is empty", user, config.EnvBootstrapPassword)
		}
		req := controller.AlterScramRequest{}
		for _, m := range []string{auth.ScramSHA256, auth.ScramSHA512} {
			c, err := auth.NewScramCredential(m, pass, auth.DefaultIterations)
			if err != nil {
				return err
			}
			req.Upserts = append(req.Upserts, controller.ScramUpsert{User: user, Mechanism: m, Credential: c})
		}
		r, err := api.AlterScramUsers(ctx, req)
		if err == nil {
			for _, e := range r.Errors {
				if e != nil {
					return fmt.Errorf("auth.bootstrap_user = %q: %v", user, e)
				}
			}
			logger.Info("bootstrap user created", "user", user, "mechanisms", auth.ScramSHA256+","+auth.ScramSHA512)
			return nil
		}
		if !errors.Is(err, controller.ErrNotLeader) && !errors.Is(err, controller.ErrTimeout) {
			return fmt.Errorf("auth.bootstrap_user: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("auth.bootstrap_user: no controller leader: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// serve runs the gateway and, beside it, the ACL refresh, stopping the
// refresh once the gateway has stopped.
func (s *kafkaSecurity) serve(ctx context.Context, run func(ctx context.Context) error) error {
	return runBeside(ctx, s.refresh, run)
}

// runBeside runs run and, beside it, refresh (when not nil), stopping
// refresh once run has returned.
func runBeside(ctx context.Context, refresh func(ctx context.Context), run func(ctx context.Context) error) error {
	if refresh == nil {
		return run(ctx)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		refresh(rctx)
	}()
	err := run(ctx)
	cancel()
	<-done
	return err
}

// httpSecurity is the Guard of an HTTP listener and the refresh of its
// ACLs.
type httpSecurity struct {
	guard   *gwhttp.Guard
	refresh func(ctx context.Context) // nil: nothing to refresh
}

// newHTTPSecurity builds the Guard of the HTTP listener at addr over
// api's users and ACLs: basic with SCRAM users, bearer tokens when
// OAUTHBEARER validation is configured, client certificates when the
// listener is TLS and asks for them, named by tls.principal_mapping_rules
// as on the Kafka and native listeners.
func newHTTPSecurity(cfg config.Config, key, addr string, api any, logger *slog.Logger) (*httpSecurity, error) {
	sec := securityOf(api)
	o := gwhttp.AuthOptions{
		Required:    cfg.HTTPAuthRequired(),
		OpenPaths:   cfg.Auth.HTTPOpenPaths,
		ClientCerts: takesClientCerts(cfg, addr),
		Logger:      logger,
	}
	if sec != nil {
		o.Credentials = scramLookup(sec)
	}
	var err error
	if o.Principals, err = certPrincipals(cfg); err != nil { // gateway.go
		return nil, err
	}
	z, refresh, err := aclAuthorizer(cfg, sec, logger)
	if err != nil {
		return nil, err
	}
	o.Authorizer = z
	tokens, err := tokenValidator(cfg)
	if err != nil {
		return nil, err
	}
	o.Bearer = tokens
	if o.Required && o.Credentials == nil && !o.ClientCerts && o.Bearer == nil {
		return nil, fmt.Errorf("%s: authentication is required (auth.http_authentication) but this process reaches no user store and takes no client certificates", key)
	}
	return &httpSecurity{guard: gwhttp.NewGuard(o), refresh: refresh}, nil
}

// nativeSASL is the native listener's SASL, over api's users, when
// listeners.native says SASL_PLAINTEXT:// or SASL_SSL://.
func nativeSASL(cfg config.Config, api any) (native.AuthOptions, error) {
	if !config.IsSASL(config.ListenerProtocol(cfg.Listeners.Native)) {
		return native.AuthOptions{}, nil
	}
	sec := securityOf(api)
	if sec == nil {
		return native.AuthOptions{}, errors.New("listeners.native: SASL needs the controller's user store")
	}
	tokens, err := tokenValidator(cfg)
	if err != nil {
		return native.AuthOptions{}, err
	}
	return native.AuthOptions{SASL: true, Mechanisms: cfg.Auth.SASLMechanisms, Credentials: scramLookup(sec), Tokens: tokens}, nil
}

// scramLookup finds SCRAM credentials in the controller's user store.
func scramLookup(sec controller.Security) auth.CredentialLookup {
	return func(ctx context.Context, user, mech string) (auth.ScramCredential, bool, error) {
		r, err := sec.GetScramCredential(ctx, controller.GetScramRequest{User: user, Mechanism: mech})
		return r.Credential, r.Found, err
	}
}

// adminAuthorizer answers the /api/ routes' ACL questions with the HTTP
// Guard's authorizer; nil (allow all) without a Guard.
func adminAuthorizer(g *gwhttp.Guard) adminapi.Authorizer {
	if g == nil {
		return nil
	}
	return guardAuthorizer{g}
}

type guardAuthorizer struct{ g *gwhttp.Guard }

func (a guardAuthorizer) Authorize(r *http.Request, op adminapi.Operation, res adminapi.Resource) error {
	rt, name := auth.ResourceCluster, auth.ClusterName
	switch res.Type {
	case adminapi.ResourceTopic:
		rt, name = auth.ResourceTopic, res.Name
	case adminapi.ResourceGroup:
		rt, name = auth.ResourceGroup, res.Name
	}
	if a.g.Authorize(r, string(op), rt, name) {
		return nil
	}
	p := gwhttp.PrincipalFrom(r.Context())
	if p.Method == "" {
		// Anonymous and refused: credentials may help, so say 401.
		return fmt.Errorf("%w: %s on %s %q needs an authenticated principal", adminapi.ErrUnauthenticated, op, rt, name)
	}
	return fmt.Errorf("%w: %s may not %s %s %q", adminapi.ErrForbidden, p.Name, op, rt, name)
}

// internalKafkaOpts secure a process's own Kafka client (the native
// gateway's, for group offsets and producer ids, and the admin API's
// group calls) as listeners.kafka requires: TLS verified against
// tls.ca_file (else the system roots), presenting the node certificate
// when the listener asks for client certificates, as the ring and
// controller clients do; and SASL as auth.bootstrap_user, with the
// password in AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD, since an operator
// already trusts this process with it.
func internalKafkaOpts(cfg config.Config, environ []string) ([]kgo.Opt, error) {
	proto := config.ListenerProtocol(cfg.Listeners.Kafka)
	var opts []kgo.Opt
	if config.IsTLS(proto) {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		switch {
		case presentsNodeCert(cfg):
			var err error
			if tc, err = auth.ClientTLS(auth.TLSOptions{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, CAFile: cfg.TLS.CAFile}); err != nil {
				return nil, fmt.Errorf("listeners.kafka: this process's client certificate: %w", err)
			}
		case cfg.TLS.CAFile != "":
			b, err := os.ReadFile(cfg.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("tls.ca_file: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(b) {
				return nil, fmt.Errorf("tls.ca_file %s holds no PEM certificate", cfg.TLS.CAFile)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if !config.IsSASL(proto) {
		return opts, nil
	}
	user, pass := cfg.Auth.BootstrapUser, envValue(environ, config.EnvBootstrapPassword)
	if user == "" || pass == "" {
		return nil, fmt.Errorf("listeners.kafka is %s: this process's Kafka client authenticates as auth.bootstrap_user with %s, and one is unset", proto, config.EnvBootstrapPassword)
	}
	a := scram.Auth{User: user, Pass: pass}
	switch {
	case slices.Contains(cfg.Auth.SASLMechanisms, auth.ScramSHA512):
		opts = append(opts, kgo.SASL(a.AsSha512Mechanism()))
	case slices.Contains(cfg.Auth.SASLMechanisms, auth.ScramSHA256):
		opts = append(opts, kgo.SASL(a.AsSha256Mechanism()))
	default:
		opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
	}
	return opts, nil
}

// internalRefused adds to an authorization failure of this process's own
// Kafka client (internalKafkaOpts) the principal it acts as, which the
// operator lists in auth.super_users as Kafka's inter-broker principal is
// listed in super.users.
func internalRefused(cfg config.Config, err error) error {
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.GroupAuthorizationFailed) &&
		!errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return err
	}
	return fmt.Errorf("%w: this process's Kafka client acts as %s, which auth.super_users must list", err, internalPrincipal(cfg))
}

// internalPrincipal is the principal internalKafkaOpts's client is on
// listeners.kafka: the bootstrap user with SASL, else the node
// certificate's mapped subject when the listener takes certificates.
func internalPrincipal(cfg config.Config) string {
	switch {
	case config.IsSASL(config.ListenerProtocol(cfg.Listeners.Kafka)):
		return "User:" + cfg.Auth.BootstrapUser
	case !presentsNodeCert(cfg):
		return "User:ANONYMOUS"
	}
	name, err := nodeCertPrincipal(cfg)
	if err != nil {
		return fmt.Sprintf("the principal of tls.cert_file (%v)", err)
	}
	return "User:" + name
}

// presentsNodeCert says whether this process's Kafka client presents
// tls.cert_file to listeners.kafka: when the listener asks for client
// certificates, except that where they are only requested a certificate
// whose key usage excludes client authentication (a server-only one) is
// not sent, since the listener would refuse it rather than take the
// client as anonymous.
func presentsNodeCert(cfg config.Config) bool {
	if !takesClientCerts(cfg, cfg.Listeners.Kafka) || cfg.TLS.CAFile == "" || cfg.TLS.CertFile == "" {
		return false
	}
	if cfg.TLS.ClientAuth == "required" {
		return true
	}
	cert, err := nodeCert(cfg)
	if err != nil || len(cert.ExtKeyUsage) == 0 {
		return true // loading it names the problem; no EKU allows any use
	}
	return slices.ContainsFunc(cert.ExtKeyUsage, func(u x509.ExtKeyUsage) bool {
		return u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny
	})
}

// nodeCert is the first certificate in tls.cert_file.
func nodeCert(cfg config.Config) (*x509.Certificate, error) {
	b, err := os.ReadFile(cfg.TLS.CertFile)
	if err != nil {
		return nil, err
	}
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return nil, fmt.Errorf("%s holds no PEM certificate", cfg.TLS.CertFile)
		}
		if blk.Type == "CERTIFICATE" {
			return x509.ParseCertificate(blk.Bytes)
		}
	}
}

// nodeCertPrincipal maps the subject of tls.cert_file's first certificate
// by tls.principal_mapping_rules.
func nodeCertPrincipal(cfg config.Config) (string, error) {
	cert, err := nodeCert(cfg)
	if err != nil {
		return "", err
	}
	m, err := certPrincipals(cfg) // gateway.go
	if err != nil {
		return "", err
	}
	return m.CertName(cert)
}

// tokenValidator validates the JWTs of OAUTHBEARER and HTTP bearer tokens
// against auth.oauth_*, reading each token's groups from
// auth.oauth_groups_claim for the session it authenticates; nil when no
// JWKS is configured.
func tokenValidator(cfg config.Config) (auth.TokenValidator, error) {
	a := cfg.Auth
	if a.OAuthJWKSFile == "" && a.OAuthJWKSURL == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := auth.NewJWTValidator(ctx, auth.JWTOptions{JWKSFile: a.OAuthJWKSFile, JWKSURL: a.OAuthJWKSURL,
		Issuer: a.OAuthIssuer, Audience: a.OAuthAudience, PrincipalClaim: a.OAuthPrincipalClaim, GroupsClaim: a.OAuthGroupsClaim})
	if err != nil {
		return nil, fmt.Errorf("auth.oauth_jwks: %w", err)
	}
	return v.Validate, nil
}
