// Package fuzzseed writes seed corpora for go test -fuzz into a package's
// testdata/fuzz/<FuzzName>/ in the "go test fuzz v1" file format. Fuzz
// tests call Write from a test that runs only when KBROKER_WRITE_SEEDS=1,
// so the corpus is regenerated from the seeds in code, never by hand.
package fuzzseed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Enabled reports whether seeds should be (re)written.
func Enabled() bool { return os.Getenv("KBROKER_WRITE_SEEDS") == "1" }

// Write stores one corpus entry per seed; each seed is the fuzz function's
// arguments, of types []byte, string, int, int16, int64 or bool.
func Write(t *testing.T, fuzzName string, seeds [][]any) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", fuzzName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range seeds {
		body := encode(t, args)
		sum := sha256.Sum256([]byte(body))
		name := filepath.Join(dir, "seed-"+hex.EncodeToString(sum[:8]))
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func encode(t *testing.T, args []any) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q)\n", v)
		case string:
			fmt.Fprintf(&b, "string(%q)\n", v)
		case int:
			fmt.Fprintf(&b, "int(%d)\n", v)
		case int16:
			fmt.Fprintf(&b, "int16(%d)\n", v)
		case int64:
			fmt.Fprintf(&b, "int64(%d)\n", v)
		case bool:
			fmt.Fprintf(&b, "bool(%v)\n", v)
		default:
			t.Fatalf("fuzzseed: unsupported argument type %T", a)
		}
	}
	return b.String()
}
