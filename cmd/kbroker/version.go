package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: go build -ldflags "-X main.version=v0.1.0".
var version = "dev"

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, versionString())
			return err
		},
	}
}

// versionString is "kbroker VERSION (COMMIT, GOVERSION OS/ARCH)", the
// commit when the build recorded one.
func versionString() string {
	s := "kbroker " + version + " ("
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, setting := range info.Settings {
			if setting.Key == "vcs.revision" && len(setting.Value) >= 12 {
				s += setting.Value[:12] + ", "
			}
		}
	}
	return s + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
