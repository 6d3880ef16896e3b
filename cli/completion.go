package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

// completionCmd prints shell completion scripts (cobra's generators).
func completionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: "Print a completion script for the shell. Topic and group names complete from\n" +
			"the cluster (the --brokers, -X and profile settings on the command line).",
		Example: "  source <(kbroker completion bash)\n" +
			"  kbroker completion zsh > \"${fpath[1]}/_kbroker\"\n" +
			"  kbroker completion fish > ~/.config/fish/completions/kbroker.fish",
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) != 1 || cobra.OnlyValidArgs(cmd, a) != nil {
				return printed(cmd, usagef("completion needs one of bash, zsh, fish, powershell"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			root, w := cmd.Root(), cmd.OutOrStdout()
			switch a[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			}
			return root.GenPowerShellCompletionWithDesc(w)
		},
	}
}

// completeTopics completes topic names from the cluster.
func (g *globals) completeTopics(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return g.complete(func(ctx context.Context, c *admin.Client) ([]string, error) {
		list, err := c.Topics(ctx, false)
		var names []string
		for _, t := range list {
			names = append(names, t.Name)
		}
		return names, err
	})
}

// completeGroups completes group names from the cluster.
func (g *globals) completeGroups(_ *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	return g.complete(func(ctx context.Context, c *admin.Client) ([]string, error) {
		list, err := c.Groups(ctx)
		var names []string
		for _, gr := range list {
			names = append(names, gr.Group)
		}
		return names, err
	})
}

func (g *globals) complete(list func(context.Context, *admin.Client) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	cfg, err := g.config()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := admin.Dial(cfg)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ctx, stop := c.Watch(ctx)
	defer stop()
	names, _ := list(ctx, c)
	return names, cobra.ShellCompDirectiveNoFileComp
}
