package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) aclCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "acl",
		Aliases: []string{"acls"},
		Short:   "Create, list and delete ACLs (Kafka's StandardAuthorizer bindings)",
		Long: "ACL administration (kafka-acls.sh in one command). A binding allows or denies a\n" +
			"principal an operation on a resource (a topic, group, transactional id or the\n" +
			"cluster), by literal name or by prefix, from a host. A principal without a type\n" +
			"(alice) means User:alice.",
		Example: "  kbroker acl create --allow-principal alice --operation write,describe --topic orders\n" +
			"  kbroker acl list --principal alice\n" +
			"  kbroker acl delete --principal alice --topic orders --dry-run",
	}
	c.AddCommand(g.aclCreateCmd(), g.aclListCmd(), g.aclDeleteCmd())
	return c
}

// aclFlags are the resource, host, pattern and operation flags the three
// subcommands share.
type aclFlags struct {
	spec admin.ACLSpec
}

func (a *aclFlags) add(f *pflag.FlagSet, create bool) {
	s := &a.spec
	f.StringSliceVar(&s.Topics, "topic", nil, ex("topic names (* is every topic; with --resource-pattern-type prefixed, a prefix), repeatable", "--topic orders"))
	f.StringSliceVar(&s.Groups, "group", nil, ex("consumer group ids, repeatable", "--group payments"))
	f.StringSliceVar(&s.TransactionalIDs, "transactional-id", nil, ex("transactional ids, repeatable", "--transactional-id payments-tx"))
	f.BoolVar(&s.Cluster, "cluster", false, ex("the cluster resource (cluster-wide operations: create topics, alter configs, ...)", "--cluster --operation create"))
	host, pattern := "hosts the binding applies to (default *, every host)", "literal (the exact name, the default) or prefixed"
	if !create {
		host, pattern = "match bindings for these hosts (default: any)",
			"any (the default), match (what applies to the names given), literal or prefixed"
	}
	f.StringSliceVar(&s.Hosts, "host", nil, ex(host, "--host 10.0.0.7"))
	f.StringVar(&s.Pattern, "resource-pattern-type", "", ex(pattern, "--resource-pattern-type prefixed"))
	op := "operations to allow or deny: all, read, write, create, delete, alter, describe, cluster_action, " +
		"describe_configs, alter_configs, idempotent_write, create_tokens, describe_tokens"
	if !create {
		op = "match these operations only (default: any)"
	}
	f.StringSliceVar(&s.Operations, "operation", nil, ex(op, "--operation read,describe"))
}

func (g *globals) aclCreateCmd() *cobra.Command {
	var a aclFlags
	c := &cobra.Command{
		Use:   "create",
		Short: "Create ACLs: each principal x host x resource x operation",
		Example: "  kbroker acl create --allow-principal alice --operation write,describe --topic orders\n" +
			"  kbroker acl create --allow-principal bob --operation read --topic app- --resource-pattern-type prefixed --group app-\n" +
			"  kbroker acl create --deny-principal '*' --operation all --topic secrets",
		Args: args(0, 0, "no arguments (resources are flags: --topic, --group, --transactional-id, --cluster)"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		if err := a.spec.CheckCreate(); err != nil {
			return &UsageError{fmt.Errorf("acl create: %w", err)}
		}
		res, err := s.c.CreateACLs(s.ctx, a.spec)
		if res == nil {
			return err
		}
		s.p.result(res, func(p *printer) { aclTable(p, res, "created") })
		return err
	})
	f := c.Flags()
	f.StringSliceVar(&a.spec.Allow, "allow-principal", nil, ex("principals to allow, repeatable", "--allow-principal User:alice"))
	f.StringSliceVar(&a.spec.Deny, "deny-principal", nil, ex("principals to deny (DENY wins over any ALLOW), repeatable", "--deny-principal User:mallory"))
	a.add(f, true)
	return c
}

func (g *globals) aclListCmd() *cobra.Command {
	var a aclFlags
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls", "describe"},
		Short:   "List the ACLs a filter matches (every ACL without one)",
		Example: "  kbroker acl list\n  kbroker acl list --principal alice --format json\n" +
			"  kbroker acl list --topic orders --resource-pattern-type match",
		Args: args(0, 0, "no arguments (filters are flags)"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		if err := a.spec.CheckFilter(); err != nil {
			return &UsageError{fmt.Errorf("acl list: %w", err)}
		}
		res, err := s.c.ListACLs(s.ctx, a.spec)
		if err != nil {
			return err
		}
		return s.p.result(res, func(p *printer) { aclTable(p, res, "") })
	})
	a.addFilter(c.Flags())
	return c
}

func (g *globals) aclDeleteCmd() *cobra.Command {
	var a aclFlags
	var dryRun bool
	c := &cobra.Command{
		Use:     "delete",
		Aliases: []string{"rm"},
		Short:   "Delete the ACLs a filter matches (it must name a resource or a principal)",
		Example: "  kbroker acl delete --principal alice --topic orders\n" +
			"  kbroker acl delete --principal bob --dry-run",
		Args: args(0, 0, "no arguments (filters are flags)"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		if !a.spec.HasResource() && len(a.spec.Principals) == 0 {
			return usagef("acl delete needs a resource (--topic, --group, --transactional-id, --cluster) or --principal: it would delete every ACL")
		}
		if err := a.spec.CheckFilter(); err != nil {
			return &UsageError{fmt.Errorf("acl delete: %w", err)}
		}
		del := s.c.DeleteACLs
		status := "deleted"
		if dryRun {
			del, status = s.c.ListACLs, "would be deleted (dry run)"
		}
		res, err := del(s.ctx, a.spec)
		if res == nil {
			return err
		}
		s.p.result(map[string]any{"dry_run": dryRun, "acls": res}, func(p *printer) {
			aclTable(p, res, status)
			fmt.Fprintf(p.w, "\n%d ACL(s) %s\n", len(res), status)
		})
		return err
	})
	a.addFilter(c.Flags())
	c.Flags().BoolVar(&dryRun, "dry-run", false, ex("list what would be deleted, delete nothing", "--dry-run"))
	return c
}

func (a *aclFlags) addFilter(f *pflag.FlagSet) {
	f.StringSliceVar(&a.spec.Principals, "principal", nil, ex("match bindings of these principals (default: any)", "--principal User:alice"))
	f.StringVar(&a.spec.Permission, "permission", "", ex("match allow or deny bindings only (default: both)", "--permission deny"))
	a.add(f, false)
}

func aclTable(p *printer, acls []admin.ACL, status string) {
	headers := []string{"PRINCIPAL", "HOST", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "OPERATION", "PERMISSION"}
	if status != "" {
		headers = append(headers, "STATUS", "ERROR")
	}
	var rows [][]string
	for _, a := range acls {
		row := []string{a.Principal, a.Host, a.ResourceType, a.ResourceName, a.PatternType, a.Operation, a.Permission}
		if status != "" {
			row = append(row, outcome(a.Error, status), orDash(a.Error))
		}
		rows = append(rows, row)
	}
	p.Table(headers, rows)
}
