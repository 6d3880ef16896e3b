package properties

import (
	"maps"
	"strings"
	"testing"
)

// The full grammar is tested through config's codec (config/properties_test.go);
// these are the cases meta.properties and errors need.
func TestParse(t *testing.T) {
	got, err := Parse([]byte("#\n#Tue Jan 01 00:00:00 UTC 2025\nversion=1\nnode.id=3\r\ncluster.id = abc_-DEF\ndirectory.id=x\\:y\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": "1", "node.id": "3", "cluster.id": "abc_-DEF", "directory.id": "x:y"}
	if !maps.Equal(got, want) {
		t.Fatalf("Parse = %q, want %q", got, want)
	}
}

func TestParseMalformedEscape(t *testing.T) {
	_, err := Parse([]byte("a=1\nb=\\u00zz\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want one naming line 2", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("version=1\nnode.id=1\ncluster.id=x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		props, err := Parse(b)
		if err != nil {
			if props != nil || !strings.HasPrefix(err.Error(), "line ") {
				t.Fatalf("error %v with %d properties", err, len(props))
			}
			return
		}
		// A file is a set of lines: one more empty line changes nothing.
		again, err := Parse(append(append([]byte(nil), b...), '\n'))
		if err != nil || !maps.Equal(props, again) {
			t.Fatalf("trailing newline changed %q into %q (%v)", props, again, err)
		}
	})
}
