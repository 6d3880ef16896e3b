package acl

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
)

func TestAuditLineKafkaText(t *testing.T) {
	r := Request{Principal: req("alice").Principal, Host: "127.0.0.1", API: "Produce"}
	acl := lit(ResourceTopic, "b", "User:alice", OpWrite, Deny)
	d := Decide(&Config{}, NewSet([]Binding{acl}), r, act(OpWrite, ResourceTopic, "b"))
	want := "Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = Topic:LITERAL:b " +
		"for request = Produce with resourceRefCount = 1 based on rule MatchingAcl(acl=StandardAcl(resourceType=TOPIC, " +
		"resourceName=b, patternType=LITERAL, principal=User:alice, host=*, operation=WRITE, permissionType=DENY))"
	if got := AuditLine(r, act(OpWrite, ResourceTopic, "b"), d); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	tx := AuditLine(r, act(OpWrite, ResourceTransactionalID, "t"), Decision{Kind: RuleNoACLs})
	if !strings.Contains(tx, "on resource = TransactionalId:LITERAL:t ") || !strings.HasSuffix(tx, "based on rule DefaultDeny") {
		t.Fatalf("got %s", tx)
	}
}

func TestAuthorizerLogsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	denials := 0
	a := NewAuthorizer(Config{}, Options{
		Log:    slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})),
		OnDeny: func(Request, Action) { denials++ },
	})
	a.SetACLs(NewSet([]Binding{lit(ResourceTopic, "a", "User:alice", OpWrite, Allow)}))
	got := a.Authorize(req("alice"), act(OpWrite, ResourceTopic, "a"), act(OpWrite, ResourceTopic, "b"))
	if !got[0] || got[1] {
		t.Fatalf("decisions %v", got)
	}
	filtering := act(OpDescribe, ResourceTopic, "c")
	filtering.LogIfDenied = false
	a.Allowed(req("alice"), filtering)
	if denials != 2 {
		t.Fatalf("denials = %d, want 2", denials)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "is Denied operation = WRITE") ||
		!strings.Contains(lines[0], "Topic:LITERAL:b") {
		t.Fatalf("log:\n%s", buf.String())
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	u := "User:alice"
	for _, c := range []struct {
		name     string
		acls     []Binding
		everyone bool
		want     bool
	}{
		{"no ACLs", nil, false, false},
		{"no ACLs, allow everyone", nil, true, true},
		{"literal allow", []Binding{lit(ResourceTopic, "t1", u, OpWrite, Allow)}, false, true},
		{"allow ALL", []Binding{lit(ResourceTopic, "t1", u, OpAll, Allow)}, false, true},
		{"other operation", []Binding{lit(ResourceTopic, "t1", u, OpRead, Allow)}, false, false},
		{"other principal", []Binding{lit(ResourceTopic, "t1", "User:bob", OpWrite, Allow)}, false, false},
		{"wildcard principal", []Binding{lit(ResourceTopic, "t1", WildcardPrincipal, OpWrite, Allow)}, false, true},
		{"other host", []Binding{onHost(lit(ResourceTopic, "t1", u, OpWrite, Allow), "10.0.0.1")}, false, false},
		{"literal allow, same literal deny", []Binding{lit(ResourceTopic, "t1", u, OpWrite, Allow), lit(ResourceTopic, "t1", u, OpWrite, Deny)}, false, false},
		{"literal allow, prefix deny", []Binding{lit(ResourceTopic, "t1", u, OpWrite, Allow), pre(ResourceTopic, "t", u, OpWrite, Deny)}, false, false},
		{"prefix allow, shorter prefix deny", []Binding{pre(ResourceTopic, "abc", u, OpWrite, Allow), pre(ResourceTopic, "a", u, OpWrite, Deny)}, false, false},
		{"prefix allow, longer prefix deny", []Binding{pre(ResourceTopic, "a", u, OpWrite, Allow), pre(ResourceTopic, "abc", u, OpWrite, Deny)}, false, true},
		{"prefix allow, literal deny of the same name", []Binding{pre(ResourceTopic, "abc", u, OpWrite, Allow), lit(ResourceTopic, "abc", u, OpWrite, Deny)}, false, true},
		{"wildcard allow", []Binding{lit(ResourceTopic, Wildcard, u, OpWrite, Allow)}, false, true},
		{"wildcard deny", []Binding{lit(ResourceTopic, "t1", u, OpWrite, Allow), lit(ResourceTopic, Wildcard, u, OpWrite, Deny)}, false, false},
		{"wildcard allow and wildcard deny", []Binding{lit(ResourceTopic, Wildcard, u, OpWrite, Allow), lit(ResourceTopic, Wildcard, WildcardPrincipal, OpWrite, Deny)}, false, false},
		{"two allows, one denied", []Binding{lit(ResourceTopic, "t1", u, OpWrite, Allow), lit(ResourceTopic, "t2", u, OpWrite, Allow), lit(ResourceTopic, "t1", u, OpWrite, Deny)}, false, true},
		{"group ACLs do not count", []Binding{lit(ResourceGroup, "g", u, OpWrite, Allow)}, false, false},
	} {
		a := NewAuthorizer(Config{AllowEveryoneIfNoACLFound: c.everyone}, Options{})
		a.SetACLs(NewSet(c.acls))
		if got := a.AuthorizeByResourceType(req("alice"), OpWrite, ResourceTopic); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
	a := NewAuthorizer(Config{SuperUsers: []string{"User:alice"}}, Options{})
	a.SetACLs(NewSet([]Binding{lit(ResourceTopic, Wildcard, WildcardPrincipal, OpAll, Deny)}))
	if !a.AuthorizeByResourceType(req("alice"), OpWrite, ResourceTopic) {
		t.Error("super user denied")
	}
}

func TestAuthorizedOperations(t *testing.T) {
	a := NewAuthorizer(Config{}, Options{})
	a.SetACLs(NewSet([]Binding{
		lit(ResourceTopic, "a", "User:alice", OpWrite, Allow),
		lit(ResourceTopic, "a", "User:alice", OpAlterConfigs, Allow),
	}))
	got := a.AuthorizedOperations(req("alice"), ResourceTopic, "a")
	want := int32(1<<OpWrite | 1<<OpDescribe | 1<<OpAlterConfigs | 1<<OpDescribeConfigs)
	if got != want {
		t.Fatalf("got %b, want %b", got, want)
	}
	super := NewAuthorizer(Config{SuperUsers: []string{"User:root"}}, Options{})
	super.SetACLs(NewSet(nil))
	if got := super.AuthorizedOperations(req("root"), ResourceGroup, "g"); got != 1<<OpRead|1<<OpDescribe|1<<OpDelete|1<<OpDescribeConfigs|1<<OpAlterConfigs {
		t.Fatalf("super user group ops %b", got)
	}
}

func TestHostAddressJavaForm(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"::1":              "0:0:0:0:0:0:0:1",
		"::ffff:10.1.2.3":  "10.1.2.3",
		"fe80::1%eth0":     "fe80:0:0:0:0:0:0:1%eth0",
		"2001:db8::ab:cd0": "2001:db8:0:0:0:0:ab:cd0",
	} {
		if got := HostAddress(netip.MustParseAddr(in)); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

func TestEnumNames(t *testing.T) {
	if ResourceDelegationToken.LogName() != "DelegationToken" || ResourceCluster.LogName() != "Cluster" {
		t.Fatal(ResourceDelegationToken.LogName())
	}
	if ParseOperation("describe_configs") != OpDescribeConfigs || ParseOperation("nope") != OpUnknown {
		t.Fatal("ParseOperation")
	}
	if OperationFromCode(99) != OpUnknown || ResourceTypeFromCode(-1) != ResourceUnknown || PatternTypeFromCode(5) != PatternUnknown {
		t.Fatal("FromCode")
	}
	if Operation(99).String() != "UNKNOWN(99)" {
		t.Fatal(Operation(99).String())
	}
}
