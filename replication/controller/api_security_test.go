package controller

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

func aclCreation(typ acl.ResourceType, name string, pattern acl.PatternType, principal string, op acl.Operation, perm acl.Permission) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(typ), name, kmsg.ACLResourcePatternType(pattern)
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	return c
}

// CreateAcls stores valid bindings under new ids (a duplicate once),
// refuses invalid ones per binding; DeleteAcls removes what its filters
// match and reports each match; snapshots keep the ACLs.
func TestCreateAndDeleteAcls(t *testing.T) {
	h := newCtlHarness(t)
	create := kmsg.NewPtrCreateACLsRequest()
	create.SetVersion(3)
	create.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(acl.ResourceTopic, "orders", acl.PatternLiteral, "User:alice", acl.OpWrite, acl.Allow),
		aclCreation(acl.ResourceTopic, "orders", acl.PatternLiteral, "User:alice", acl.OpWrite, acl.Allow),
		aclCreation(acl.ResourceTopic, "app-", acl.PatternPrefixed, "User:bob", acl.OpRead, acl.Allow),
		aclCreation(acl.ResourceTopic, "x", acl.PatternLiteral, "alice", acl.OpRead, acl.Allow), // no principal type
		aclCreation(acl.ResourceCluster, "kafka-cluster", acl.PatternLiteral, "User:ops", acl.OpAlter, acl.Deny),
	}
	res := h.do(create).(*kmsg.CreateACLsResponse).Results
	want := []int16{0, 0, 0, kerr.InvalidRequest.Code, 0}
	for i, r := range res {
		if r.ErrorCode != want[i] {
			t.Errorf("creation %d: %v %v, want %v", i, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), kerr.ErrorForCode(want[i]))
		}
	}
	set := h.img().ACLSet
	if set.Len() != 3 || len(h.img().acls) != 3 {
		t.Fatalf("ACLs after create: set %d, by id %d, want 3", set.Len(), len(h.img().acls))
	}
	if again := h.do(create).(*kmsg.CreateACLsResponse); len(h.img().acls) != 3 || again.Results[0].ErrorCode != 0 {
		t.Fatalf("creating the same bindings again: %d ACLs, %+v", len(h.img().acls), again.Results[0])
	}
	checkSnapshotRoundTrip(t, h.img())

	del := kmsg.NewPtrDeleteACLsRequest()
	del.SetVersion(3)
	topics := kmsg.NewDeleteACLsRequestFilter()
	topics.ResourceType, topics.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	topics.Operation, topics.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	bob := topics
	bob.Principal = kmsg.StringPtr("User:bob")
	bad := topics
	bad.Operation = kmsg.ACLOperationUnknown
	del.Filters = []kmsg.DeleteACLsRequestFilter{topics, bob, bad}
	out := h.do(del).(*kmsg.DeleteACLsResponse).Results
	if len(out[0].MatchingACLs) != 2 || len(out[1].MatchingACLs) != 1 || out[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete results: %+v", out)
	}
	if left := h.img().ACLSet.Bindings(); len(left) != 1 || left[0].Type != acl.ResourceCluster {
		t.Fatalf("left after delete: %v", left)
	}
	checkSnapshotRoundTrip(t, h.img())
}

// AlterUserScramCredentials stores salted credentials; a deletion of a
// missing one fails per user; bootstrap credentials come with the
// cluster id.
func TestAlterUserScramCredentialsAndBootstrap(t *testing.T) {
	boot, err := scram.ParseAddScram("SCRAM-SHA-256=[name=admin,password=admin-secret]", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := newCtlHarness(t, func(o *Options) { o.BootstrapScram = []scram.Bootstrap{boot} })
	if c, ok := h.img().Credential(scram.SHA256, "admin"); !ok || c.Iterations != 4096 {
		t.Fatalf("bootstrap credential: %v %v", c, ok)
	}
	salt := []byte("0123456789abcdef")
	salted, err := scram.SaltedPassword(scram.SHA512, "alice-secret", salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "alice", Mechanism: 2, Iterations: 8192, Salt: salt, SaltedPassword: salted}}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "carol", Mechanism: 1}}
	res := h.do(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results
	codes := map[string]int16{}
	for _, r := range res {
		codes[r.User] = r.ErrorCode
	}
	if codes["alice"] != 0 || codes["carol"] != kerr.ResourceNotFound.Code {
		t.Fatalf("results: %+v", res)
	}
	want, _ := scram.NewCredential(scram.SHA512, "alice-secret", salt, 8192)
	got, ok := h.img().Credential(scram.SHA512, "alice")
	if !ok || !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) {
		t.Fatalf("stored credential differs from the password's")
	}
	if users := h.img().ScramUsers(); len(users) != 2 {
		t.Fatalf("users = %v", users)
	}
	checkSnapshotRoundTrip(t, h.img())

	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 2}}
	if res := h.do(req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results; res[0].ErrorCode != 0 {
		t.Fatalf("delete alice: %+v", res)
	}
	if _, ok := h.img().Credential(scram.SHA512, "alice"); ok {
		t.Fatal("alice's credential survived its deletion")
	}
}

func checkSnapshotRoundTrip(t *testing.T, img *Image) {
	t.Helper()
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	back, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bindingsOf(back.ACLSet), bindingsOf(img.ACLSet); len(got) != len(want) {
		t.Fatalf("snapshot ACLs: %v, want %v", got, want)
	}
	for k, c := range img.ScramCredentials {
		if b, ok := back.Credential(k.Mechanism, k.User); !ok || !bytes.Equal(b.StoredKey, c.StoredKey) {
			t.Fatalf("snapshot lost the credential of %v", k)
		}
	}
}

// Records that do not describe a valid ACL or credential are refused
// whole, leaving the image as it was.
func TestSecurityRecordsValidated(t *testing.T) {
	tf := newTestFSM(t)
	for _, rec := range []record{
		&accessControlEntryRecord{ID: uuid{1}, ResourceType: 99, ResourceName: "t", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3},
		&removeAccessControlEntryRecord{ID: uuid{2}},
		&userScramCredentialRecord{Name: "a", Mechanism: 1, Iterations: 10, Salt: []byte{1}, StoredKey: []byte{1}, ServerKey: []byte{1}},
		&removeUserScramCredentialRecord{Name: "nobody", Mechanism: 1},
	} {
		if err := tf.tryApply(rec); err == nil {
			t.Errorf("%s applied", rec.kind())
		}
	}
	if tf.img().ACLSet != nil || len(tf.img().ScramCredentials) != 0 {
		t.Fatal("a refused record changed the image")
	}
}

func bindingsOf(s *acl.Set) []acl.Binding {
	if s == nil {
		return nil
	}
	return s.Bindings()
}
