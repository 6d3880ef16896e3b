package quota

import "testing"

// The precedence of ClientQuotaManager's doc, level by level: each case
// adds one more specific entity and expects it to win.
func TestPrecedence(t *testing.T) {
	u, c := Named("alice"), Named("app")
	du, dc := DefaultName(), DefaultName()
	levels := []struct {
		entity Entity
		tags   Tags
	}{
		{Entity{ClientID: dc}, Tags{ClientID: "app"}},          // /config/clients/<default>
		{Entity{ClientID: c}, Tags{ClientID: "app"}},           // /config/clients/<client-id>
		{Entity{User: du}, Tags{User: "alice"}},                // /config/users/<default>
		{Entity{User: du, ClientID: dc}, Tags{"alice", "app"}}, // /config/users/<default>/clients/<default>
		{Entity{User: du, ClientID: c}, Tags{"alice", "app"}},  // /config/users/<default>/clients/<client-id>
		{Entity{User: u}, Tags{User: "alice"}},                 // /config/users/<user>
		{Entity{User: u, ClientID: dc}, Tags{"alice", "app"}},  // /config/users/<user>/clients/<default>
		{Entity{User: u, ClientID: c}, Tags{"alice", "app"}},   // /config/users/<user>/clients/<client-id>
	}
	l := Limits{}
	for i, lv := range levels {
		l[lv.entity] = float64(i + 1)
		tags := l.Tags("alice", "app")
		if tags != lv.tags {
			t.Fatalf("with %s: tags %+v, want %+v", lv.entity.Path(), tags, lv.tags)
		}
		v, ok := l.Limit(tags)
		if !ok || v != float64(i+1) {
			t.Fatalf("with %s: limit %v %v, want %d", lv.entity.Path(), v, ok, i+1)
		}
	}
	// Another user and client id fall back to the defaults.
	if v, ok := l.Limit(l.Tags("bob", "other")); !ok || v != 4 {
		t.Fatalf("bob/other: %v %v, want the <default>/<default> quota 4", v, ok)
	}
}

func TestNoQuotaIsUnlimited(t *testing.T) {
	l := Limits{{User: Named("bob")}: 10}
	if _, ok := l.Limit(l.Tags("alice", "app")); ok {
		t.Fatal("alice has bob's quota")
	}
}

// A user quota is shared by the user's client ids: one sensor.
func TestUserQuotaTagsIgnoreClientID(t *testing.T) {
	l := Limits{{User: Named("alice")}: 10}
	if a, b := l.Tags("alice", "one"), l.Tags("alice", "two"); a != b {
		t.Fatalf("tags %+v and %+v differ", a, b)
	}
}

func TestLimitsSkipOtherKeysAndIPs(t *testing.T) {
	q := Quotas{
		{User: Named("a")}:     {ProducerByteRate: 1, ConsumerByteRate: 2},
		{IP: Named("1.2.3.4")}: {ConnectionCreationRate: 3},
	}
	l := q.Limits(ConsumerByteRate)
	if len(l) != 1 || l[Entity{User: Named("a")}] != 2 {
		t.Fatalf("limits %v", l)
	}
}
