package acl

import (
	"testing"

	"github.com/kbroker/kbroker/security/principal"
)

func lit(typ ResourceType, name, who string, op Operation, perm Permission) Binding {
	return Binding{Pattern{typ, name, PatternLiteral}, Entry{who, Wildcard, op, perm}}
}

func pre(typ ResourceType, name, who string, op Operation, perm Permission) Binding {
	return Binding{Pattern{typ, name, PatternPrefixed}, Entry{who, Wildcard, op, perm}}
}

func onHost(b Binding, host string) Binding { b.Host = host; return b }

func req(user string) Request {
	return Request{Principal: principal.User(user), Host: "127.0.0.1", API: "Produce"}
}

func act(op Operation, typ ResourceType, name string) Action {
	return Action{Operation: op, Type: typ, Name: name, RefCount: 1, LogIfAllowed: true, LogIfDenied: true}
}

type authCase struct {
	name    string
	acls    []Binding
	cfg     Config
	req     Request
	act     Action
	allowed bool
	kind    RuleKind
}

func runAuthCases(t *testing.T, cases []authCase) {
	t.Helper()
	for _, c := range cases {
		d := Decide(&c.cfg, NewSet(c.acls), c.req, c.act)
		if d.Allowed != c.allowed || d.Kind != c.kind {
			t.Errorf("%s: got allowed=%v rule=%s, want allowed=%v kind=%d", c.name, d.Allowed, d.Rule(), c.allowed, c.kind)
		}
	}
}

// Modelled on Kafka's StandardAuthorizerTest and AclAuthorizerTest.
func TestDecideBasics(t *testing.T) {
	alice := "User:alice"
	runAuthCases(t, []authCase{
		{"literal allow", []Binding{lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpWrite, ResourceTopic, "a"), true, RuleMatchingACL},
		{"other topic: no ACL names b", []Binding{lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpWrite, ResourceTopic, "b"), false, RuleNoACLs},
		{"other operation", []Binding{lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
		{"other principal", []Binding{lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("bob"), act(OpWrite, ResourceTopic, "a"), false, RuleDefaultDeny},
		{"other resource type", []Binding{lit(ResourceGroup, "a", alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleNoACLs},
		{"principal type matters", []Binding{lit(ResourceTopic, "a", "Group:alice", OpWrite, Allow)}, Config{}, req("alice"), act(OpWrite, ResourceTopic, "a"), false, RuleDefaultDeny},
		{"ALL allows every operation", []Binding{lit(ResourceTopic, "a", alice, OpAll, Allow)}, Config{}, req("alice"), act(OpAlterConfigs, ResourceTopic, "a"), true, RuleMatchingACL},
		{"wildcard principal", []Binding{lit(ResourceTopic, "a", WildcardPrincipal, OpRead, Allow)}, Config{}, req("anyone"), act(OpRead, ResourceTopic, "a"), true, RuleMatchingACL},
		{"wildcard resource", []Binding{lit(ResourceTopic, Wildcard, alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "x"), true, RuleMatchingACL},
		{"prefixed", []Binding{pre(ResourceTopic, "fin-", alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fin-q1"), true, RuleMatchingACL},
		{"prefixed does not match shorter", []Binding{pre(ResourceTopic, "fin-", alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fin"), false, RuleNoACLs},
		{"prefixed equal name", []Binding{pre(ResourceTopic, "fin", alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fin"), true, RuleMatchingACL},
		{"literal is not a prefix", []Binding{lit(ResourceTopic, "fin", alice, OpRead, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fin-q1"), false, RuleNoACLs},
		{"cluster", []Binding{lit(ResourceCluster, ClusterName, alice, OpClusterAction, Allow)}, Config{}, req("alice"), act(OpClusterAction, ResourceCluster, ClusterName), true, RuleMatchingACL},
		{"transactional id", []Binding{pre(ResourceTransactionalID, "tx-", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpWrite, ResourceTransactionalID, "tx-1"), true, RuleMatchingACL},
		{"user resource", []Binding{lit(ResourceUser, "bob", alice, OpCreateTokens, Allow)}, Config{}, req("alice"), act(OpCreateTokens, ResourceUser, "bob"), true, RuleMatchingACL},
		{"delegation token", []Binding{lit(ResourceDelegationToken, "tok", alice, OpDescribe, Allow)}, Config{}, req("alice"), act(OpDescribe, ResourceDelegationToken, "tok"), true, RuleMatchingACL},
	})
}

func TestDecideDenyWins(t *testing.T) {
	alice := "User:alice"
	runAuthCases(t, []authCase{
		{"deny beats allow", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), lit(ResourceTopic, "a", alice, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleMatchingACL},
		{"wildcard principal deny beats user allow", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), lit(ResourceTopic, "a", WildcardPrincipal, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleMatchingACL},
		{"wildcard resource deny beats literal allow", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), lit(ResourceTopic, Wildcard, alice, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleMatchingACL},
		{"prefixed deny beats literal allow", []Binding{lit(ResourceTopic, "fooa", alice, OpRead, Allow), pre(ResourceTopic, "foo", alice, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fooa"), false, RuleMatchingACL},
		{"longer prefix deny", []Binding{pre(ResourceTopic, "foo", alice, OpRead, Allow), pre(ResourceTopic, "fooa", alice, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "fooa1"), false, RuleMatchingACL},
		{"longer prefix deny elsewhere", []Binding{pre(ResourceTopic, "foo", alice, OpRead, Allow), pre(ResourceTopic, "fooa", alice, OpRead, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "foob"), true, RuleMatchingACL},
		{"deny ALL", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), lit(ResourceTopic, "a", alice, OpAll, Deny)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleMatchingACL},
		{"deny on other host", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), onHost(lit(ResourceTopic, "a", alice, OpRead, Deny), "10.0.0.9")}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), true, RuleMatchingACL},
		{"deny on this host", []Binding{lit(ResourceTopic, "a", alice, OpRead, Allow), onHost(lit(ResourceTopic, "a", alice, OpRead, Deny), "127.0.0.1")}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleMatchingACL},
		{"allow on other host only", []Binding{onHost(lit(ResourceTopic, "a", alice, OpRead, Allow), "192.168.1.1")}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
	})
}

func TestDecideImplication(t *testing.T) {
	alice := "User:alice"
	var cases []authCase
	for _, op := range []Operation{OpRead, OpWrite, OpDelete, OpAlter, OpDescribe} {
		cases = append(cases, authCase{"ALLOW " + op.String() + " implies DESCRIBE", []Binding{lit(ResourceTopic, "a", alice, op, Allow)}, Config{}, req("alice"), act(OpDescribe, ResourceTopic, "a"), true, RuleMatchingACL})
	}
	for _, op := range []Operation{OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite} {
		cases = append(cases, authCase{"ALLOW " + op.String() + " does not imply DESCRIBE", []Binding{lit(ResourceTopic, "a", alice, op, Allow)}, Config{}, req("alice"), act(OpDescribe, ResourceTopic, "a"), false, RuleDefaultDeny})
	}
	cases = append(cases,
		authCase{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", []Binding{lit(ResourceTopic, "a", alice, OpAlterConfigs, Allow)}, Config{}, req("alice"), act(OpDescribeConfigs, ResourceTopic, "a"), true, RuleMatchingACL},
		authCase{"ALTER does not imply DESCRIBE_CONFIGS", []Binding{lit(ResourceTopic, "a", alice, OpAlter, Allow)}, Config{}, req("alice"), act(OpDescribeConfigs, ResourceTopic, "a"), false, RuleDefaultDeny},
		authCase{"DESCRIBE does not imply READ", []Binding{lit(ResourceTopic, "a", alice, OpDescribe, Allow)}, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
		authCase{"DENY READ does not deny DESCRIBE", []Binding{lit(ResourceTopic, "a", alice, OpRead, Deny), lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpDescribe, ResourceTopic, "a"), true, RuleMatchingACL},
		authCase{"DENY ALTER_CONFIGS does not deny DESCRIBE_CONFIGS", []Binding{lit(ResourceTopic, "a", alice, OpAlterConfigs, Deny), lit(ResourceTopic, "a", alice, OpDescribeConfigs, Allow)}, Config{}, req("alice"), act(OpDescribeConfigs, ResourceTopic, "a"), true, RuleMatchingACL},
		authCase{"DENY DESCRIBE denies DESCRIBE despite ALLOW WRITE", []Binding{lit(ResourceTopic, "a", alice, OpDescribe, Deny), lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpDescribe, ResourceTopic, "a"), false, RuleMatchingACL},
		authCase{"DENY DESCRIBE does not deny WRITE", []Binding{lit(ResourceTopic, "a", alice, OpDescribe, Deny), lit(ResourceTopic, "a", alice, OpWrite, Allow)}, Config{}, req("alice"), act(OpWrite, ResourceTopic, "a"), true, RuleMatchingACL},
	)
	runAuthCases(t, cases)
}

func TestDecideSuperUsersAndNoACLFound(t *testing.T) {
	super := Config{SuperUsers: ParseSuperUsers("User:admin; User:ops")}
	everyone := Config{AllowEveryoneIfNoACLFound: true}
	denyAll := []Binding{lit(ResourceTopic, Wildcard, WildcardPrincipal, OpAll, Deny)}
	other := []Binding{lit(ResourceTopic, "a", "User:bob", OpRead, Allow)}
	runAuthCases(t, []authCase{
		{"super user beats DENY", denyAll, super, req("ops"), act(OpWrite, ResourceTopic, "a"), true, RuleSuperUser},
		{"not a super user", denyAll, super, req("alice"), act(OpWrite, ResourceTopic, "a"), false, RuleMatchingACL},
		{"super user compares type", denyAll, Config{SuperUsers: []string{"Group:alice"}}, req("alice"), act(OpWrite, ResourceTopic, "a"), false, RuleMatchingACL},
		{"no ACLs, default deny", nil, Config{}, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleNoACLs},
		{"no ACLs, allow everyone", nil, everyone, req("alice"), act(OpRead, ResourceTopic, "a"), true, RuleNoACLs},
		{"ACL on another topic, allow everyone", other, everyone, req("alice"), act(OpRead, ResourceTopic, "b"), true, RuleNoACLs},
		{"ACL of another principal on the topic: denied", other, everyone, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
		{"ACL of another operation on the topic: denied", []Binding{lit(ResourceTopic, "a", "User:alice", OpWrite, Allow)}, everyone, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
		{"prefixed ACL counts as an ACL", []Binding{pre(ResourceTopic, "a", "User:bob", OpRead, Allow)}, everyone, req("alice"), act(OpRead, ResourceTopic, "ab"), false, RuleDefaultDeny},
		{"wildcard ACL counts as an ACL", []Binding{lit(ResourceTopic, Wildcard, "User:bob", OpRead, Allow)}, everyone, req("alice"), act(OpRead, ResourceTopic, "ab"), false, RuleDefaultDeny},
		{"ACL on another host counts as an ACL", []Binding{onHost(lit(ResourceTopic, "a", "User:alice", OpRead, Allow), "10.1.1.1")}, everyone, req("alice"), act(OpRead, ResourceTopic, "a"), false, RuleDefaultDeny},
	})
}

func TestDecideNotReady(t *testing.T) {
	cfg := Config{SuperUsers: []string{"User:admin"}, AllowEveryoneIfNoACLFound: true}
	if d := Decide(&cfg, nil, req("alice"), act(OpRead, ResourceTopic, "a")); d.Allowed || d.Kind != RuleNotReady {
		t.Fatalf("not loaded: %+v", d)
	}
	if d := Decide(&cfg, nil, req("admin"), act(OpRead, ResourceTopic, "a")); !d.Allowed {
		t.Fatalf("super user before load: %+v", d)
	}
}

func TestDecideManyACLs(t *testing.T) {
	var acls []Binding
	for i := range 5000 {
		acls = append(acls, lit(ResourceTopic, "t"+itoa(i), "User:u"+itoa(i%50), OpRead, Allow))
		acls = append(acls, pre(ResourceTopic, "p"+itoa(i)+"-", "User:u"+itoa(i%50), OpWrite, Allow))
	}
	acls = append(acls, pre(ResourceTopic, "p42", "User:u42", OpWrite, Deny))
	set := NewSet(acls)
	cfg := Config{}
	for _, c := range []struct {
		user, topic string
		op          Operation
		want        bool
	}{
		{"u7", "t107", OpRead, true},
		{"u8", "t107", OpRead, false},
		{"u7", "p107-x", OpWrite, true},
		{"u42", "p42-x", OpWrite, false}, // p42 prefix DENY
		{"u42", "p4200-x", OpWrite, false},
		{"u0", "p4200-x", OpWrite, true},
	} {
		if d := Decide(&cfg, set, req(c.user), act(c.op, ResourceTopic, c.topic)); d.Allowed != c.want {
			t.Errorf("%s %s %s: got %v (%s)", c.user, c.op, c.topic, d.Allowed, d.Rule())
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

func BenchmarkDecide10kACLs(b *testing.B) {
	var acls []Binding
	for i := range 5000 {
		acls = append(acls, lit(ResourceTopic, "t"+itoa(i), "User:u"+itoa(i%50), OpRead, Allow))
		acls = append(acls, pre(ResourceTopic, "p"+itoa(i)+"-", "User:u"+itoa(i%50), OpWrite, Allow))
	}
	set := NewSet(acls)
	cfg := Config{}
	r := req("u7")
	a := act(OpWrite, ResourceTopic, "p107-orders")
	b.ReportAllocs()
	for b.Loop() {
		Decide(&cfg, set, r, a)
	}
}
