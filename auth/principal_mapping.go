package auth

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNoMatchingRule: no principal mapping rule applies to a certificate's
// distinguished name (Kafka's NoMatchingRule); the client is refused.
var ErrNoMatchingRule = errors.New("no principal mapping rule applies")

// DefaultPrincipalMappingRules is Kafka's ssl.principal.mapping.rules
// default: the principal is the full distinguished name.
const DefaultPrincipalMappingRules = "DEFAULT"

// The grammar is Kafka's (SslPrincipalMapper): rules separated by commas,
// each DEFAULT or RULE:pattern/replacement/ with an optional L or U after
// the last slash; a backslash escapes a slash or a backslash inside the
// pattern and the replacement. The two expressions are Kafka's own, so a
// list splits and parses here as it does there.
const rulePattern = `(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(?:,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// PrincipalMapper maps a client certificate's subject to a principal
// name as Kafka's ssl.principal.mapping.rules do. The nil mapper is
// DEFAULT alone.
type PrincipalMapper struct {
	rules []mappingRule
	text  string
}

type mappingRule struct {
	def        bool
	re, full   *regexp.Regexp // full is re anchored at both ends
	repl       []replPart
	lower, upp bool
	text       string
}

// replPart is a literal (group < 0) or a capture group's text.
type replPart struct {
	lit   string
	group int
}

// ParsePrincipalMappingRules parses Kafka's ssl.principal.mapping.rules.
// Patterns are Go (RE2) regular expressions, which share Java's common
// forms but have no backreferences or lookaround; a pattern that does not
// compile is an error here, not at the first handshake. A replacement is
// Java's: $n is group n, ${name} a named group, \ escapes the next
// character, and $n beyond the pattern's groups is the literal text (as
// Kafka makes it). A list with no rule is refused: it would refuse every
// certificate.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{text: s}
	trimmed := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	for _, sm := range ruleSplitter.FindAllStringSubmatch(trimmed, -1) {
		text := sm[1]
		p := ruleParser.FindStringSubmatchIndex(text)
		if p == nil || p[1] != len(text) {
			end := 0
			if p != nil {
				end = p[1]
			}
			return nil, fmt.Errorf("%w: rule %q: unmatched %q (want DEFAULT or RULE:pattern/replacement/ with an optional L or U)", ErrInvalid, text, text[end:])
		}
		group := func(i int) (string, bool) {
			if p[2*i] < 0 {
				return "", false
			}
			return text[p[2*i]:p[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, mappingRule{def: true, text: text})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // an empty rule, which Kafka ignores
		}
		repl, _ := group(3)
		lu, _ := group(4)
		r, err := newMappingRule(pat, repl, lu)
		if err != nil {
			return nil, fmt.Errorf("%w: rule %q: %v", ErrInvalid, text, err)
		}
		r.text = text
		m.rules = append(m.rules, r)
	}
	if len(m.rules) == 0 {
		return nil, fmt.Errorf("%w: %q holds no rule, so no certificate would map to a principal (DEFAULT is the full distinguished name)", ErrInvalid, s)
	}
	return m, nil
}

func newMappingRule(pat, repl, lu string) (mappingRule, error) {
	re, err := regexp.Compile(pat)
	if err != nil {
		return mappingRule{}, err
	}
	full, err := regexp.Compile(`^(?:` + pat + `)$`)
	if err != nil {
		return mappingRule{}, err
	}
	parts, err := parseReplacement(repl, re)
	if err != nil {
		return mappingRule{}, err
	}
	return mappingRule{re: re, full: full, repl: parts, lower: lu == "L", upp: lu == "U"}, nil
}

// parseReplacement reads a replacement as java.util.regex.Matcher does,
// after Kafka's treatment of references to missing groups as literals.
func parseReplacement(repl string, re *regexp.Regexp) ([]replPart, error) {
	var parts []replPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replPart{lit: lit.String(), group: -1})
			lit.Reset()
		}
	}
	n := re.NumSubexp()
	for i := 0; i < len(repl); i++ {
		switch c := repl[i]; c {
		case '\\':
			if i++; i == len(repl) {
				return nil, errors.New("replacement ends in a lone backslash")
			}
			lit.WriteByte(repl[i])
		case '$':
			if i++; i == len(repl) {
				return nil, errors.New("replacement ends in a lone $")
			}
			if repl[i] == '{' {
				end := strings.IndexByte(repl[i:], '}')
				if end < 0 {
					return nil, errors.New("replacement has ${ without }")
				}
				name := repl[i+1 : i+end]
				g := re.SubexpIndex(name)
				if name == "" || g < 0 {
					return nil, fmt.Errorf("replacement names group %q, which the pattern lacks", name)
				}
				flush()
				parts = append(parts, replPart{group: g})
				i += end
				continue
			}
			d := int(repl[i]) - '0'
			switch {
			case d < 0 || d > 9:
				return nil, fmt.Errorf("replacement has $ before %q, not a group number", repl[i])
			case d > n && n == 0:
				return nil, fmt.Errorf("replacement refers to group %d, but the pattern has no group", d)
			case d > n:
				lit.WriteString(repl[i-1 : i+1]) // Kafka: a literal $d
				continue
			}
			for i+1 < len(repl) && repl[i+1] >= '0' && repl[i+1] <= '9' && d*10+int(repl[i+1]-'0') <= n {
				d = d*10 + int(repl[i+1]-'0')
				i++
			}
			flush()
			parts = append(parts, replPart{group: d})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

// apply is the rule's name for dn, false when it does not apply.
func (r *mappingRule) apply(dn string) (string, bool) {
	if r.def {
		return dn, true
	}
	if !r.full.MatchString(dn) {
		return "", false
	}
	// Kafka replaces every match of the pattern in the name (replaceAll).
	var b strings.Builder
	last := 0
	for _, m := range r.re.FindAllStringSubmatchIndex(dn, -1) {
		b.WriteString(dn[last:m[0]])
		for _, p := range r.repl {
			if p.group < 0 {
				b.WriteString(p.lit)
			} else if m[2*p.group] >= 0 {
				b.WriteString(dn[m[2*p.group]:m[2*p.group+1]])
			}
		}
		last = m[1]
	}
	b.WriteString(dn[last:])
	out := b.String()
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upp:
		out = strings.ToUpper(out)
	}
	return out, true
}

// Name maps a distinguished name (RFC 2253, as DistinguishedName writes
// it) to a principal name by the first rule that applies.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	if m == nil {
		return dn, nil
	}
	for i := range m.rules {
		if name, ok := m.rules[i].apply(dn); ok {
			if name == "" {
				return "", fmt.Errorf("%w: rule %q maps %q to an empty name", ErrNoMatchingRule, m.rules[i].text, dn)
			}
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: %q, rules %q", ErrNoMatchingRule, dn, m.text)
}

// CertName is the principal name of a verified client certificate: its
// subject's distinguished name, mapped.
func (m *PrincipalMapper) CertName(cert *x509.Certificate) (string, error) {
	dn, err := DistinguishedName(cert.RawSubject)
	if err != nil {
		return "", err
	}
	if dn == "" {
		return "", fmt.Errorf("%w: the certificate's subject is empty", ErrNoMatchingRule)
	}
	return m.Name(dn)
}

// String lists the rules as Kafka's SslPrincipalMapper prints them.
func (m *PrincipalMapper) String() string {
	if m == nil {
		return DefaultPrincipalMappingRules
	}
	s := make([]string, len(m.rules))
	for i, r := range m.rules {
		if r.def {
			s[i] = "DEFAULT"
			continue
		}
		s[i] = "RULE:" + r.text[len("RULE:"):strings.LastIndexByte(r.text, '/')]
		if r.lower {
			s[i] += "/L"
		} else if r.upp {
			s[i] += "/U"
		}
	}
	return strings.Join(s, ", ")
}

// rfc2253Keywords are the attribute types Java's X500Principal.getName()
// writes by name; it writes every other type as its dotted OID with the
// value's DER in hex, and so does DistinguishedName, so that a DN reads
// here as a Kafka broker reads it.
var rfc2253Keywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.9": "STREET",
	"2.5.4.10": "O", "2.5.4.11": "OU",
	"0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

type rawATV struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rawRDNSET is one relative distinguished name; encoding/asn1 reads a
// type whose name ends in SET as a SET OF.
type rawRDNSET []rawATV

// DistinguishedName writes a DER-encoded X.500 name (a certificate's
// RawSubject) in RFC 2253 form as Java's X500Principal.getName() does,
// which is what Kafka's principal mapping rules match: the most specific
// RDN first, no spaces after commas, and ",=+<>#;\"\\" escaped with a
// backslash.
func DistinguishedName(der []byte) (string, error) {
	var seq []rawRDNSET
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil || len(rest) > 0 {
		return "", fmt.Errorf("%w: the certificate's subject does not parse: %v", ErrInvalid, err)
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i < len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeATV(&b, atv)
		}
	}
	return b.String(), nil
}

func writeATV(b *strings.Builder, atv rawATV) {
	kw, named := rfc2253Keywords[atv.Type.String()]
	if !named {
		kw = atv.Type.String()
	}
	b.WriteString(kw)
	b.WriteByte('=')
	s, isString := derString(atv.Value)
	if !named || !isString {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
		return
	}
	var v strings.Builder
	for _, r := range s {
		switch {
		case strings.ContainsRune(",=+<>#;\"\\", r):
			v.WriteByte('\\')
			v.WriteRune(r)
		case r == 0:
			v.WriteString(`\00`)
		default:
			v.WriteRune(r)
		}
	}
	esc := v.String()
	lead := len(esc) - len(strings.TrimLeft(esc, " \r"))
	trail := len(strings.TrimRight(esc, " \r"))
	for i := 0; i < len(esc); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(esc[i])
	}
}

// derString decodes the string types Java writes as text.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, 27: // 27: GeneralString
		return strings.ToValidUTF8(string(v.Bytes), string(utf8.RuneError)), true
	case asn1.TagT61String: // read as Latin-1, as Java does
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}
