package scram

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes of the SCRAM admin APIs.
const (
	codeUnsupportedSaslMechanism int16 = 33
	codeResourceNotFound         int16 = 91
	codeDuplicateResource        int16 = 92
	codeUnacceptableCredential   int16 = 93
)

// Upsert is a credential to store, derived from an upsertion.
type Upsert struct {
	User       string
	Mechanism  Mechanism
	Credential Credential
}

// Delete is a credential to remove.
type Delete struct {
	User      string
	Mechanism Mechanism
}

// AlterPlan is what an AlterUserScramCredentials request changes (one
// atomic batch of metadata records) and its per-user results.
type AlterPlan struct {
	Upserts []Upsert
	Deletes []Delete
	Results []kmsg.AlterUserSCRAMCredentialsResponseResult
}

// PlanAlter is ScramControlManager.alterCredentials as a pure function:
// every user named twice in the request fails with DUPLICATE_RESOURCE;
// deletions of missing credentials with RESOURCE_NOT_FOUND; unknown
// mechanisms UNSUPPORTED_SASL_MECHANISM; empty names and iterations
// outside [4096, 16384] UNACCEPTABLE_CREDENTIAL. Upsertions carry the salt
// and salted password; the stored and server keys are derived here.
// exists reports whether a user has a credential for a mechanism.
func PlanAlter(req *kmsg.AlterUserSCRAMCredentialsRequest, exists func(user string, m Mechanism) bool) AlterPlan {
	p := planner{exists: exists, deletes: map[string]Delete{}, upserts: map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}, errs: map[string]result{}}
	for _, d := range req.Deletions {
		p.deletion(d)
	}
	for _, u := range req.Upsertions {
		p.upsertion(u)
	}
	return p.plan(req)
}

type result struct {
	code int16
	msg  string
}

type planner struct {
	exists  func(string, Mechanism) bool
	deletes map[string]Delete
	upserts map[string]kmsg.AlterUserSCRAMCredentialsRequestUpsertion
	errs    map[string]result
}

const twiceMsg = "A user credential cannot be altered twice in the same request"

func (p *planner) deletion(d kmsg.AlterUserSCRAMCredentialsRequestDeletion) {
	if _, failed := p.errs[d.Name]; failed {
		return
	}
	if _, dup := p.deletes[d.Name]; dup {
		delete(p.deletes, d.Name)
		p.errs[d.Name] = result{codeDuplicateResource, twiceMsg}
		return
	}
	m := MechanismFromCode(d.Mechanism)
	if r, bad := validateName(d.Name, m); bad {
		p.errs[d.Name] = r
		return
	}
	if !p.exists(d.Name, m) {
		p.errs[d.Name] = result{codeResourceNotFound, "Attempt to delete a user credential that does not exist"}
		return
	}
	p.deletes[d.Name] = Delete{User: d.Name, Mechanism: m}
}

func (p *planner) upsertion(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) {
	if _, failed := p.errs[u.Name]; failed {
		return
	}
	_, dupDel := p.deletes[u.Name]
	_, dupUp := p.upserts[u.Name]
	if dupDel || dupUp {
		delete(p.deletes, u.Name)
		delete(p.upserts, u.Name)
		p.errs[u.Name] = result{codeDuplicateResource, twiceMsg}
		return
	}
	if r, bad := validateUpsertion(u); bad {
		p.errs[u.Name] = r
		return
	}
	p.upserts[u.Name] = u
}

func validateName(name string, m Mechanism) (result, bool) {
	if name == "" {
		return result{codeUnacceptableCredential, "Username must not be empty"}, true
	}
	if m == Unknown {
		return result{codeUnsupportedSaslMechanism, "Unknown SCRAM mechanism"}, true
	}
	return result{}, false
}

func validateUpsertion(u kmsg.AlterUserSCRAMCredentialsRequestUpsertion) (result, bool) {
	if r, bad := validateName(u.Name, MechanismFromCode(u.Mechanism)); bad {
		return r, true
	}
	switch {
	case u.Iterations < MinIterations:
		return result{codeUnacceptableCredential, "Too few iterations"}, true
	case u.Iterations > MaxIterations:
		return result{codeUnacceptableCredential, "Too many iterations"}, true
	}
	return result{}, false
}

// plan emits results in Kafka's order: deletions, upsertions, then errors;
// within each, in request order.
func (p *planner) plan(req *kmsg.AlterUserSCRAMCredentialsRequest) AlterPlan {
	var out AlterPlan
	ok := func(user string) {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		out.Results = append(out.Results, r)
	}
	for _, d := range req.Deletions {
		if del, kept := p.deletes[d.Name]; kept && del.Mechanism == MechanismFromCode(d.Mechanism) {
			out.Deletes = append(out.Deletes, del)
			ok(d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if up, kept := p.upserts[u.Name]; kept && up.Mechanism == u.Mechanism {
			m := MechanismFromCode(u.Mechanism)
			cred := FromSaltedPassword(m, u.Salt, u.SaltedPassword, int(u.Iterations))
			out.Upserts = append(out.Upserts, Upsert{User: u.Name, Mechanism: m, Credential: cred})
			ok(u.Name)
		}
	}
	seen := map[string]bool{}
	for _, name := range requestNames(req) {
		if r, failed := p.errs[name]; failed && !seen[name] {
			seen[name] = true
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = name, r.code
			res.ErrorMessage = &r.msg
			out.Results = append(out.Results, res)
		}
	}
	return out
}

func requestNames(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var names []string
	for _, d := range req.Deletions {
		names = append(names, d.Name)
	}
	for _, u := range req.Upsertions {
		names = append(names, u.Name)
	}
	return names
}

// Describe answers DescribeUserScramCredentials as Kafka's broker does
// from its metadata image: no users named means every user with a
// credential; a user named twice gets DUPLICATE_RESOURCE, a user without
// credentials RESOURCE_NOT_FOUND. list returns a user's credentials, users
// every user that has one.
func Describe(req *kmsg.DescribeUserSCRAMCredentialsRequest, users func() []string, list func(user string) []Info) []kmsg.DescribeUserSCRAMCredentialsResponseResult {
	var out []kmsg.DescribeUserSCRAMCredentialsResponseResult
	if len(req.Users) == 0 {
		for _, u := range users() {
			out = append(out, describeUser(u, list(u)))
		}
		return out
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		switch infos := list(u.Name); {
		case count[u.Name] > 1:
			r.ErrorCode = codeDuplicateResource
			r.ErrorMessage = ptr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
		case len(infos) == 0:
			r.ErrorCode = codeResourceNotFound
			r.ErrorMessage = ptr("Attempt to describe a user credential that does not exist: " + u.Name)
		default:
			r = describeUser(u.Name, infos)
		}
		out = append(out, r)
	}
	return out
}

func describeUser(user string, infos []Info) kmsg.DescribeUserSCRAMCredentialsResponseResult {
	r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	r.User = user
	for _, i := range infos {
		ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		ci.Mechanism, ci.Iterations = int8(i.Mechanism), int32(i.Iterations)
		r.CredentialInfos = append(r.CredentialInfos, ci)
	}
	return r
}

func ptr(s string) *string { return &s }
