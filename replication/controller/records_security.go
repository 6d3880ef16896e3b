package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// ACL and SCRAM records, Kafka's KRaft records under their names:
//
//	{"type":"AccessControlEntry","v":1,"id":"...","resourceType":2,"resourceName":"orders",
//	 "patternType":3,"principal":"User:alice","host":"*","operation":4,"permissionType":3}
//	{"type":"RemoveAccessControlEntry","v":1,"id":"..."}
//	{"type":"UserScramCredential","v":1,"name":"alice","mechanism":1,"salt":"<base64>",
//	 "storedKey":"<base64>","serverKey":"<base64>","iterations":4096}
//	{"type":"RemoveUserScramCredential","v":1,"name":"alice","mechanism":1}
//
// Codes are Kafka's wire codes (ResourceType, PatternType, AclOperation,
// AclPermissionType, ScramMechanism). Credentials are stored salted, as
// Kafka stores them: never the password or the salted password.

// accessControlEntryRecord adds one ACL under a new id.
type accessControlEntryRecord struct {
	ID             uuid   `json:"id"`
	ResourceType   int8   `json:"resourceType"`
	ResourceName   string `json:"resourceName"`
	PatternType    int8   `json:"patternType"`
	Principal      string `json:"principal"`
	Host           string `json:"host"`
	Operation      int8   `json:"operation"`
	PermissionType int8   `json:"permissionType"`
}

// removeAccessControlEntryRecord removes the ACL with id.
type removeAccessControlEntryRecord struct {
	ID uuid `json:"id"`
}

// userScramCredentialRecord sets (adds or replaces) a user's credential
// for one mechanism.
type userScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"`
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// removeUserScramCredentialRecord removes a user's credential for one
// mechanism.
type removeUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

func (*accessControlEntryRecord) kind() string        { return "AccessControlEntry" }
func (*removeAccessControlEntryRecord) kind() string  { return "RemoveAccessControlEntry" }
func (*userScramCredentialRecord) kind() string       { return "UserScramCredential" }
func (*removeUserScramCredentialRecord) kind() string { return "RemoveUserScramCredential" }

// ScramKey names one stored SCRAM credential.
type ScramKey struct {
	User      string
	Mechanism scram.Mechanism
}

func newACLRecord(id uuid, b acl.Binding) *accessControlEntryRecord {
	return &accessControlEntryRecord{ID: id, ResourceType: int8(b.Type), ResourceName: b.Name,
		PatternType: int8(b.Pattern.Pattern), Principal: b.Principal, Host: b.Host,
		Operation: int8(b.Operation), PermissionType: int8(b.Permission)}
}

func (r *accessControlEntryRecord) binding() acl.Binding {
	return acl.Binding{
		Pattern: acl.Pattern{Type: acl.ResourceTypeFromCode(r.ResourceType), Name: r.ResourceName,
			Pattern: acl.PatternTypeFromCode(r.PatternType)},
		Entry: acl.Entry{Principal: r.Principal, Host: r.Host, Operation: acl.OperationFromCode(r.Operation),
			Permission: acl.PermissionFromCode(r.PermissionType)},
	}
}

func (r *accessControlEntryRecord) apply(b *imageBuilder, _ uint64) error {
	if r.ID == (uuid{}) {
		return recordErr("ACL id is zero")
	}
	if _, ok := b.img.acls[r.ID]; ok {
		return recordErr("ACL id %s is taken", r.ID)
	}
	binding := r.binding()
	if e := binding.Validate(1); e != nil {
		return recordErr("ACL %s: %s", binding, e.Message)
	}
	b.aclsForWrite()[r.ID] = binding
	return nil
}

func (r *removeAccessControlEntryRecord) apply(b *imageBuilder, _ uint64) error {
	if _, ok := b.img.acls[r.ID]; !ok {
		return recordErr("no ACL with id %s", r.ID)
	}
	delete(b.aclsForWrite(), r.ID)
	return nil
}

func newScramRecord(u scram.Upsert) *userScramCredentialRecord {
	c := u.Credential
	return &userScramCredentialRecord{Name: u.User, Mechanism: int8(u.Mechanism), Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int32(c.Iterations)}
}

func (r *userScramCredentialRecord) apply(b *imageBuilder, _ uint64) error {
	m := scram.MechanismFromCode(r.Mechanism)
	switch {
	case r.Name == "":
		return recordErr("SCRAM credential without a user name")
	case m == scram.Unknown:
		return recordErr("SCRAM mechanism code %d", r.Mechanism)
	case r.Iterations < scram.MinIterations || r.Iterations > scram.MaxIterations:
		return recordErr("SCRAM iterations %d", r.Iterations)
	case len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0:
		return recordErr("SCRAM credential of %s is incomplete", r.Name)
	}
	b.scramForWrite()[ScramKey{User: r.Name, Mechanism: m}] = scram.Credential{
		Salt: slices.Clone(r.Salt), Iterations: int(r.Iterations),
		StoredKey: slices.Clone(r.StoredKey), ServerKey: slices.Clone(r.ServerKey),
	}
	return nil
}

func (r *removeUserScramCredentialRecord) apply(b *imageBuilder, _ uint64) error {
	k := ScramKey{User: r.Name, Mechanism: scram.MechanismFromCode(r.Mechanism)}
	if _, ok := b.img.ScramCredentials[k]; !ok {
		return recordErr("no %s credential for %s", k.Mechanism, r.Name)
	}
	delete(b.scramForWrite(), k)
	return nil
}

// aclsForWrite returns the builder's own copy of the ACL map.
func (b *imageBuilder) aclsForWrite() map[uuid]acl.Binding {
	if !b.copiedACLs {
		b.img.acls = maps.Clone(b.img.acls)
		if b.img.acls == nil {
			b.img.acls = map[uuid]acl.Binding{}
		}
		b.copiedACLs = true
	}
	return b.img.acls
}

func (b *imageBuilder) scramForWrite() map[ScramKey]scram.Credential {
	if !b.copiedScram {
		b.img.ScramCredentials = maps.Clone(b.img.ScramCredentials)
		if b.img.ScramCredentials == nil {
			b.img.ScramCredentials = map[ScramKey]scram.Credential{}
		}
		b.copiedScram = true
	}
	return b.img.ScramCredentials
}

// finishSecurity rebuilds the indexed ACL set when an entry changed ACLs.
func (b *imageBuilder) finishSecurity() {
	if b.copiedACLs {
		b.img.ACLSet = newACLSet(b.img.acls)
	}
}

func newACLSet(acls map[uuid]acl.Binding) *acl.Set {
	bindings := make([]acl.Binding, 0, len(acls))
	for _, id := range slices.SortedFunc(maps.Keys(acls), compareUUID) {
		bindings = append(bindings, acls[id])
	}
	return acl.NewSet(bindings)
}

func compareUUID(a, b uuid) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// ScramUsers lists the users with a SCRAM credential, sorted.
func (img *Image) ScramUsers() []string {
	seen := map[string]bool{}
	for k := range img.ScramCredentials {
		seen[k.User] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// ScramInfo lists a user's SCRAM credentials by mechanism.
func (img *Image) ScramInfo(user string) []scram.Info {
	var out []scram.Info
	for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
		if c, ok := img.ScramCredentials[ScramKey{User: user, Mechanism: m}]; ok {
			out = append(out, scram.Info{Mechanism: m, Iterations: c.Iterations})
		}
	}
	return out
}

// Credential implements scram.Store over the image.
func (img *Image) Credential(m scram.Mechanism, user string) (scram.Credential, bool) {
	c, ok := img.ScramCredentials[ScramKey{User: user, Mechanism: m}]
	return c, ok
}

// snapshotSecurity lists the image's ACLs and credentials as records, in
// a stable order, for a snapshot.
func snapshotSecurity(img *Image) ([]accessControlEntryRecord, []userScramCredentialRecord) {
	var acls []accessControlEntryRecord
	for _, id := range slices.SortedFunc(maps.Keys(img.acls), compareUUID) {
		acls = append(acls, *newACLRecord(id, img.acls[id]))
	}
	var creds []userScramCredentialRecord
	for _, user := range img.ScramUsers() {
		for _, info := range img.ScramInfo(user) {
			c := img.ScramCredentials[ScramKey{User: user, Mechanism: info.Mechanism}]
			creds = append(creds, *newScramRecord(scram.Upsert{User: user, Mechanism: info.Mechanism, Credential: c}))
		}
	}
	return acls, creds
}

// restoreSecurity applies a snapshot's ACLs and credentials to img.
func restoreSecurity(img *Image, acls []accessControlEntryRecord, creds []userScramCredentialRecord) error {
	b := newImageBuilder(img)
	for i := range acls {
		if err := acls[i].apply(b, img.AppliedIndex); err != nil {
			return fmt.Errorf("controller: snapshot ACL: %w", err)
		}
	}
	for i := range creds {
		if err := creds[i].apply(b, img.AppliedIndex); err != nil {
			return fmt.Errorf("controller: snapshot SCRAM credential: %w", err)
		}
	}
	b.finishSecurity()
	img.ACLSet, img.acls, img.ScramCredentials = b.img.ACLSet, b.img.acls, b.img.ScramCredentials
	return nil
}
