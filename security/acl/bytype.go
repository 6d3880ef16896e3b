package acl

// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType
// (KIP-679): may the principal perform op on at least one resource of typ?
// Kafka asks it for idempotent producers without IDEMPOTENT_WRITE on the
// cluster (WRITE on any topic suffices). A super user (or an allow on a
// resource no ACL names) is allowed; a LITERAL "*" DENY denies; otherwise
// some ALLOW must not be covered by a DENY: a LITERAL allow by the same
// LITERAL deny or a PREFIXED deny of one of its prefixes, a PREFIXED
// allow by a PREFIXED deny of one of its prefixes.
func (a *Authorizer) AuthorizeByResourceType(req Request, op Operation, typ ResourceType) bool {
	if a.Allowed(req, Action{Operation: op, Type: typ, Name: "hardcode", RefCount: 0, LogIfAllowed: true}) {
		return true
	}
	set := a.acls.Load()
	if set == nil {
		return false
	}
	return decideByResourceType(set, req, op, typ)
}

func decideByResourceType(set *Set, req Request, op Operation, typ ResourceType) bool {
	deny := map[PatternType]map[string]bool{PatternLiteral: {}, PatternPrefixed: {}}
	var allows []Pattern
	wildcardAllow := false
	for _, b := range set.Select(Filter{ResourceType: typ, Pattern: PatternAny, Operation: OpAny, Permission: PermissionAny}) {
		if b.Host != Wildcard && b.Host != req.Host || !matchesPrincipal(b.Principal, req.Principal) {
			continue
		}
		if b.Operation != op && b.Operation != OpAll {
			continue
		}
		if b.Permission == Deny {
			if b.Pattern.Pattern == PatternLiteral && b.Name == Wildcard {
				return false
			}
			deny[b.Pattern.Pattern][b.Name] = true
			continue
		}
		if b.Pattern.Pattern == PatternLiteral && b.Name == Wildcard {
			wildcardAllow = true // a wildcard DENY later in the loop still wins
			continue
		}
		allows = append(allows, b.Pattern)
	}
	if wildcardAllow {
		return true
	}
	for _, p := range allows {
		if p.Pattern == PatternLiteral && deny[PatternLiteral][p.Name] {
			continue
		}
		if !deniedByPrefix(deny[PatternPrefixed], p.Name) {
			return true
		}
	}
	return false
}

func deniedByPrefix(prefixes map[string]bool, name string) bool {
	for i := 1; i <= len(name); i++ {
		if prefixes[name[:i]] {
			return true
		}
	}
	return false
}

// SupportedOperations are the operations that apply to a resource type
// (Kafka's AclEntry.supportedOperations), the ones KIP-430 reports.
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe}
	case ResourceTransactionalID:
		return []Operation{OpDescribe, OpWrite}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// AuthorizedOperations is the KIP-430 bit field of the supported operations
// the principal may perform on a resource (bit n set: operation code n),
// as Metadata, DescribeCluster and DescribeGroups return it. Nothing is
// logged above trace level.
func (a *Authorizer) AuthorizedOperations(req Request, typ ResourceType, name string) int32 {
	var bits int32
	for _, op := range SupportedOperations(typ) {
		if a.Allowed(req, Action{Operation: op, Type: typ, Name: name, RefCount: 1}) {
			bits |= 1 << op
		}
	}
	return bits
}
