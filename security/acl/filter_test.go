package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	litA := lit(ResourceTopic, "a", "User:alice", OpRead, Allow)
	wild := lit(ResourceTopic, Wildcard, "User:bob", OpWrite, Deny)
	preF := pre(ResourceTopic, "fo", "User:alice", OpRead, Allow)
	group := lit(ResourceGroup, "a", "User:alice", OpRead, Allow)
	all := []Binding{litA, wild, preF, group}
	for _, c := range []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any", AnyFilter(), all},
		{"type", Filter{ResourceType: ResourceGroup, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, []Binding{group}},
		{"literal name exact", Filter{ResourceType: ResourceAny, Name: ptr("a"), Pattern: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, []Binding{litA, group}},
		{"any pattern, exact name", Filter{ResourceType: ResourceTopic, Name: ptr("fo"), Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}, []Binding{preF}},
		{"match: literal, wildcard and prefixes", Filter{ResourceType: ResourceTopic, Name: ptr("foo"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []Binding{wild, preF}},
		{"match a", Filter{ResourceType: ResourceTopic, Name: ptr("a"), Pattern: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []Binding{litA, wild}},
		{"prefixed filter is exact on name", Filter{ResourceType: ResourceTopic, Name: ptr("foo"), Pattern: PatternPrefixed, Operation: OpAny, Permission: PermissionAny}, nil},
		{"principal", Filter{ResourceType: ResourceAny, Pattern: PatternAny, Principal: ptr("User:bob"), Operation: OpAny, Permission: PermissionAny}, []Binding{wild}},
		{"host", Filter{ResourceType: ResourceAny, Pattern: PatternAny, Host: ptr("10.0.0.1"), Operation: OpAny, Permission: PermissionAny}, nil},
		{"operation", Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpWrite, Permission: PermissionAny}, []Binding{wild}},
		{"permission", Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: Allow}, []Binding{litA, preF, group}},
	} {
		var got []Binding
		for _, b := range all {
			if c.f.Matches(b) {
				got = append(got, b)
			}
		}
		if !sameBindings(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func sameBindings(a, b []Binding) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBindingValidate(t *testing.T) {
	good := lit(ResourceTopic, "a", "User:alice", OpRead, Allow)
	for _, c := range []struct {
		mutate  func(*Binding)
		version int16
		code    int16
		msg     string
	}{
		{func(*Binding) {}, 1, 0, ""},
		{func(b *Binding) { b.Pattern.Pattern = PatternPrefixed }, 1, 0, ""},
		{func(b *Binding) { b.Pattern.Pattern = PatternPrefixed }, 0, 35, "Version 0 only supports literal resource pattern types"},
		{func(b *Binding) { b.Type = ResourceUnknown }, 1, 42, "Invalid resourceType UNKNOWN"},
		{func(b *Binding) { b.Type = ResourceAny }, 1, 42, "Invalid resourceType ANY"},
		{func(b *Binding) { b.Pattern.Pattern = PatternMatch }, 1, 42, "Invalid patternType MATCH"},
		{func(b *Binding) { b.Pattern.Pattern = PatternAny }, 1, 42, "Invalid patternType ANY"},
		{func(b *Binding) { b.Operation = OpAny }, 1, 42, "Invalid operation ANY"},
		{func(b *Binding) { b.Operation = OpUnknown }, 1, 42, "Invalid operation UNKNOWN"},
		{func(b *Binding) { b.Permission = PermissionAny }, 1, 42, "Invalid permissionType ANY"},
		{func(b *Binding) { b.Name = "" }, 1, 42, "Invalid empty resource name"},
		{func(b *Binding) { b.Type, b.Name = ResourceCluster, "c" }, 1, 42, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(b *Binding) { b.Principal = "alice" }, 1, 42, "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
	} {
		b := good
		c.mutate(&b)
		err := b.Validate(c.version)
		if c.code == 0 {
			if err != nil {
				t.Errorf("%v: %v", b, err)
			}
			continue
		}
		if err == nil || err.Code != c.code || err.Message != c.msg {
			t.Errorf("%v: got %v, want %d %q", b, err, c.code, c.msg)
		}
	}
}

func TestFilterValidate(t *testing.T) {
	if AnyFilter().Validate() != nil {
		t.Fatal("any filter invalid")
	}
	f := AnyFilter()
	f.Pattern = PatternUnknown
	if err := f.Validate(); err == nil || err.Message != "Unknown patternFilter." {
		t.Fatalf("got %v", err)
	}
	f = AnyFilter()
	f.Permission = PermissionUnknown
	if err := f.Validate(); err == nil || err.Message != "Unknown entryFilter." {
		t.Fatalf("got %v", err)
	}
	if err := ValidateDescribe(0, AnyFilter()); err == nil || err.Code != 35 {
		t.Fatalf("v0 ANY pattern: %v", err)
	}
}

func TestKmsgRoundTrip(t *testing.T) {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "orders", kmsg.ACLResourcePatternTypePrefixed
	c.Principal, c.Host = "User:alice", "*"
	c.Operation, c.PermissionType = kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	b := BindingFromCreation(&c)
	if b != pre(ResourceTopic, "orders", "User:alice", OpWrite, Allow) {
		t.Fatalf("decoded %v", b)
	}
	res := DescribeResources([]Binding{b, lit(ResourceTopic, "x", "User:bob", OpRead, Deny), onHost(b, "1.2.3.4")})
	if len(res) != 2 || len(res[0].ACLs) != 2 || res[0].ResourceName != "orders" || res[1].ACLs[0].PermissionType != kmsg.ACLPermissionTypeDeny {
		t.Fatalf("describe %+v", res)
	}
	m := MatchingACLs([]Binding{b})
	if len(m) != 1 || m[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || m[0].Principal != "User:alice" {
		t.Fatalf("matching %+v", m)
	}
	d := kmsg.NewDescribeACLsRequest()
	d.ResourceType, d.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeMatch
	d.ResourceName = ptr("orders-eu")
	d.Operation, d.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if f := FilterFromDescribe(&d); !f.Matches(b) || ValidateDescribe(3, f) != nil {
		t.Fatalf("describe filter %+v", f)
	}
	del := kmsg.NewDeleteACLsRequestFilter()
	del.ResourceType, del.ResourcePatternType = 99, kmsg.ACLResourcePatternTypeAny
	del.Operation, del.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if f := FilterFromDeletion(&del); f.Validate() == nil {
		t.Fatal("unknown resource type code accepted")
	}
}

func TestSetWithWithout(t *testing.T) {
	a := lit(ResourceTopic, "a", "User:alice", OpRead, Allow)
	b := pre(ResourceTopic, "b", "User:alice", OpRead, Allow)
	s := NewSet([]Binding{a, a}).With(b, a)
	if s.Len() != 2 {
		t.Fatalf("len %d, want 2 (duplicates dropped)", s.Len())
	}
	f := AnyFilter()
	f.Pattern = PatternPrefixed
	s2, removed := s.Without(f)
	if s2.Len() != 1 || len(removed) != 1 || removed[0] != b || s.Len() != 2 {
		t.Fatalf("without: %d %v (old set %d)", s2.Len(), removed, s.Len())
	}
	if d := Decide(&Config{}, s2, req("alice"), act(OpRead, ResourceTopic, "bb")); d.Allowed {
		t.Fatal("removed prefix still applies")
	}
}
