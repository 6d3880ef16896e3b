package principal

import (
	"strings"
	"testing"
)

// Cases from Kafka's SslPrincipalMapperTest.
func TestMappingRulesValid(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	} {
		if _, err := ParseSSLMappingRules(r); err != nil {
			t.Errorf("%q: %v", r, err)
		}
	}
}

func TestMappingRulesInvalid(t *testing.T) {
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
		`RULE:^CN=(a)\1$/$1/`, // a back reference: Java-only
	} {
		if _, err := ParseSSLMappingRules(r); err == nil {
			t.Errorf("%q: parsed, want an error", r)
		}
	}
}

func TestMappingRulesSplitting(t *testing.T) {
	for _, c := range []struct{ want, rules string }{
		{"[]", ""},
		{"[DEFAULT]", "DEFAULT"},
		{"[RULE:/]", "RULE://"},
		{"[RULE:/.*]", "RULE:/.*/"},
		{"[RULE:/.*/L]", "RULE:/.*/L"},
		{"[RULE:/, DEFAULT]", "RULE://,DEFAULT"},
		{"[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "},
		{"[RULE:   /     , DEFAULT]", "  RULE:   /     / , DEFAULT  "},
		{"[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "},
		{"[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]", "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  "},
		{"[]", ",   , , ,      , , ,   "},
		{"[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"},
		{"[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "},
		{"[RULE:   /  , DEFAULT]", "     ,  , ,       RULE:   /  /    ,,  ,,,   DEFAULT, ,   "},
		{`[RULE:\/\\\(\)\n\t/\/\/]`, `RULE:\/\\\(\)\n\t/\/\//`},
		{`[RULE:\**\/+/*/L, RULE:\/*\**/**]`, `RULE:\**\/+/*/L,RULE:\/*\**/**/`},
		{
			`[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]`,
			`RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT`,
		},
	} {
		m, err := ParseSSLMappingRules(c.rules)
		if err != nil {
			t.Errorf("%q: %v", c.rules, err)
			continue
		}
		if got := m.String(); got != c.want {
			t.Errorf("%q: split into %s, want %s", c.rules, got, c.want)
		}
	}
}

func TestMappingRulesApply(t *testing.T) {
	rules := strings.Join([]string{
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
		"DEFAULT",
	}, ", ")
	m, err := ParseSSLMappingRules(rules)
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
			t.Errorf("Name(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}
}

func TestMappingRulesCommaWithWhitespace(t *testing.T) {
	m, err := ParseSSLMappingRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Name(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); err != nil || got != `Tkac\, Adam` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestMappingNoRuleApplies(t *testing.T) {
	m, err := ParseSSLMappingRules("RULE:^CN=(.*),OU=x$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Name("CN=a,OU=y"); err == nil || !strings.Contains(err.Error(), "no rules apply to CN=a,OU=y") {
		t.Fatalf("err = %v", err)
	}
}

func TestMappingReplacementSyntax(t *testing.T) {
	for _, c := range []struct{ rule, dn, want string }{
		{"RULE:^CN=(.*)$/$12/", "CN=a", "a2"},                // $12 with one group: group 1, then "2"
		{"RULE:^CN=(.*),O=(.*)$/$3-$1/", "CN=a,O=b", "$3-a"}, // missing group kept literally
		{`RULE:^CN=(.*)$/\$1 is $1/`, "CN=a", "$1 is a"},     // escaped dollar
		{"RULE:^CN=(?<name>.*)$/${name}!/", "CN=a", "a!"},    // named group
		{"RULE:^CN=.*$/x$1/", "CN=a", ""},                    // no groups at all: Java fails
	} {
		m, err := ParseSSLMappingRules(c.rule)
		if err != nil {
			t.Fatalf("%q: %v", c.rule, err)
		}
		got, err := m.Name(c.dn)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: got %q, want an error", c.rule, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q on %q = %q, %v; want %q", c.rule, c.dn, got, err, c.want)
		}
	}
}

func TestNilMapperIsDefault(t *testing.T) {
	var m *SSLMapper
	if got, err := m.Name("CN=x"); err != nil || got != "CN=x" {
		t.Fatalf("got %q, %v", got, err)
	}
}
