package auth

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Kafka's SslPrincipalMapperTest, case by case.

func TestPrincipalMappingRulesKafkaValid(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParsePrincipalMappingRules(r); err != nil {
			t.Errorf("%q: %v", r, err)
		}
	}
}

func TestPrincipalMappingRulesKafkaInvalid(t *testing.T) {
	for _, r := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
		// Beyond Kafka's list: what Kafka accepts but can never work.
		"",            // no rule: every certificate refused
		" , ,",        // likewise
		"RULE:(/x/",   // a pattern that does not compile
		"RULE:a/$1/",  // a group the pattern lacks (Java throws per handshake)
		"RULE:(a)/$/", // a lone $
		`RULE:(a)/\/`, // the replacement's slash is escaped: one slash short
		"RULE:(?<n>a)/${m}/",
	} {
		if m, err := ParsePrincipalMappingRules(r); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, %v; want ErrInvalid", r, m, err)
		}
	}
}

func TestPrincipalMappingKafkaExamples(t *testing.T) {
	m, err := ParsePrincipalMappingRules(strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", "))
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE@SME",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := m.Name(dn); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", dn, got, err, want)
		}
	}
	// testCommaWithWhitespace
	m, err = ParsePrincipalMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Errorf("escaped comma: %q, %v", got, err)
	}
}

func TestPrincipalMappingRulesSplitting(t *testing.T) {
	for rules, want := range map[string]string{
		"DEFAULT":                        "DEFAULT",
		"RULE://":                        "RULE:/",
		"RULE:/.*/":                      "RULE:/.*",
		"RULE:/.*/L":                     "RULE:/.*/L",
		"RULE://,DEFAULT":                "RULE:/, DEFAULT",
		"  RULE:// ,  DEFAULT  ":         "RULE:/, DEFAULT",
		"  RULE:   /     / ,  DEFAULT  ": "RULE:   /     , DEFAULT",
		"  RULE:  /     /U   ,DEFAULT  ": "RULE:  /     /U, DEFAULT",
		"  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ": "RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT",
		",,RULE://,,,DEFAULT,,":                                  "RULE:/, DEFAULT",
		",  , RULE: /   /    ,,,   DEFAULT, ,   ":                "RULE: /   , DEFAULT",
		"     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,":             "RULE:   /  /U, DEFAULT",
		`RULE:\/\\\(\)\n\t/\/\//`:                                `RULE:\/\\\(\)\n\t/\/\/`,
		`RULE:\**\/+/*/L,RULE:\/*\**/**/`:                        `RULE:\**\/+/*/L, RULE:\/*\**/**`,
		`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`: `RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT`,
	} {
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			t.Errorf("%q: %v", rules, err)
			continue
		}
		if got := m.String(); got != want {
			t.Errorf("%q splits into [%s], want [%s]", rules, got, want)
		}
	}
}

func TestPrincipalMappingReplacement(t *testing.T) {
	for _, c := range []struct{ rules, dn, want string }{
		// $2 beyond one group is the literal text, as Kafka makes it.
		{"RULE:^CN=([^,]*),.*$/$1-$2/", "CN=a,O=b", "a-$2"},
		// $12 with two groups is $1 then "2", as Java reads it.
		{"RULE:^CN=([^,]*),O=(.*)$/$12/", "CN=a,O=b", "a2"},
		{`RULE:^CN=([^,]*),O=(.*)$/\$1=${x}/`, "CN=a,O=b", ""},
		{"RULE:^CN=(?P<user>[^,]*),.*$/${user}/U", "CN=ann,O=b", "ANN"},
		{`RULE:^CN=([^,]*),.*$/$1\/$0/`, "CN=a,O=b", "a/CN=a,O=b"},
		// The pattern must match the whole name.
		{"RULE:CN=([^,]*)/$1/,DEFAULT", "CN=a,O=b", "CN=a,O=b"},
	} {
		m, err := ParsePrincipalMappingRules(c.rules)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q parsed", c.rules)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		if got, err := m.Name(c.dn); err != nil || got != c.want {
			t.Errorf("%q on %q: %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
	m, _ := ParsePrincipalMappingRules("RULE:^CN=([^,]*),OU=eng$/$1/")
	if _, err := m.Name("CN=a,OU=ops"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no rule applies: %v", err)
	}
	m, _ = ParsePrincipalMappingRules("RULE:^CN=([^,]*),.*$/$1/")
	if _, err := m.Name("CN=,O=b"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("an empty name: %v", err)
	}
}

func rawName(t *testing.T, n pkix.Name) []byte {
	t.Helper()
	der, err := asn1.Marshal(n.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// TestDistinguishedName writes subjects as Java's X500Principal.getName()
// (RFC 2253) does; the expected strings are Java 17's for these subjects.
func TestDistinguishedName(t *testing.T) {
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	for _, c := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"corp"}}, "CN=alice,OU=eng,O=corp"},
		{pkix.Name{CommonName: "Tkac, Adam", Country: []string{"CZ"}}, `CN=Tkac\, Adam,C=CZ`},
		{pkix.Name{CommonName: " a=b+c#; "}, `CN=\ a\=b\+c\#\;\ `},
		{pkix.Name{CommonName: `q"<>\`}, `CN=q\"\<\>\\`},
		{pkix.Name{CommonName: "bob", ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: "bob@corp"}}},
			"1.2.840.113549.1.9.1=#0c08" + hex.EncodeToString([]byte("bob@corp")) + ",CN=bob"},
		{pkix.Name{CommonName: "srv", Locality: []string{"Paris"}, Province: []string{"IDF"}, StreetAddress: []string{"1 rue"}},
			"CN=srv,STREET=1 rue,L=Paris,ST=IDF"},
		// Java names no serialNumber or postalCode keyword (Go's pkix does).
		{pkix.Name{CommonName: "srv", PostalCode: []string{"75001"}, SerialNumber: "42"}, "2.5.4.5=#13023432,CN=srv,2.5.4.17=#13053735303031"},
		{pkix.Name{CommonName: "Jürgen", Organization: []string{"#lead"}, OrganizationalUnit: []string{"  two  "}}, `CN=Jürgen,OU=\ \ two\ \ ,O=\#lead`},
		{pkix.Name{}, ""},
	} {
		got, err := DistinguishedName(rawName(t, c.name))
		if err != nil || got != c.want {
			t.Errorf("%v: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// A multi-valued RDN, in its encoded order, and a non-string value.
	seq := pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "com"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "eng"}, {Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: "u1"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: 7}},
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DistinguishedName(der); err != nil || got != "CN=#020107,OU=eng+UID=u1,DC=com" {
		t.Errorf("multi-valued: %q, %v", got, err)
	}
	if _, err := DistinguishedName([]byte{0x30, 0x03, 1}); err == nil {
		t.Error("a truncated name parsed")
	}
}

// FuzzPrincipalMappingRules: no rule list or name panics the parser or
// the mapping, a rule list that parses maps DEFAULT's names unchanged, and
// DistinguishedName takes any bytes.
func FuzzPrincipalMappingRules(f *testing.F) {
	f.Add("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	f.Add(`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,DEFAULT`, "x")
	f.Add("RULE:^CN=([^,]*),O=(.*)$/$12${a}\\$/U", "CN=a,O=b")
	f.Add("RULE:(?P<a>.)/$0$1$9${a}/", "")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		_, _ = DistinguishedName([]byte(dn))
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v does not wrap ErrInvalid", rules, err)
			}
			return
		}
		_ = m.String()
		name, err := m.Name(dn)
		if err == nil && name == "" {
			t.Fatalf("%q maps %q to an empty name", rules, dn)
		}
		if err != nil && !errors.Is(err, ErrNoMatchingRule) {
			t.Fatalf("%q on %q: %v", rules, dn, err)
		}
		d, err := ParsePrincipalMappingRules(rules + ",DEFAULT")
		if err == nil && dn != "" {
			if _, err := d.Name(dn); err != nil && !strings.Contains(err.Error(), "empty name") {
				t.Fatalf("%q,DEFAULT on %q: %v", rules, dn, err)
			}
		}
	})
}
