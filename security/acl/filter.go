package acl

import "strings"

// Filter is Kafka's AclBindingFilter, as DescribeAcls and DeleteAcls send
// it. A nil Name, Principal or Host matches anything; ANY matches every
// type, pattern, operation and permission; MATCH (pattern) matches every
// ACL that would apply to the resource Name: the LITERAL one, the LITERAL
// wildcard and every PREFIXED one whose prefix Name starts with.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	Pattern      PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// AnyFilter matches every binding.
func AnyFilter() Filter {
	return Filter{ResourceType: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}
}

// Validate is AclControlManager.validateFilter: a filter with an UNKNOWN
// part is refused with INVALID_REQUEST.
func (f Filter) Validate() *APIError {
	if f.ResourceType == ResourceUnknown || f.Pattern == PatternUnknown {
		return invalidRequest("Unknown patternFilter.")
	}
	if f.Operation == OpUnknown || f.Permission == PermissionUnknown {
		return invalidRequest("Unknown entryFilter.")
	}
	return nil
}

// Matches is AclBindingFilter.matches.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b.Pattern) && f.matchesEntry(b.Entry)
}

func (f Filter) matchesPattern(p Pattern) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != p.Type {
		return false
	}
	if f.Pattern != PatternAny && f.Pattern != PatternMatch && f.Pattern != p.Pattern {
		return false
	}
	if f.Name == nil {
		return true
	}
	name := *f.Name
	if f.Pattern == PatternAny || f.Pattern == p.Pattern {
		return name == p.Name
	}
	switch p.Pattern { // f.Pattern is MATCH
	case PatternLiteral:
		return name == p.Name || p.Name == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(name, p.Name)
	}
	return false
}

func (f Filter) matchesEntry(e Entry) bool {
	if f.Principal != nil && *f.Principal != e.Principal {
		return false
	}
	if f.Host != nil && *f.Host != e.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != e.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == e.Permission
}
