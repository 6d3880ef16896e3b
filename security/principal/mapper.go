package principal

import (
	"fmt"
	"regexp"
	"strings"
)

// Kafka's SslPrincipalMapper grammar, unchanged: RE2 accepts it and picks
// the same leftmost-first matches as java.util.regex for it.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

// DefaultMappingRules is ssl.principal.mapping.rules' default.
const DefaultMappingRules = "DEFAULT"

// SSLMapper is Kafka's SslPrincipalMapper: ssl.principal.mapping.rules.
// It is immutable and safe for concurrent use.
type SSLMapper struct {
	rules []mappingRule
	text  string
}

type mappingRule struct {
	isDefault   bool
	source      string         // the pattern as written, for String
	match       *regexp.Regexp // the pattern anchored at both ends (Java's matches())
	find        *regexp.Regexp // the pattern as written (Java's replaceAll)
	replacement string
	lower       bool
	upper       bool
}

// ParseSSLMappingRules parses ssl.principal.mapping.rules: a comma-separated
// list of DEFAULT and RULE:pattern/replacement/[LU]. Pass
// DefaultMappingRules when the property is not set; an empty string means
// no rules (every certificate then fails, as in Kafka).
func ParseSSLMappingRules(rules string) (*SSLMapper, error) {
	splitter := regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	parser := regexp.MustCompile(`^(?:` + rulePattern + `)`)
	m := &SSLMapper{text: rules}
	for _, found := range splitter.FindAllStringSubmatch(strings.TrimSpace(rules), -1) {
		r, ok, err := parseMappingRule(parser, found[1])
		if err != nil {
			return nil, err
		}
		if ok {
			m.rules = append(m.rules, r)
		}
	}
	return m, nil
}

func parseMappingRule(parser *regexp.Regexp, rule string) (mappingRule, bool, error) {
	g := parser.FindStringSubmatchIndex(rule)
	if g == nil {
		return mappingRule{}, false, fmt.Errorf("ssl.principal.mapping.rules: invalid rule: %s", rule)
	}
	if g[1] != len(rule) {
		return mappingRule{}, false, fmt.Errorf("ssl.principal.mapping.rules: invalid rule: `%s`, unmatched substring: `%s`", rule, rule[g[1]:])
	}
	group := func(i int) (string, bool) {
		if g[2*i] < 0 {
			return "", false
		}
		return rule[g[2*i]:g[2*i+1]], true
	}
	if _, ok := group(1); ok {
		return mappingRule{isDefault: true}, true, nil
	}
	pattern, ok := group(2)
	if !ok {
		return mappingRule{}, false, nil // an empty rule is ignored
	}
	replacement, _ := group(4)
	flag, _ := group(6)
	return compileMappingRule(pattern, replacement, flag)
}

func compileMappingRule(pattern, replacement, flag string) (mappingRule, bool, error) {
	find, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, false, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %v", pattern, err)
	}
	return mappingRule{
		source:      pattern,
		match:       regexp.MustCompile(`^(?:` + pattern + `)$`),
		find:        find,
		replacement: replacement,
		lower:       flag == "L",
		upper:       flag == "U",
	}, true, nil
}

// Name maps a distinguished name to a principal name with the first rule
// that applies. A nil mapper applies DEFAULT.
func (m *SSLMapper) Name(dn string) (string, error) {
	if m == nil {
		return dn, nil
	}
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("principal: no rules apply to %s, rules %s", dn, m)
}

func (r mappingRule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.match.MatchString(dn) {
		return "", false, nil
	}
	out, err := javaReplaceAll(r.find, dn, escapeMissingGroups(r.replacement, r.find.NumSubexp()))
	if err != nil {
		return "", false, fmt.Errorf("principal: rule %s: %w", r, err)
	}
	switch {
	case r.lower:
		out = strings.ToLower(out)
	case r.upper:
		out = strings.ToUpper(out)
	}
	return out, true, nil
}

// String lists the rules as Kafka prints them.
func (m *SSLMapper) String() string {
	parts := make([]string, len(m.rules))
	for i, r := range m.rules {
		parts[i] = r.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (r mappingRule) String() string {
	if r.isDefault {
		return "DEFAULT"
	}
	s := "RULE:" + r.source + "/" + r.replacement
	switch {
	case r.lower:
		s += "/L"
	case r.upper:
		s += "/U"
	}
	return s
}
