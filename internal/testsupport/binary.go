package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildKbroker builds the kbroker binary from the package at cmdDir (a path
// relative to the test's package, e.g. "../cmd/kbroker") into a new temp
// dir, for a TestMain whose $KBROKER_BIN is unset. cleanup removes it. The
// go command's output goes to the test's output.
func BuildKbroker(cmdDir string) (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "kbroker-test-bin-")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "kbroker")
	build := exec.Command("go", "build", "-o", bin, cmdDir)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building kbroker: %w", err)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}
