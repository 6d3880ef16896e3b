package acl

import (
	"strings"

	"github.com/kbroker/kbroker/security/principal"
)

// Config is the authorizer's static configuration.
type Config struct {
	// SuperUsers are principals in "Type:Name" form (super.users) allowed
	// everything, whatever the ACLs say.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found: allow
	// an action on a resource that no ACL at all applies to.
	AllowEveryoneIfNoACLFound bool
}

// ParseSuperUsers splits super.users, a semicolon-separated list.
func ParseSuperUsers(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ";") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (c *Config) isSuperUser(p principal.Principal) bool {
	s := p.String()
	for _, u := range c.SuperUsers {
		if u == s {
			return true
		}
	}
	return false
}

// Request is who asks: the connection's principal and client address (in
// Java's form, see HostAddress) and the API, for the log.
type Request struct {
	Principal principal.Principal
	Host      string
	API       string // Kafka's API name, e.g. "Produce"
}

// Action is one operation on one LITERAL resource, as Kafka's Action.
type Action struct {
	Operation Operation
	Type      ResourceType
	Name      string
	// RefCount is how many times the request names the resource (logged).
	RefCount int
	// LogIfAllowed logs an allow at debug level: access is granted.
	LogIfAllowed bool
	// LogIfDenied logs a denial at info level: the client asked for this
	// resource by name. False for filtering (Metadata of all topics,
	// authorized operations), which logs at trace level only.
	LogIfDenied bool
}

// RuleKind says which rule decided.
type RuleKind int

const (
	RuleDefaultDeny RuleKind = iota // ACLs apply to the resource, none allows
	RuleNoACLs                      // no ACL applies: allow.everyone.if.no.acl.found decides
	RuleMatchingACL                 // an ACL decided (ACL holds it)
	RuleSuperUser
	RuleNotReady // the authorizer has no ACLs loaded yet
)

// Decision is the result of one authorization.
type Decision struct {
	Allowed bool
	Kind    RuleKind
	ACL     Binding // for RuleMatchingACL
}

// Rule is the rule as Kafka's authorizer log prints it.
func (d Decision) Rule() string {
	switch d.Kind {
	case RuleSuperUser:
		return "SuperUser"
	case RuleMatchingACL:
		return "MatchingAcl(acl=" + d.ACL.String() + ")"
	case RuleNotReady:
		return "AuthorizerNotReady"
	}
	if d.Allowed {
		return "DefaultAllow"
	}
	return "DefaultDeny"
}

// Decide is StandardAuthorizerData.authorize as a pure function: super
// users are allowed; otherwise the first DENY ACL that applies denies, else
// an ALLOW that applies allows, else the default: allow.everyone.if.no.acl.found
// when no ACL at all names the resource, DENY when some do. A nil set means
// the ACLs are not loaded: only super users are allowed.
func Decide(cfg *Config, set *Set, req Request, act Action) Decision {
	if cfg.isSuperUser(req.Principal) {
		return Decision{Allowed: true, Kind: RuleSuperUser}
	}
	if set == nil {
		return Decision{Kind: RuleNotReady}
	}
	var allow, deny *Binding
	hasACLs := false
	set.visit(act.Type, act.Name, func(b Binding) bool {
		hasACLs = true
		switch entryResult(b, req, act.Operation) {
		case Allow:
			allow = &b
		case Deny:
			deny = &b
			return false
		}
		return true
	})
	switch {
	case deny != nil:
		return Decision{Kind: RuleMatchingACL, ACL: *deny}
	case allow != nil:
		return Decision{Allowed: true, Kind: RuleMatchingACL, ACL: *allow}
	case !hasACLs:
		return Decision{Allowed: cfg.AllowEveryoneIfNoACLFound, Kind: RuleNoACLs}
	}
	return Decision{Kind: RuleDefaultDeny}
}

// entryResult is StandardAuthorizerData.findResult: ALLOW or DENY when the
// ACL applies to who asks and what they do, UNKNOWN when it does not.
// Only ALLOW ACLs imply: READ, WRITE, DELETE and ALTER imply DESCRIBE,
// ALTER_CONFIGS implies DESCRIBE_CONFIGS; a DENY READ does not deny DESCRIBE.
func entryResult(b Binding, req Request, op Operation) Permission {
	if !matchesPrincipal(b.Principal, req.Principal) {
		return PermissionUnknown
	}
	if b.Host != Wildcard && b.Host != req.Host {
		return PermissionUnknown
	}
	if b.Operation != OpAll && !operationApplies(b, op) {
		return PermissionUnknown
	}
	return b.Permission
}

func operationApplies(b Binding, op Operation) bool {
	if b.Permission != Allow {
		return b.Operation == op
	}
	switch op {
	case OpDescribe:
		switch b.Operation {
		case OpDescribe, OpRead, OpWrite, OpDelete, OpAlter:
			return true
		}
		return false
	case OpDescribeConfigs:
		return b.Operation == OpDescribeConfigs || b.Operation == OpAlterConfigs
	}
	return b.Operation == op
}
