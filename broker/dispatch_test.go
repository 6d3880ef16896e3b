package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiHeader is the first line of an api_NN_*.go file's header comment:
// "// Name (key N), vA-vB" or "// Name (key N), vA".
var apiHeader = regexp.MustCompile(`(?m)^// (\w+) \(key (\d+)\), v(\d+)(?:-v(\d+))?\b`)

// The dispatch table is the one source of the versions served (ApiVersions
// is built from it); each API file's header says them again for its reader.
// This keeps the two in agreement, and the table and the files one to one.
func TestDispatchTableMatchesAPIFileHeaders(t *testing.T) {
	files, err := filepath.Glob("api_*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no api files: %v", err)
	}
	table := map[int16]api{}
	for _, a := range (&Broker{}).apis() {
		table[a.key] = a
	}
	seen := map[int16]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue // an API's tests, not its handler
		}
		key, lo, hi := parseAPIHeader(t, f)
		if prev, ok := seen[key]; ok {
			t.Errorf("key %d has two files: %s and %s", key, prev, f)
		}
		seen[key] = f
		a, ok := table[key]
		if !ok {
			t.Errorf("%s: key %d is not in the dispatch table", f, key)
			continue
		}
		if a.minVersion != lo || a.maxVersion != hi {
			t.Errorf("%s says v%d-v%d, the dispatch table serves v%d-v%d", f, lo, hi, a.minVersion, a.maxVersion)
		}
	}
	for key := range table {
		if _, ok := seen[key]; !ok {
			t.Errorf("dispatch table key %d (%s) has no api_%02d_*.go file", key, kmsg.NameForKey(key), key)
		}
	}
}

// parseAPIHeader reads a file's key and version range, and checks that the
// file name agrees with the key.
func parseAPIHeader(t *testing.T, file string) (key, lo, hi int16) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := apiHeader.FindSubmatch(src)
	if m == nil {
		t.Fatalf("%s: no header line like \"// Name (key N), vA-vB\"", file)
	}
	num := func(b []byte) int16 {
		n, err := strconv.ParseInt(string(b), 10, 16)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return int16(n)
	}
	key, lo, hi = num(m[2]), num(m[3]), num(m[3])
	if len(m[4]) > 0 {
		hi = num(m[4])
	}
	if !strings.HasPrefix(file, fmt.Sprintf("api_%02d_", key)) {
		t.Errorf("%s holds key %d (%s)", file, key, m[1])
	}
	return key, lo, hi
}
