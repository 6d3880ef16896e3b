package main

import (
	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/cli"
)

// adminCmds are the operator's commands (package cli): topic, group,
// cluster, produce, consume, reassign, acl, user and completion. They print their own
// errors and end with a *cli.ExitError carrying the exit status.
func (a *app) adminCmds() []*cobra.Command { return cli.Commands(a.environ) }
