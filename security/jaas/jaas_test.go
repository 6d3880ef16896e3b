package jaas

import (
	"maps"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/internal/fuzzseed"
)

func TestParsePlainServerConfig(t *testing.T) {
	c, err := Parse(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Module(PlainLoginModule)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"}
	if e.Flag != Required || !maps.Equal(e.Options, want) {
		t.Fatalf("got %+v", e)
	}
}

// Cases in the spirit of Kafka's JaasContextTest.
func TestParseTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{`M required;`, map[string]string{}},
		{`M REQUIRED a=b;`, map[string]string{"a": "b"}},
		{`M optional a="b c" d='e f';`, map[string]string{"a": "b c", "d": "e f"}},
		{`M sufficient a="x\"y" b="back\\slash" c='it\'s';`, map[string]string{"a": `x"y`, "b": `back\slash`, "c": "it's"}},
		{`M requisite a="\n\t\101\0" b="\q";`, map[string]string{"a": "\n\tA\x00", "b": "q"}},
		{`M required a="\477";`, map[string]string{"a": "\x277"}}, // \47 then '7': three digits only up to \377
		{`M required a=$x_y-z.1 b=_v;`, map[string]string{"a": "$x_y-z.1", "b": "_v"}},
		{"M required // comment a=b\n c=d /* x=y */ e=f;", map[string]string{"c": "d", "e": "f"}},
		{"M required a=\"unterminated\n;", map[string]string{"a": "unterminated"}},
		{`M required a="p@ss:w/ord=;";`, map[string]string{"a": "p@ss:w/ord=;"}},
		{`M required a="ünï" b=ünï;`, map[string]string{"a": "ünï", "b": "ünï"}},
		{`"quoted.Module" required a=b;`, map[string]string{"a": "b"}},
	} {
		cfg, err := Parse(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if len(cfg) != 1 || !maps.Equal(cfg[0].Options, c.want) {
			t.Errorf("%q: got %+v, want %v", c.in, cfg, c.want)
		}
	}
}

func TestParseMultipleEntries(t *testing.T) {
	cfg, err := Parse(`A required a=b; B optional c=d;`)
	if err != nil || len(cfg) != 2 || cfg[1].LoginModule != "B" || cfg[1].Flag != Optional {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	if _, err := cfg.Module("A"); err == nil {
		t.Fatal("two entries accepted as one module")
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		``:                         "login module not specified",
		`  /* nothing */ `:         "login module not specified",
		`M`:                        "control flag not specified",
		`M mandatory;`:             "invalid login module control flag 'mandatory'",
		`M required a="secret"`:    "not terminated by semi-colon",
		`M required a;`:            "value not specified for key 'a'",
		`M required pw=123;`:       "value not specified for key 'pw'",
		`M required pw=;`:          "value not specified for key 'pw'",
		`M required user_a@b="x";`: "value not specified for key 'user_a'",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestErrorsDoNotCarryValues(t *testing.T) {
	_, err := Parse(`M required password="hunter2" broken`)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

func TestModuleMismatch(t *testing.T) {
	cfg, err := Parse(`org.example.Other required;`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Module(PlainLoginModule); err == nil {
		t.Fatal("wrong module accepted")
	}
}

var jaasSeeds = []string{
	`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="x" user_admin="x";`,
	`M optional a='b' /* c */ d="\101\n";`,
	"M required a=\"x\n// c\n;",
	`M required a=-1.5 b=.;`,
	`A required a=b; B optional c=d;`,
}

func TestWriteJAASSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	var seeds [][]any
	for _, s := range jaasSeeds {
		seeds = append(seeds, []any{s})
	}
	fuzzseed.Write(t, "FuzzParse", seeds)
}

func FuzzParse(f *testing.F) {
	for _, s := range jaasSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := Parse(s)
		if err == nil && len(cfg) == 0 {
			t.Fatal("no entries and no error")
		}
	})
}
