package sysmon

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestEnviron(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []string
		want    []string
		changed bool
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + Setting}, true},
		{"empty GODEBUG", []string{"GODEBUG="}, []string{"GODEBUG=" + Setting}, true},
		{"other settings kept", []string{"GODEBUG=madvdontneed=1", "B=2"}, []string{"GODEBUG=madvdontneed=1," + Setting, "B=2"}, true},
		{"schedtrace set already", []string{"GODEBUG=gctrace=1,schedtrace=1000"}, []string{"GODEBUG=gctrace=1,schedtrace=1000"}, false},
		{"opted out", []string{OptOut + "=1"}, []string{OptOut + "=1"}, false},
	} {
		got, changed := Environ(c.in)
		if changed != c.changed || !slices.Equal(got, c.want) {
			t.Errorf("%s: Environ(%q) = %q, %v; want %q, %v", c.name, c.in, got, changed, c.want, c.changed)
		}
	}
	in := []string{"GODEBUG=x=1"}
	Environ(in)
	if in[0] != "GODEBUG=x=1" {
		t.Errorf("Environ changed its argument: %q", in)
	}
}

// The process re-executes itself once with the setting, and only once:
// the child (this test binary, run with helperEnv) reports its GODEBUG.
const helperEnv = "SYSMON_TEST_HELPER"

func TestKeepAwakeReexecutesOnce(t *testing.T) {
	if os.Getenv(helperEnv) == "1" {
		KeepAwake()
		os.Stdout.WriteString("GODEBUG=" + os.Getenv("GODEBUG") + "\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestKeepAwakeReexecutesOnce$")
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GODEBUG=") || strings.HasPrefix(kv, OptOut+"=")
	}), helperEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "GODEBUG="+Setting {
		t.Fatalf("child reported %q, want GODEBUG=%s", got, Setting)
	}
}
