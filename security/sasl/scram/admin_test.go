package scram

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func upsertion(name string, mech int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = name, mech, iterations
	u.Salt = []byte("salt")
	u.SaltedPassword, _ = SaltedPassword(MechanismFromCode(mech), "pw", u.Salt, int(iterations))
	return u
}

func deletion(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = name, mech
	return d
}

func results(p AlterPlan) map[string]int16 {
	out := map[string]int16{}
	for _, r := range p.Results {
		out[r.User] = r.ErrorCode
	}
	return out
}

// Cases from Kafka's ScramControlManagerTest and the AlterUserScramCredentials
// request tests.
func TestPlanAlter(t *testing.T) {
	exists := func(user string, m Mechanism) bool { return user == "old" && m == SHA256 }
	req := kmsg.NewAlterUserSCRAMCredentialsRequest()
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		deletion("old", 1), deletion("missing", 1), deletion("", 1), deletion("badmech", 9), deletion("twice", 1),
	}
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		upsertion("alice", 1, 8192), upsertion("bob", 2, 4096), upsertion("few", 1, 4095), upsertion("many", 1, 16385),
		upsertion("twice", 1, 4096), upsertion("unknown", 0, 4096),
	}
	plan := PlanAlter(&req, func(u string, m Mechanism) bool { return exists(u, m) || u == "twice" })
	want := map[string]int16{"old": 0, "alice": 0, "bob": 0, "missing": 91, "": 93, "badmech": 33, "twice": 92, "few": 93, "many": 93, "unknown": 33}
	got := results(plan)
	for u, code := range want {
		if c, ok := got[u]; !ok || c != code {
			t.Errorf("%q: code %d (present %v), want %d", u, c, ok, code)
		}
	}
	if len(plan.Results) != len(want) {
		t.Errorf("%d results, want %d", len(plan.Results), len(want))
	}
	if len(plan.Deletes) != 1 || plan.Deletes[0] != (Delete{"old", SHA256}) {
		t.Errorf("deletes %+v", plan.Deletes)
	}
	if len(plan.Upserts) != 2 || plan.Upserts[0].User != "alice" || plan.Upserts[1].Mechanism != SHA512 {
		t.Fatalf("upserts %+v", plan.Upserts)
	}
	for _, r := range plan.Results {
		if r.User == "few" && *r.ErrorMessage != "Too few iterations" || r.User == "twice" && *r.ErrorMessage != twiceMsg {
			t.Errorf("%s: message %q", r.User, *r.ErrorMessage)
		}
	}
	// The upserted credential verifies the password the client salted.
	want256, _ := NewCredential(SHA256, "pw", []byte("salt"), 8192)
	if got := plan.Upserts[0].Credential; !bytes.Equal(got.StoredKey, want256.StoredKey) || !bytes.Equal(got.ServerKey, want256.ServerKey) {
		t.Fatal("derived keys differ from the password's")
	}
}

func TestPlanAlterSameUserTwoMechanismsIsDuplicate(t *testing.T) {
	req := kmsg.NewAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, upsertion("alice", 1, 4096), upsertion("alice", 2, 4096))
	plan := PlanAlter(&req, func(string, Mechanism) bool { return false })
	if len(plan.Upserts) != 0 || len(plan.Results) != 1 || plan.Results[0].ErrorCode != 92 {
		t.Fatalf("%+v", plan)
	}
}

func TestDescribe(t *testing.T) {
	s := NewMemStore()
	c, _ := NewCredential(SHA256, "pw", []byte("s"), 4096)
	s.Set("alice", SHA256, c)
	s.Set("alice", SHA512, c)
	s.Set("bob", SHA512, c)
	all := Describe(&kmsg.DescribeUserSCRAMCredentialsRequest{}, s.Users, s.Describe)
	if len(all) != 2 || all[0].User != "alice" || len(all[0].CredentialInfos) != 2 || all[0].CredentialInfos[1].Mechanism != 2 {
		t.Fatalf("all %+v", all)
	}
	req := kmsg.NewDescribeUserSCRAMCredentialsRequest()
	for _, n := range []string{"bob", "nobody", "alice", "alice"} {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = n
		req.Users = append(req.Users, u)
	}
	got := Describe(&req, s.Users, s.Describe)
	if len(got) != 3 || got[0].ErrorCode != 0 || got[1].ErrorCode != 91 || got[2].ErrorCode != 92 ||
		*got[1].ErrorMessage != "Attempt to describe a user credential that does not exist: nobody" {
		t.Fatalf("got %+v", got)
	}
}

func TestParseAddScram(t *testing.T) {
	b, err := ParseAddScram("SCRAM-SHA-256=[name=alice,password=alice-secret]", rand.Reader)
	if err != nil || b.User != "alice" || b.Mechanism != SHA256 || b.Credential.Iterations != 4096 || len(b.Credential.Salt) != 32 {
		t.Fatalf("%+v %v", b, err)
	}
	want, _ := NewCredential(SHA512, "p,w", []byte("salt"), 8192)
	b, err = ParseAddScram(`SCRAM-SHA-512=[name=alice,iterations=8192,salt="c2FsdA==",password="p,w"]`, rand.Reader)
	if err != nil || !bytes.Equal(b.Credential.StoredKey, want.StoredKey) {
		t.Fatalf("%+v %v", b, err)
	}
	salted, _ := SaltedPassword(SHA512, "p,w", []byte("salt"), 8192)
	enc := "SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"c2FsdA==\",saltedpassword=\"" + b64(salted) + "\"]"
	if b, err = ParseAddScram(enc, rand.Reader); err != nil || !bytes.Equal(b.Credential.ServerKey, want.ServerKey) {
		t.Fatalf("salted: %+v %v", b, err)
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=b]",
		"SCRAM-SHA-256=name=a,password=b",
		"SCRAM-SHA-256=[password=s3cr3tpw]",
		"SCRAM-SHA-256=[name=a]",
		"SCRAM-SHA-256=[name=a,password=s3cr3tpw,saltedpassword=eA==,salt=eA==]",
		"SCRAM-SHA-256=[name=a,saltedpassword=eA==]",
		"SCRAM-SHA-256=[name=a,password=s3cr3tpw,iterations=100]",
		"SCRAM-SHA-256=[name=a,password=\"s3cr3tpw]",
		"SCRAM-SHA-256=[name=a,name=b,password=s3cr3tpw]",
	} {
		_, err := ParseAddScram(bad, rand.Reader)
		if err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "s3cr3tpw") {
			t.Errorf("%q: password in %v", bad, err)
		}
	}
}

func TestCredentialFormattingHidesSecrets(t *testing.T) {
	c, _ := NewCredential(SHA256, "pw", []byte("salty"), 4096)
	for _, s := range []string{c.String(), c.GoString()} {
		if strings.Contains(s, "salty") || !strings.Contains(s, "[hidden]") {
			t.Fatal(s)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
