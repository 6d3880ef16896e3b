package main

import (
	"crypto/rand"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// formatCmd is `kafka-storage format --add-scram` for kbroker: it stores
// the first admin's SCRAM credentials (salted) in the metadata directory
// the config names, and the controller that starts the cluster commits
// them with the cluster id. kbroker needs no format step otherwise.
func (a *app) formatCmd() *cobra.Command {
	var addScram []string
	cmd := &cobra.Command{
		Use:   "format --add-scram 'SCRAM-SHA-256=[name=admin,password=...]' [config flags]",
		Short: "Store SCRAM credentials for the first admin before the cluster first starts",
		Long: "Store SCRAM credentials (kafka-storage format --add-scram syntax) in the\n" +
			"metadata directory of this node's configuration (--config file, KBROKER_*\n" +
			"environment and flags as for serve). Run it on every controller before the\n" +
			"cluster first starts; the controller that initializes the metadata log\n" +
			"commits them. Later changes go through AlterUserScramCredentials\n" +
			"(kafka-configs --entity-type users, kadm AlterUserSCRAMs).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.format(cmd.Flags(), addScram) },
	}
	cmd.Flags().StringArrayVar(&addScram, "add-scram", nil, "a credential: SCRAM-SHA-256=[name=alice,password=alice-secret] (repeatable)")
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func (a *app) format(flags *pflag.FlagSet, addScram []string) error {
	if len(addScram) == 0 {
		return &configError{fmt.Errorf("format: give at least one --add-scram")}
	}
	cfg, err := config.Load(config.LoadArgs{Env: a.environ, Flags: flags})
	if err != nil {
		return &configError{err}
	}
	var creds []scram.Bootstrap
	for _, s := range addScram {
		c, err := scram.ParseAddScram(s, rand.Reader)
		if err != nil {
			return &configError{fmt.Errorf("--add-scram: %w", err)}
		}
		creds = append(creds, c)
	}
	dir := broker.MetadataDir(cfg)
	if err := controller.WriteBootstrap(dir, creds); err != nil {
		return &configError{err}
	}
	for _, c := range creds {
		fmt.Fprintf(a.stdout, "stored %s credential of %s in %s\n", c.Mechanism.Name(), c.User, dir)
	}
	return nil
}
