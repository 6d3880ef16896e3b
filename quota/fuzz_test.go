package quota

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/fuzzseed"
)

// quotaSeeds are encoded AlterClientQuotas and DescribeClientQuotas
// bodies: (body, alter, version).
func quotaSeeds() [][]any {
	var seeds [][]any
	for v := int16(0); v <= 1; v++ {
		a := kmsg.NewAlterClientQuotasRequest()
		a.Version = v
		e := kmsg.NewAlterClientQuotasRequestEntry()
		e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: TypeUser, Name: kmsg.StringPtr("alice")}, {Type: TypeClientID}}
		e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: ProducerByteRate, Value: 1 << 20}, {Key: RequestPercentage, Remove: true}}
		a.Entries = append(a.Entries, e)
		ip := kmsg.NewAlterClientQuotasRequestEntry()
		ip.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: TypeIP, Name: kmsg.StringPtr("10.0.0.1")}}
		ip.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: ConnectionCreationRate, Value: 5}}
		a.Entries = append(a.Entries, ip)
		seeds = append(seeds, []any{a.AppendTo(nil), true, int(v)})

		d := kmsg.NewDescribeClientQuotasRequest()
		d.Version = v
		d.Components = []kmsg.DescribeClientQuotasRequestComponent{
			{EntityType: TypeUser, MatchType: kmsg.QuotasMatchTypeExact, Match: kmsg.StringPtr("alice")},
			{EntityType: TypeClientID, MatchType: kmsg.QuotasMatchTypeDefault},
		}
		d.Strict = true
		seeds = append(seeds, []any{d.AppendTo(nil), false, int(v)})
	}
	return seeds
}

// fuzzQuotas are the quotas the fuzzed requests run against.
var fuzzQuotas = Quotas{
	{User: Named("alice")}:                      {ProducerByteRate: 1024},
	{User: DefaultName(), ClientID: Named("c")}: {ConsumerByteRate: 2048, RequestPercentage: 50},
	{IP: Named("10.0.0.1")}:                     {ConnectionCreationRate: 3},
}

func TestWriteClientQuotaRequestsSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	fuzzseed.Write(t, "FuzzClientQuotaRequests", quotaSeeds())
}

// FuzzClientQuotaRequests decodes the quota APIs' bodies as the broker
// will and runs them: no panic; AlterClientQuotas answers once per
// distinct entity and plans only values it validated (positive, finite,
// whole for byte rates); DescribeClientQuotas answers an error with no
// entries, or entries that exist with all their values.
func FuzzClientQuotaRequests(f *testing.F) {
	for _, s := range quotaSeeds() {
		f.Add(s[0].([]byte), s[1].(bool), s[2].(int))
	}
	f.Fuzz(func(t *testing.T, body []byte, alter bool, version int) {
		v := int16(version & 1)
		if alter {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.Version = v
			if req.ReadFrom(body) != nil {
				return
			}
			checkPlan(t, req, PlanAlter(req, fuzzQuotas))
			return
		}
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = v
		if req.ReadFrom(body) != nil {
			return
		}
		checkDescribe(t, Describe(req, fuzzQuotas))
	})
}

func checkPlan(t *testing.T, req *kmsg.AlterClientQuotasRequest, plan AlterPlan) {
	seen := map[Entity]bool{}
	for _, e := range req.Entries {
		comps := make([]Component, len(e.Entity))
		for i, c := range e.Entity {
			comps[i] = Component{Type: c.Type, Name: c.Name}
		}
		seen[rawEntity(comps)] = true
	}
	if len(plan.Entries) != len(seen) {
		t.Fatalf("%d answers for %d entities", len(plan.Entries), len(seen))
	}
	for _, c := range plan.Changes {
		if c.Value == nil {
			continue
		}
		v := *c.Value
		if !(v > 0) || math.IsInf(v, 0) || (c.Key != RequestPercentage && c.Key != ControllerMutationRate && v != math.Trunc(v) && math.Abs(v-math.Round(v)) > 1e-6) {
			t.Fatalf("planned %s = %v for %s", c.Key, v, c.Entity)
		}
	}
	next := Apply(fuzzQuotas, plan.Changes)
	for e, values := range next {
		if len(values) == 0 {
			t.Fatalf("entity %s kept without quotas", e)
		}
	}
}

func checkDescribe(t *testing.T, resp *kmsg.DescribeClientQuotasResponse) {
	if resp.ErrorCode != 0 {
		if resp.Entries != nil || resp.ErrorMessage == nil {
			t.Fatalf("error answer %+v", resp)
		}
		return
	}
	for _, e := range resp.Entries {
		var comps []Component
		for _, c := range e.Entity {
			comps = append(comps, Component{Type: c.Type, Name: c.Name})
		}
		values, ok := fuzzQuotas[rawEntity(comps)]
		if !ok || len(values) != len(e.Values) {
			t.Fatalf("answered entity %+v with %+v", e.Entity, e.Values)
		}
	}
}
