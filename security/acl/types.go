package acl

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's ResourceType, with its wire codes.
type ResourceType int8

const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1 // filters only
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

var resourceTypeNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

// ResourceTypeFromCode maps a wire code to its type; codes Kafka does not
// know are UNKNOWN, as ResourceType.fromCode does.
func ResourceTypeFromCode(c int8) ResourceType {
	if c < 0 || int(c) >= len(resourceTypeNames) {
		return ResourceUnknown
	}
	return ResourceType(c)
}

// String is the Java enum name, e.g. TRANSACTIONAL_ID.
func (t ResourceType) String() string { return enumName(resourceTypeNames[:], int(t)) }

// LogName is SecurityUtils.resourceTypeName: TRANSACTIONAL_ID becomes
// TransactionalId, as the authorizer log prints it.
func (t ResourceType) LogName() string { return camelCase(t.String()) }

// PatternType is Kafka's PatternType.
type PatternType int8

const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1 // filters only
	PatternMatch    PatternType = 2 // filters only
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternTypeNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

// PatternTypeFromCode maps a wire code; unknown codes are UNKNOWN.
func PatternTypeFromCode(c int8) PatternType {
	if c < 0 || int(c) >= len(patternTypeNames) {
		return PatternUnknown
	}
	return PatternType(c)
}

func (p PatternType) String() string { return enumName(patternTypeNames[:], int(p)) }

// Operation is Kafka's AclOperation.
type Operation int8

const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1 // filters only
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var operationNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}

// OperationFromCode maps a wire code; unknown codes are UNKNOWN.
func OperationFromCode(c int8) Operation {
	if c < 0 || int(c) >= len(operationNames) {
		return OpUnknown
	}
	return Operation(c)
}

func (o Operation) String() string { return enumName(operationNames[:], int(o)) }

// Permission is Kafka's AclPermissionType.
type Permission int8

const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1 // filters only
	Deny              Permission = 2
	Allow             Permission = 3
)

var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

// PermissionFromCode maps a wire code; unknown codes are UNKNOWN.
func PermissionFromCode(c int8) Permission {
	if c < 0 || int(c) >= len(permissionNames) {
		return PermissionUnknown
	}
	return Permission(c)
}

func (p Permission) String() string { return enumName(permissionNames[:], int(p)) }

func enumName(names []string, i int) string {
	if i < 0 || i >= len(names) {
		return fmt.Sprintf("UNKNOWN(%d)", i)
	}
	return names[i]
}

// parseEnum is Java's fromString: case-insensitive, UNKNOWN (0) otherwise.
func parseEnum(names []string, s string) int8 {
	for i, n := range names {
		if strings.EqualFold(n, s) {
			return int8(i)
		}
	}
	return 0
}

// ParseResourceType reads a name such as "topic" (UNKNOWN if none).
func ParseResourceType(s string) ResourceType {
	return ResourceType(parseEnum(resourceTypeNames[:], s))
}

// ParsePatternType reads a name such as "prefixed" (UNKNOWN if none).
func ParsePatternType(s string) PatternType { return PatternType(parseEnum(patternTypeNames[:], s)) }

// ParseOperation reads a name such as "describe_configs" (UNKNOWN if none).
func ParseOperation(s string) Operation { return Operation(parseEnum(operationNames[:], s)) }

// ParsePermission reads "allow" or "deny" (UNKNOWN if neither).
func ParsePermission(s string) Permission { return Permission(parseEnum(permissionNames[:], s)) }

func camelCase(upperSnake string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(upperSnake, "_") {
		if part == "" {
			continue
		}
		b.WriteString(part[:1])
		b.WriteString(strings.ToLower(part[1:]))
	}
	return b.String()
}
