package compat

import (
	"os"
	"testing"

	"github.com/kbroker/kbroker/internal/testsupport"
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
	if os.Getenv("KBROKER_SEEDS") != "" {
		return m.Run()
	}
	return testsupport.RunWithBuiltKbroker("../cmd/kbroker", func(bin string) int {
		kbrokerBin = bin
		return m.Run()
	})
}
