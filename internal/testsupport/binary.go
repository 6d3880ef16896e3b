package testsupport

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RunWithBuiltKbroker builds the kbroker binary from the package at cmdDir
// (relative to the test's package, e.g. "../cmd/kbroker") into a new temp
// dir, calls run with its path and removes it afterwards: a TestMain's
// answer when $KBROKER_BIN is unset. A failed build is printed and is exit
// code 1. The go command's output goes to the test's output.
func RunWithBuiltKbroker(cmdDir string, run func(bin string) int) int {
	dir, err := os.MkdirTemp("", "kbroker-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "kbroker")
	build := exec.Command("go", "build", "-o", bin, cmdDir)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building kbroker:", err)
		return 1
	}
	return run(bin)
}
