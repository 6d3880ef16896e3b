package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/fuzzseed"
	"github.com/kbroker/kbroker/security/principal"
)

// aclSeeds are encoded CreateAcls, DescribeAcls and DeleteAcls bodies:
// (body, kind 0/1/2, version).
func aclSeeds() [][]any {
	var seeds [][]any
	for v := int16(0); v <= 3; v++ {
		c := kmsg.NewCreateACLsRequest()
		c.Version = v
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
		c.Creations = append(c.Creations, cr)
		cr.ResourcePatternType, cr.PermissionType = kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLPermissionTypeDeny
		c.Creations = append(c.Creations, cr)
		seeds = append(seeds, []any{c.AppendTo(nil), 0, int(v)})

		d := kmsg.NewDescribeACLsRequest()
		d.Version = v
		d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeMatch
		name := "orders"
		d.ResourceName = &name
		d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		seeds = append(seeds, []any{d.AppendTo(nil), 1, int(v)})

		del := kmsg.NewDeleteACLsRequest()
		del.Version = v
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		del.Filters = append(del.Filters, f)
		seeds = append(seeds, []any{del.AppendTo(nil), 2, int(v)})
	}
	return seeds
}

func TestWriteACLSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	fuzzseed.Write(t, "FuzzACLRequests", aclSeeds())
}

// FuzzACLRequests decodes the ACL APIs' bodies as the broker will, then
// checks the decisions they lead to: no panic, and a valid LITERAL ALLOW
// binding allows what it names to whom it names, which its exact filter
// matches.
func FuzzACLRequests(f *testing.F) {
	for _, s := range aclSeeds() {
		f.Add(s[0].([]byte), s[1].(int), s[2].(int))
	}
	f.Fuzz(func(t *testing.T, body []byte, kind, version int) {
		v := int16(version & 3)
		switch kind & 3 {
		case 0:
			r := kmsg.NewCreateACLsRequest()
			r.Version = v
			if r.ReadFrom(body) != nil {
				return
			}
			var valid []Binding
			for i := range r.Creations {
				b := BindingFromCreation(&r.Creations[i])
				if b.Validate(v) == nil {
					valid = append(valid, b)
					checkBinding(t, b)
				}
			}
			NewSet(valid).Select(AnyFilter())
		case 1:
			r := kmsg.NewDescribeACLsRequest()
			r.Version = v
			if r.ReadFrom(body) != nil {
				return
			}
			f := FilterFromDescribe(&r)
			if ValidateDescribe(v, f) == nil {
				DescribeResources(fuzzSet.Select(f))
			}
		default:
			r := kmsg.NewDeleteACLsRequest()
			r.Version = v
			if r.ReadFrom(body) != nil {
				return
			}
			for i := range r.Filters {
				f := FilterFromDeletion(&r.Filters[i])
				if f.Validate() == nil {
					_, removed := fuzzSet.Without(f)
					MatchingACLs(removed)
				}
			}
		}
	})
}

var fuzzSet = NewSet([]Binding{
	lit(ResourceTopic, "orders", "User:alice", OpWrite, Allow),
	pre(ResourceTopic, "ord", "User:*", OpRead, Deny),
	lit(ResourceGroup, Wildcard, "User:bob", OpAll, Allow),
})

func checkBinding(t *testing.T, b Binding) {
	name, pattern := b.Name, b.Pattern.Pattern
	exact := Filter{ResourceType: b.Type, Name: &name, Pattern: pattern, Principal: &b.Principal, Host: &b.Host, Operation: b.Operation, Permission: b.Permission}
	if !exact.Matches(b) {
		t.Fatalf("exact filter does not match %v", b)
	}
	if b.Permission != Allow || b.Pattern.Pattern != PatternLiteral || b.Host != Wildcard || b.Operation == OpAll {
		return
	}
	p, err := principal.Parse(b.Principal)
	if err != nil || p.String() == WildcardPrincipal {
		return
	}
	d := Decide(&Config{}, NewSet([]Binding{b}), Request{Principal: p, Host: "127.0.0.1"}, Action{Operation: b.Operation, Type: b.Type, Name: b.Name})
	if !d.Allowed {
		t.Fatalf("%v does not allow itself: %s", b, d.Rule())
	}
}
