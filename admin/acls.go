package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ACL is one access control binding as the cluster stores it, in Kafka's
// names (kafka-acls.sh prints the same fields).
type ACL struct {
	Principal    string `json:"principal"`     // User:alice
	Host         string `json:"host"`          // * or an IP
	ResourceType string `json:"resource_type"` // TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"` // LITERAL or PREFIXED
	Operation    string `json:"operation"`    // READ, WRITE, ...
	Permission   string `json:"permission"`   // ALLOW or DENY
	Error        string `json:"error,omitempty"`
}

// ACLSpec names ACLs. To create, every principal x host x resource x
// operation becomes one binding (as kafka-acls.sh --add does). To list or
// delete, it is a filter: an empty field matches anything.
type ACLSpec struct {
	// Allow and Deny are the principals (a name without a type, alice, is
	// User:alice). A filter's Principals match either permission unless
	// Permission says which.
	Allow, Deny, Principals []string
	// Permission restricts a filter to ALLOW or DENY ("" or ANY: both).
	Permission string
	// Hosts default to * on create and to any host in a filter.
	Hosts []string
	// Resources: topics, groups and transactional ids by name (* is
	// Kafka's wildcard name), the cluster.
	Topics, Groups, TransactionalIDs []string
	Cluster                          bool
	// Pattern is LITERAL (the default) or PREFIXED on create; ANY (the
	// default), MATCH, LITERAL or PREFIXED in a filter.
	Pattern string
	// Operations are Kafka's names (read, write, describe_configs, all...);
	// a filter without any matches every operation.
	Operations []string
}

// HasResource reports whether the spec names a resource.
func (s ACLSpec) HasResource() bool {
	return len(s.Topics)+len(s.Groups)+len(s.TransactionalIDs) > 0 || s.Cluster
}

// CheckCreate reports what makes the spec unusable for CreateACLs.
func (s ACLSpec) CheckCreate() error {
	_, err := s.createBuilder()
	return err
}

// CheckFilter reports what makes the spec unusable as a filter.
func (s ACLSpec) CheckFilter() error {
	_, err := s.filterBuilder()
	return err
}

// CreateACLs creates the spec's bindings, one result each; the error is
// the first failure.
func (c *Client) CreateACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	b, err := s.createBuilder()
	if err != nil {
		return nil, err
	}
	res, err := c.adm.CreateACLs(ctx, b)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var out []ACL
	var errs []error
	for _, r := range res {
		a := aclOf(r.Principal, r.Host, r.Type, r.Name, r.Pattern, r.Operation, r.Permission)
		if e := c.codeErr("ACL "+a.String(), r.Err, strPtr(r.ErrMessage), kmsg.CreateACLs.Int16()); e != nil {
			a.Error, errs = e.Error(), append(errs, e)
		}
		out = append(out, a)
	}
	return out, firstOf(errs)
}

// ListACLs lists the bindings the filter matches, sorted.
func (c *Client) ListACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	b, err := s.filterBuilder()
	if err != nil {
		return nil, err
	}
	res, err := c.adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var out []ACL
	for _, r := range res {
		if e := c.codeErr("ACLs", r.Err, strPtr(r.ErrMessage), kmsg.DescribeACLs.Int16()); e != nil {
			return nil, e
		}
		for _, d := range r.Described {
			out = append(out, aclOf(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission))
		}
	}
	return sortACLs(out), nil
}

// DeleteACLs deletes the bindings the filter matches and returns them.
func (c *Client) DeleteACLs(ctx context.Context, s ACLSpec) ([]ACL, error) {
	b, err := s.filterBuilder()
	if err != nil {
		return nil, err
	}
	res, err := c.adm.DeleteACLs(ctx, b)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var out []ACL
	var errs []error
	for _, r := range res {
		if e := c.codeErr("ACL filter", r.Err, strPtr(r.ErrMessage), kmsg.DeleteACLs.Int16()); e != nil {
			errs = append(errs, e)
			continue
		}
		for _, d := range r.Deleted {
			a := aclOf(d.Principal, d.Host, d.Type, d.Name, d.Pattern, d.Operation, d.Permission)
			if e := c.codeErr("ACL "+a.String(), d.Err, strPtr(d.ErrMessage), kmsg.DeleteACLs.Int16()); e != nil {
				a.Error, errs = e.Error(), append(errs, e)
			}
			out = append(out, a)
		}
	}
	return sortACLs(out), firstOf(errs)
}

// String is the binding as Kafka's authorizer log names it.
func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s from %s on %s:%s:%s", a.Principal, a.Permission, a.Operation, a.Host,
		a.ResourceType, a.PatternType, a.ResourceName)
}

func (s ACLSpec) createBuilder() (*kadm.ACLBuilder, error) {
	if len(s.Allow)+len(s.Deny) == 0 {
		return nil, errors.New("an ACL needs a principal to allow or deny")
	}
	if !s.HasResource() {
		return nil, errors.New("an ACL needs a resource: a topic, group, transactional id or the cluster")
	}
	if len(s.Operations) == 0 {
		return nil, errors.New("an ACL needs at least one operation")
	}
	ops, err := parseOperations(s.Operations, false)
	if err != nil {
		return nil, err
	}
	pattern, err := parsePattern(s.Pattern, kadm.ACLPatternLiteral, true)
	if err != nil {
		return nil, err
	}
	b := kadm.NewACLs().MaybeAllow(principals(s.Allow)...).MaybeDeny(principals(s.Deny)...).
		ResourcePatternType(pattern).Operations(ops...)
	if len(s.Allow) > 0 {
		b.MaybeAllowHosts(s.Hosts...)
	}
	if len(s.Deny) > 0 {
		b.MaybeDenyHosts(s.Hosts...)
	}
	s.resources(b)
	return b, b.ValidateCreate()
}

func (s ACLSpec) filterBuilder() (*kadm.ACLBuilder, error) {
	ops, err := parseOperations(s.Operations, true)
	if err != nil {
		return nil, err
	}
	pattern, err := parsePattern(s.Pattern, kadm.ACLPatternAny, false)
	if err != nil {
		return nil, err
	}
	perm, err := parsePermission(s.Permission)
	if err != nil {
		return nil, err
	}
	b := kadm.NewACLs().ResourcePatternType(pattern).Operations(ops...)
	who := principals(s.Principals)
	if perm != kmsg.ACLPermissionTypeDeny {
		b.Allow(who...)
		if len(s.Hosts) > 0 {
			b.MaybeAllowHosts(s.Hosts...)
		} else {
			b.AllowHosts()
		}
	}
	if perm != kmsg.ACLPermissionTypeAllow {
		b.Deny(who...)
		if len(s.Hosts) > 0 {
			b.MaybeDenyHosts(s.Hosts...)
		} else {
			b.DenyHosts()
		}
	}
	if s.HasResource() {
		s.resources(b)
	} else {
		b.AnyResource()
	}
	return b, b.ValidateFilter()
}

// resources sets the named resources only: an unnamed type stays out.
func (s ACLSpec) resources(b *kadm.ACLBuilder) {
	b.MaybeTopics(s.Topics...).MaybeGroups(s.Groups...).MaybeTransactionalIDs(s.TransactionalIDs...).MaybeClusters(s.Cluster)
}

// principals adds Kafka's User: type to a bare name (alice, *).
func principals(in []string) []string {
	out := make([]string, 0, len(in))
	for _, p := range in {
		if !strings.Contains(p, ":") {
			p = "User:" + p
		}
		out = append(out, p)
	}
	return out
}

func parseOperations(in []string, filter bool) ([]kadm.ACLOperation, error) {
	var out []kadm.ACLOperation
	for _, s := range in {
		op, err := kmsg.ParseACLOperation(s)
		if err != nil || op == kmsg.ACLOperationAny && !filter {
			return nil, fmt.Errorf("unknown ACL operation %q (want one of %s)", s, operationNames(filter))
		}
		out = append(out, op)
	}
	return out, nil
}

func operationNames(filter bool) string {
	var names []string
	for op := kmsg.ACLOperationAny; op <= kmsg.ACLOperationDescribeTokens; op++ {
		if op != kmsg.ACLOperationAny || filter {
			names = append(names, strings.ToLower(op.String()))
		}
	}
	return strings.Join(names, ", ")
}

func parsePattern(s string, def kadm.ACLPattern, create bool) (kadm.ACLPattern, error) {
	if s == "" {
		return def, nil
	}
	p, err := kmsg.ParseACLResourcePatternType(s)
	switch {
	case err != nil, create && p != kadm.ACLPatternLiteral && p != kadm.ACLPatternPrefixed:
		want := "any, match, literal or prefixed"
		if create {
			want = "literal or prefixed"
		}
		return 0, fmt.Errorf("unknown resource pattern type %q (want %s)", s, want)
	}
	return p, nil
}

func parsePermission(s string) (kmsg.ACLPermissionType, error) {
	if s == "" {
		return kmsg.ACLPermissionTypeAny, nil
	}
	p, err := kmsg.ParseACLPermissionType(s)
	if err != nil || p == kmsg.ACLPermissionTypeUnknown {
		return 0, fmt.Errorf("unknown permission %q (want allow, deny or any)", s)
	}
	return p, nil
}

func aclOf(principal, host string, t kmsg.ACLResourceType, name string, pattern kadm.ACLPattern,
	op kadm.ACLOperation, perm kmsg.ACLPermissionType) ACL {
	return ACL{Principal: principal, Host: host, ResourceType: t.String(), ResourceName: name,
		PatternType: pattern.String(), Operation: op.String(), Permission: perm.String()}
}

// sortACLs orders bindings by resource, then principal, and drops the
// repeats that overlapping filters return.
func sortACLs(in []ACL) []ACL {
	slices.SortFunc(in, func(a, b ACL) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceName, b.ResourceName),
			cmp.Compare(a.PatternType, b.PatternType), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
			cmp.Compare(a.Permission, b.Permission), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Error, b.Error))
	})
	out := slices.Compact(in)
	if out == nil {
		out = []ACL{}
	}
	return out
}
