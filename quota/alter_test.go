package quota

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterEntry(ops []kmsg.AlterClientQuotasRequestEntryOp, comps ...Component) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range comps {
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = c.Type, c.Name
		e.Entity = append(e.Entity, ec)
	}
	e.Ops = ops
	return e
}

func set(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, v
	return op
}

func remove(key string) kmsg.AlterClientQuotasRequestEntryOp {
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Remove = key, true
	return op
}

func user(n string) Component   { return Component{Type: TypeUser, Name: &n} }
func client(n string) Component { return Component{Type: TypeClientID, Name: &n} }

func planOf(cur Quotas, entries ...kmsg.AlterClientQuotasRequestEntry) AlterPlan {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = entries
	return PlanAlter(req, cur)
}

func TestPlanAlterSetsAndRemoves(t *testing.T) {
	cur := Quotas{{User: Named("alice")}: {ConsumerByteRate: 5, RequestPercentage: 50}}
	plan := planOf(cur,
		alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1024), set(ConsumerByteRate, 5), remove(RequestPercentage), remove(ControllerMutationRate)}, user("alice")),
		alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ControllerMutationRate, 2.5)}, Component{Type: TypeUser}, client("app")),
	)
	if len(plan.Entries) != 2 || plan.Entries[0].ErrorCode != 0 || plan.Entries[1].ErrorCode != 0 {
		t.Fatalf("entries %+v", plan.Entries)
	}
	// consumer_byte_rate is unchanged and controller_mutation_rate absent: no change.
	if len(plan.Changes) != 3 {
		t.Fatalf("changes %+v", plan.Changes)
	}
	next := Apply(cur, plan.Changes)
	want := Quotas{
		{User: Named("alice")}:                        {ConsumerByteRate: 5, ProducerByteRate: 1024},
		{User: DefaultName(), ClientID: Named("app")}: {ControllerMutationRate: 2.5},
	}
	if len(next) != len(want) {
		t.Fatalf("quotas %v, want %v", next, want)
	}
	for e, m := range want {
		for k, v := range m {
			if next[e][k] != v {
				t.Fatalf("%s %s = %v, want %v", e, k, next[e][k], v)
			}
		}
	}
	if cur[Entity{User: Named("alice")}][RequestPercentage] != 50 {
		t.Fatal("Apply modified its input")
	}
	// Removing an entity's last key removes the entity.
	gone := Apply(next, []Change{{Entity: Entity{User: DefaultName(), ClientID: Named("app")}, Key: ControllerMutationRate}})
	if _, ok := gone[Entity{User: DefaultName(), ClientID: Named("app")}]; ok {
		t.Fatal("empty entity kept")
	}
}

// ClientQuotaControlManager's messages, entity by entity; one bad entry
// does not stop the others.
func TestPlanAlterValidation(t *testing.T) {
	ip := func(n string) Component { return Component{Type: TypeIP, Name: &n} }
	cases := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		msg   string
	}{
		{"unknown key", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("bogus", 1)}, user("a")), "Invalid configuration key bogus"},
		{"zero", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 0)}, user("a")), "Quota producer_byte_rate must be greater than 0"},
		{"fraction of a long", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ConsumerByteRate, 1.5)}, user("a")), "consumer_byte_rate cannot be a fractional value."},
		{"ip key on a user", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ConnectionCreationRate, 1)}, user("a")), "Invalid configuration key connection_creation_rate"},
		{"user key on an ip", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1)}, ip("10.0.0.1")), "Invalid configuration key producer_byte_rate"},
		{"bad ip", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ConnectionCreationRate, 1)}, ip("not an ip")), "not an ip is not a valid IP or resolvable host."},
		{"ip with user", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ConnectionCreationRate, 1)}, ip("10.0.0.1"), user("a")), "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{"empty name", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1)}, user("")), "Empty user not supported"},
		{"unknown type", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1)}, Component{Type: "group", Name: new(string)}), "Unhandled client quota entity type: group"},
		{"no entity", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1)}), "Invalid empty client quota entity"},
		{"key twice", alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1), set(ProducerByteRate, 2)}, user("a")), "Ignoring duplicate entity ClientQuotaEntity(entries={user=a})"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok := alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(RequestPercentage, 200)}, user("fine"))
			plan := planOf(nil, tc.entry, ok)
			if len(plan.Entries) != 2 {
				t.Fatalf("entries %+v", plan.Entries)
			}
			got := plan.Entries[0]
			if got.ErrorCode != kerr.InvalidRequest.Code || got.ErrorMessage == nil || *got.ErrorMessage != tc.msg {
				t.Fatalf("answer %d %v, want INVALID_REQUEST %q", got.ErrorCode, strp(got.ErrorMessage), tc.msg)
			}
			if plan.Entries[1].ErrorCode != 0 || len(plan.Changes) != 1 || plan.Changes[0].Entity.User.Value != "fine" {
				t.Fatalf("the good entry was not planned: %+v %+v", plan.Entries[1], plan.Changes)
			}
		})
	}
}

func strp(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// An entity named twice: its first entry applies, the answer (one per
// entity) says it was ignored, as Kafka's.
func TestPlanAlterDuplicateEntity(t *testing.T) {
	plan := planOf(nil,
		alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 1)}, user("a"), client("c")),
		alterEntry([]kmsg.AlterClientQuotasRequestEntryOp{set(ProducerByteRate, 2)}, client("c"), user("a")),
	)
	if len(plan.Entries) != 1 || plan.Entries[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("entries %+v", plan.Entries)
	}
	if len(plan.Changes) != 1 || *plan.Changes[0].Value != 1 {
		t.Fatalf("changes %+v", plan.Changes)
	}
}
