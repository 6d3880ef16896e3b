package acl

import (
	"strings"

	"github.com/kbroker/kbroker/security/principal"
)

// Wildcard matches any resource name (LITERAL "*") or any host.
const Wildcard = "*"

// WildcardPrincipal matches any principal.
const WildcardPrincipal = "User:*"

// ClusterName is the only name of the CLUSTER resource.
const ClusterName = "kafka-cluster"

// Pattern is Kafka's ResourcePattern: what an ACL applies to.
type Pattern struct {
	Type    ResourceType
	Name    string
	Pattern PatternType
}

// Entry is Kafka's AccessControlEntry: who may (or may not) do what from
// where. Principal is in "Type:Name" form.
type Entry struct {
	Principal  string
	Host       string
	Operation  Operation
	Permission Permission
}

// Binding is Kafka's AclBinding: one ACL.
type Binding struct {
	Pattern
	Entry
}

// String is Kafka's StandardAcl.toString, as the authorizer log prints the
// matching ACL.
func (b Binding) String() string {
	return "StandardAcl(resourceType=" + b.Type.String() +
		", resourceName=" + b.Name +
		", patternType=" + b.Pattern.Pattern.String() +
		", principal=" + b.Principal +
		", host=" + b.Host +
		", operation=" + b.Operation.String() +
		", permissionType=" + b.Permission.String() + ")"
}

// APIError is a Kafka error code with its message, for one binding or
// filter of a CreateAcls or DeleteAcls request.
type APIError struct {
	Code    int16
	Message string
}

func (e *APIError) Error() string { return e.Message }

// Kafka error codes the ACL APIs answer with.
const (
	codeInvalidRequest     int16 = 42
	codeUnsupportedVersion int16 = 35
)

func invalidRequest(msg string) *APIError { return &APIError{Code: codeInvalidRequest, Message: msg} }

// Validate checks a binding to be created as Kafka's AclApis and
// AclControlManager.validateNewAcl do, returning INVALID_REQUEST with
// Kafka's message, or nil. version is the CreateAcls request version (v0
// has LITERAL patterns only).
func (b Binding) Validate(version int16) *APIError {
	if version == 0 && b.Pattern.Pattern != PatternLiteral {
		return &APIError{Code: codeUnsupportedVersion, Message: "Version 0 only supports literal resource pattern types"}
	}
	switch {
	case b.Type == ResourceCluster && b.Name != ClusterName:
		return invalidRequest("The only valid name for the CLUSTER resource is " + ClusterName)
	case b.Name == "":
		return invalidRequest("Invalid empty resource name")
	case b.Type == ResourceUnknown || b.Type == ResourceAny:
		return invalidRequest("Invalid resourceType " + b.Type.String())
	case b.Pattern.Pattern != PatternLiteral && b.Pattern.Pattern != PatternPrefixed:
		return invalidRequest("Invalid patternType " + b.Pattern.Pattern.String())
	case b.Operation == OpUnknown || b.Operation == OpAny:
		return invalidRequest("Invalid operation " + b.Operation.String())
	case b.Permission != Allow && b.Permission != Deny:
		return invalidRequest("Invalid permissionType " + b.Permission.String())
	case !strings.Contains(b.Principal, ":"):
		return invalidRequest("Could not parse principal from `" + b.Principal + "` (no colon is present separating the principal type from the principal name)")
	}
	return nil
}

// matchesPrincipal reports whether an ACL's principal string names p or
// is the wildcard User:*. Principals compare by type and name, as Kafka
// compares parsed KafkaPrincipals.
func matchesPrincipal(aclPrincipal string, p principal.Principal) bool {
	if aclPrincipal == WildcardPrincipal {
		return true
	}
	typ, name, ok := strings.Cut(aclPrincipal, ":")
	return ok && typ == p.Type && name == p.Name
}
