package acl

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Decoding of the ACL APIs' request fields (CreateAcls, DescribeAcls,
// DeleteAcls v0-v3) and encoding of their results. Codes Kafka does not
// know decode to UNKNOWN, which Validate refuses per binding or filter.

// BindingFromCreation decodes one CreateAcls creation.
func BindingFromCreation(c *kmsg.CreateACLsRequestCreation) Binding {
	return Binding{
		Pattern: Pattern{
			Type:    ResourceTypeFromCode(int8(c.ResourceType)),
			Name:    c.ResourceName,
			Pattern: PatternTypeFromCode(int8(c.ResourcePatternType)),
		},
		Entry: Entry{
			Principal:  c.Principal,
			Host:       c.Host,
			Operation:  OperationFromCode(int8(c.Operation)),
			Permission: PermissionFromCode(int8(c.PermissionType)),
		},
	}
}

// FilterFromDescribe decodes a DescribeAcls request's filter.
func FilterFromDescribe(r *kmsg.DescribeACLsRequest) Filter {
	return Filter{
		ResourceType: ResourceTypeFromCode(int8(r.ResourceType)),
		Name:         r.ResourceName,
		Pattern:      PatternTypeFromCode(int8(r.ResourcePatternType)),
		Principal:    r.Principal,
		Host:         r.Host,
		Operation:    OperationFromCode(int8(r.Operation)),
		Permission:   PermissionFromCode(int8(r.PermissionType)),
	}
}

// FilterFromDeletion decodes one DeleteAcls filter.
func FilterFromDeletion(f *kmsg.DeleteACLsRequestFilter) Filter {
	return Filter{
		ResourceType: ResourceTypeFromCode(int8(f.ResourceType)),
		Name:         f.ResourceName,
		Pattern:      PatternTypeFromCode(int8(f.ResourcePatternType)),
		Principal:    f.Principal,
		Host:         f.Host,
		Operation:    OperationFromCode(int8(f.Operation)),
		Permission:   PermissionFromCode(int8(f.PermissionType)),
	}
}

// ValidateDescribe checks a DescribeAcls filter as DescribeAclsRequest
// does: v0 filters are LITERAL only, and no part may be UNKNOWN.
func ValidateDescribe(version int16, f Filter) *APIError {
	if version == 0 && f.Pattern != PatternLiteral {
		return &APIError{Code: codeUnsupportedVersion, Message: "Version 0 only supports literal resource pattern types"}
	}
	if f.ResourceType == ResourceUnknown || f.Pattern == PatternUnknown ||
		f.Operation == OpUnknown || f.Permission == PermissionUnknown {
		return invalidRequest("Filter contain UNKNOWN elements")
	}
	return nil
}

// DescribeResources groups bindings by resource pattern, in order, for a
// DescribeAcls response.
func DescribeResources(bindings []Binding) []kmsg.DescribeACLsResponseResource {
	var out []kmsg.DescribeACLsResponseResource
	index := map[Pattern]int{}
	for _, b := range bindings {
		i, ok := index[b.Pattern]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType = kmsg.ACLResourceType(b.Type)
			r.ResourceName = b.Name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.Pattern)
			out = append(out, r)
			i = len(out) - 1
			index[b.Pattern] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal, b.Host
		a.Operation = kmsg.ACLOperation(b.Operation)
		a.PermissionType = kmsg.ACLPermissionType(b.Permission)
		out[i].ACLs = append(out[i].ACLs, a)
	}
	return out
}

// MatchingACLs encodes the bindings a DeleteAcls filter removed.
func MatchingACLs(bindings []Binding) []kmsg.DeleteACLsResponseResultMatchingACL {
	out := make([]kmsg.DeleteACLsResponseResultMatchingACL, 0, len(bindings))
	for _, b := range bindings {
		m := kmsg.NewDeleteACLsResponseResultMatchingACL()
		m.ResourceType = kmsg.ACLResourceType(b.Type)
		m.ResourceName = b.Name
		m.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern.Pattern)
		m.Principal, m.Host = b.Principal, b.Host
		m.Operation = kmsg.ACLOperation(b.Operation)
		m.PermissionType = kmsg.ACLPermissionType(b.Permission)
		out = append(out, m)
	}
	return out
}
