package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitListener(t *testing.T) {
	for _, tc := range []struct{ in, proto, addr string }{
		{"127.0.0.1:9092", Plaintext, "127.0.0.1:9092"},
		{"SASL_SSL://127.0.0.1:9093", SASLSSL, "127.0.0.1:9093"},
		{"sasl_plaintext://:9092", SASLPlaintext, ":9092"},
		{"SSL://[::1]:9093", SSL, "[::1]:9093"},
		{"PLAINTEXT://h:1", Plaintext, "h:1"},
	} {
		p, a, err := SplitListener(tc.in)
		if err != nil || p != tc.proto || a != tc.addr {
			t.Errorf("SplitListener(%q) = %q %q %v, want %q %q", tc.in, p, a, err, tc.proto, tc.addr)
		}
		if n, na := Network(tc.in); n != "tcp" || na != tc.addr {
			t.Errorf("Network(%q) = %s %s", tc.in, n, na)
		}
	}
	if _, _, err := SplitListener("HTTPS://h:1"); err == nil || !strings.Contains(err.Error(), `"HTTPS"`) {
		t.Errorf("unknown protocol: err = %v", err)
	}
}

// TestSecureExample loads the README's secure.toml.
func TestSecureExample(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{File: writeFile(t, `
[listeners]
kafka = "SASL_SSL://127.0.0.1:9093"
[tls]
cert_file = "server.pem"
key_file = "server-key.pem"
ca_file = "ca.pem"
[auth]
sasl_mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]
authorizer = true
super_users = ["User:admin"]
bootstrap_user = "admin"
`)})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if ListenerProtocol(c.Listeners.Kafka) != SASLSSL || !c.Auth.Authorizer || c.Auth.BootstrapUser != "admin" ||
		!reflect.DeepEqual(c.Auth.SuperUsers, []string{"User:admin"}) || c.TLS.CAFile != "ca.pem" {
		t.Errorf("config = %+v %+v %+v", c.Listeners, c.TLS, c.Auth)
	}
}

func TestListKeysFromEnvAndFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Env: []string{"AEROSTREAM_AUTH_SASL_MECHANISMS=PLAIN, SCRAM-SHA-512", "AEROSTREAM_AUTH_SUPER_USERS=User:a,User:b"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Auth.SASLMechanisms; !reflect.DeepEqual(got, []string{"PLAIN", "SCRAM-SHA-512"}) {
		t.Errorf("sasl_mechanisms = %q", got)
	}
	if got := l.Config.Auth.SuperUsers; !reflect.DeepEqual(got, []string{"User:a", "User:b"}) {
		t.Errorf("super_users = %q", got)
	}
	k, _ := Lookup("auth.sasl_mechanisms")
	if got := k.TOMLDefault(); got != `["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]` {
		t.Errorf("TOMLDefault = %s", got)
	}
}

// TestListKeysWithCommas: as in Kafka's super.users, semicolons separate a
// list whose items are certificate DNs, which hold commas.
func TestListKeysWithCommas(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Env: []string{"AEROSTREAM_AUTH_SUPER_USERS=User:CN=alice,OU=eng,O=corp; User:admin"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"User:CN=alice,OU=eng,O=corp", "User:admin"}
	if got := l.Config.Auth.SuperUsers; !reflect.DeepEqual(got, want) {
		t.Fatalf("super_users = %q, want %q", got, want)
	}
	k, _ := Lookup("auth.super_users")
	shown := k.Get(&l.Config)
	if shown != "User:CN=alice,OU=eng,O=corp;User:admin" {
		t.Errorf("Get = %q", shown)
	}
	var c Config
	if err := k.set(&c, shown); err != nil || !reflect.DeepEqual(c.Auth.SuperUsers, want) {
		t.Errorf("set(Get) = %q, %v", c.Auth.SuperUsers, err)
	}
}

func TestBadSecurityValues(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct{ name, file, want string }{
		{"protocol", "[listeners]\nkafka = \"TLS://h:1\"\n", `unknown security protocol "TLS"`},
		{"tls without cert", "[listeners]\nkafka = \"SSL://h:1\"\n", "tls.cert_file"},
		{"sasl on http", "[listeners]\nhttp = \"SASL_SSL://h:1\"\n[tls]\ncert_file=\"c\"\nkey_file=\"k\"\n", "listeners.http"},
		{"client auth", "[tls]\nclient_auth = \"always\"\n", "tls.client_auth"},
		{"client auth without ca", "[listeners]\nkafka = \"SSL://h:1\"\n[tls]\ncert_file=\"c\"\nkey_file=\"k\"\nclient_auth = \"requested\"\n", `is required by tls.client_auth = "requested"`},
		{"cipher suite", "[tls]\ncipher_suites = [\"TLS_RSA_WITH_RC4_128_SHA\"]\n", `unknown or insecure cipher suite "TLS_RSA_WITH_RC4_128_SHA"`},
		{"protocol", "[tls]\nenabled_protocols = [\"TLSv1\"]\n", "tls.enabled_protocols"},
		{"suites and protocols", "[tls]\ncipher_suites = [\"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\"]\nenabled_protocols = [\"TLSv1.3\"]\n", "no suite named is usable"},
		{"mapping rule", "[tls]\nprincipal_mapping_rules = 'RULE:^CN=(.*?),OU=eng$/$1/X,DEFAULT'\n", `invalid value: rule "RULE:^CN=(.*?),OU=eng$/$1/X": unmatched "X"`},
		{"mapping pattern", "[tls]\nprincipal_mapping_rules = 'RULE:^CN=(?=x)/$1/'\n", `rule "RULE:^CN=(?=x)/$1/"`},
		{"no mapping rule", "[tls]\nprincipal_mapping_rules = ''\n", "tls.principal_mapping_rules"},
		{"mechanism", "[auth]\nsasl_mechanisms = [\"GSSAPI\"]\n", `unknown mechanism "GSSAPI"`},
		{"no mechanism", "[listeners]\nkafka = \"SASL_PLAINTEXT://h:1\"\n[auth]\nsasl_mechanisms = []\n", "at least one mechanism"},
		{"super user", "[auth]\nsuper_users = [\"admin\"]\n", `"admin" is not a principal`},
		{"reauth", "[auth]\nconnections_max_reauth_ms = -1\n", "auth.connections_max_reauth_ms"},
		{"prefix on ring", "[listeners]\nring = \"SSL://h:1\"\n", "listeners.ring"},
		{"http authentication", "[auth]\nhttp_authentication = \"always\"\n", "auth.http_authentication"},
		{"open path", "[auth]\nhttp_open_paths = [\"metrics\"]\n", `"metrics" is not an absolute path`},
		{"oauth without jwks", "[auth]\nsasl_mechanisms = [\"OAUTHBEARER\"]\n", "OAUTHBEARER needs auth.oauth_jwks_file"},
		{"two jwks", "[auth]\noauth_jwks_file = \"f\"\noauth_jwks_url = \"http://h/jwks\"\n", "not both"},
		{"no principal claim", "[auth]\noauth_principal_claim = \"\"\n", "auth.oauth_principal_claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Options{File: writeFile(t, tc.file)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrConfig) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestHTTPAuthRequired: auto requires HTTP authentication once the
// authorizer is on or the Kafka listener uses SASL; the explicit modes win.
func TestHTTPAuthRequired(t *testing.T) {
	for _, tc := range []struct {
		mode, kafka string
		authorizer  bool
		want        bool
	}{
		{HTTPAuthAuto, ":9092", false, false},
		{HTTPAuthAuto, ":9092", true, true},
		{HTTPAuthAuto, "SASL_PLAINTEXT://:9092", false, true},
		{HTTPAuthRequired, ":9092", false, true},
		{HTTPAuthOptional, "SASL_SSL://:9092", true, false},
	} {
		c := Default()
		c.Auth.HTTPAuthentication, c.Listeners.Kafka, c.Auth.Authorizer = tc.mode, tc.kafka, tc.authorizer
		if got := c.HTTPAuthRequired(); got != tc.want {
			t.Errorf("%+v: HTTPAuthRequired = %v, want %v", tc, got, tc.want)
		}
	}
}

// TestControllerSecretRequired: once security is on, a process that
// serves or reaches the controller needs auth.controller_secret_file,
// whatever the listener: loopback and SSL:// too. Without security
// nothing is required.
func TestControllerSecretRequired(t *testing.T) {
	for _, tc := range []struct {
		controller string
		secure     func(*Config)
		refused    bool
	}{
		{"127.0.0.1:8001", func(c *Config) { c.Auth.Authorizer = true }, true},
		{"localhost:8001", func(c *Config) { c.Listeners.Kafka = "SASL_SSL://127.0.0.1:9093" }, true},
		{"[::1]:8001", func(c *Config) { c.Listeners.Native = "SASL_PLAINTEXT://127.0.0.1:9091" }, true},
		{"SSL://0.0.0.0:8001", func(c *Config) { c.Auth.HTTPAuthentication = HTTPAuthRequired }, true},
		{"0.0.0.0:8001", func(c *Config) {}, false},
		{"127.0.0.1:8001", func(c *Config) {
			c.Auth.Authorizer, c.Auth.ControllerSecretFile = true, "/etc/aerostream/cluster-secret"
		}, false},
	} {
		c := Default()
		c.Listeners.Controller = tc.controller
		tc.secure(&c)
		err := c.CheckControllerSecret()
		if (err != nil) != tc.refused {
			t.Errorf("%s (security on: %v): %v, want refused %v", tc.controller, c.SecurityOn(), err, tc.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "auth.controller_secret_file") {
			t.Errorf("%s: the refusal %q does not name the key to set", tc.controller, err)
		}
	}
}

// TestControllerSecretAsTheChartRenders: the [listeners] and [auth] of
// the Helm chart's aerostream.toml with sasl.enabled and the authorizer
// (deploy/helm/aerostream/templates/configmap.yaml) start with the
// cluster secret the chart gives every pod, and are refused without it.
func TestControllerSecretAsTheChartRenders(t *testing.T) {
	const chart = `
[listeners]
kafka = "SASL_PLAINTEXT://0.0.0.0:9092"
native = "0.0.0.0:9091"
http = "0.0.0.0:9001"
controller = "0.0.0.0:8001"
ring = "0.0.0.0:7001"
schema_registry = ""

[auth]
sasl_mechanisms = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
authorizer = true
super_users = ["User:admin"]
bootstrap_user = "admin"
`
	for _, tc := range []struct {
		secret  string
		refused bool
	}{
		{"controller_secret_file = \"/etc/aerostream/cluster/cluster-secret\"\n", false},
		{"", true},
	} {
		p := filepath.Join(t.TempDir(), "aerostream.toml")
		if err := os.WriteFile(p, []byte(chart+tc.secret), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := Load(Options{File: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Config.CheckControllerSecret(); (err != nil) != tc.refused {
			t.Errorf("%q: CheckControllerSecret = %v, want refused %v", tc.secret, err, tc.refused)
		}
	}
}

// TestTLSPolicyKeys: Kafka's ssl.cipher.suites and ssl.enabled.protocols
// values, comma-separated as Kafka writes them, are accepted as they are.
func TestTLSPolicyKeys(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := Load(Options{Env: []string{
		"AEROSTREAM_TLS_CIPHER_SUITES=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"AEROSTREAM_TLS_ENABLED_PROTOCOLS=TLSv1.2",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.TLS.CipherSuites; !reflect.DeepEqual(got, []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}) {
		t.Errorf("cipher_suites = %q", got)
	}
	if got := l.Config.TLS.EnabledProtocols; !reflect.DeepEqual(got, []string{"TLSv1.2"}) {
		t.Errorf("enabled_protocols = %q", got)
	}
}
