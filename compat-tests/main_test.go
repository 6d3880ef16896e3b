package compat

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kbrokerBin is the binary under test: $KBROKER_BIN, or built once here.
var kbrokerBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if bin := os.Getenv("KBROKER_BIN"); bin != "" {
		kbrokerBin = bin
		return m.Run()
	}
	if os.Getenv("KBROKER_SEEDS") == "" {
		dir, err := os.MkdirTemp("", "kbroker-compat-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		kbrokerBin = filepath.Join(dir, "kbroker")
		build := exec.Command("go", "build", "-o", kbrokerBin, "../cmd/kbroker")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building kbroker:", err)
			return 1
		}
	}
	return m.Run()
}
