package quota

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func component(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = typ, kmsg.QuotasMatchType(match), name
	return c
}

func str(s string) *string { return &s }

var describeQuotas = Quotas{
	{User: Named("alice")}:                         {ProducerByteRate: 1},
	{User: DefaultName()}:                          {ProducerByteRate: 2},
	{User: Named("alice"), ClientID: Named("app")}: {ConsumerByteRate: 3},
	{ClientID: Named("app")}:                       {RequestPercentage: 4},
	{ClientID: DefaultName()}:                      {RequestPercentage: 5},
	{IP: Named("10.0.0.1")}:                        {ConnectionCreationRate: 6},
	{User: DefaultName(), ClientID: DefaultName()}: {ControllerMutationRate: 7},
}

func describe(strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) *kmsg.DescribeClientQuotasResponse {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Components, req.Strict = comps, strict
	return Describe(req, describeQuotas)
}

// values lists each entry's single value, in the answer's order.
func values(resp *kmsg.DescribeClientQuotasResponse) []float64 {
	var out []float64
	for _, e := range resp.Entries {
		for _, v := range e.Values {
			out = append(out, v.Value)
		}
	}
	return out
}

func TestDescribeMatching(t *testing.T) {
	exact, def, any := int8(kmsg.QuotasMatchTypeExact), int8(kmsg.QuotasMatchTypeDefault), int8(kmsg.QuotasMatchTypeAny)
	cases := []struct {
		name   string
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   []float64
	}{
		{"everything", false, nil, []float64{6, 5, 4, 2, 7, 1, 3}},
		{"strict nothing", true, nil, nil},
		{"user alice", false, []kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, exact, str("alice"))}, []float64{1, 3}},
		{"user alice strict", true, []kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, exact, str("alice"))}, []float64{1}},
		{"default user", false, []kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, def, nil)}, []float64{2, 7}},
		{"any user strict", true, []kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, any, nil)}, []float64{2, 1}},
		{"user alice and client app", true, []kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, exact, str("alice")), component(TypeClientID, exact, str("app"))}, []float64{3}},
		{"any client", false, []kmsg.DescribeClientQuotasRequestComponent{component(TypeClientID, any, nil)}, []float64{5, 4, 7, 3}},
		{"ip", false, []kmsg.DescribeClientQuotasRequestComponent{component(TypeIP, exact, str("10.0.0.1"))}, []float64{6}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := describe(tc.strict, tc.comps...)
			if resp.ErrorCode != 0 {
				t.Fatalf("error %d %s", resp.ErrorCode, strp(resp.ErrorMessage))
			}
			got := values(resp)
			if len(got) != len(tc.want) {
				t.Fatalf("values %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("values %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestDescribeEntitiesOnTheWire(t *testing.T) {
	resp := describe(true, component(TypeUser, int8(kmsg.QuotasMatchTypeDefault), nil), component(TypeClientID, int8(kmsg.QuotasMatchTypeDefault), nil))
	if len(resp.Entries) != 1 {
		t.Fatalf("entries %+v", resp.Entries)
	}
	e := resp.Entries[0].Entity
	if len(e) != 2 || e[0].Type != TypeUser || e[0].Name != nil || e[1].Type != TypeClientID || e[1].Name != nil {
		t.Fatalf("entity %+v", e)
	}
}

func TestDescribeFilterErrors(t *testing.T) {
	exact, def := int8(kmsg.QuotasMatchTypeExact), int8(kmsg.QuotasMatchTypeDefault)
	cases := []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  int16
		msg   string
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{component("", exact, str("x"))}, kerr.InvalidRequest.Code, "Invalid empty entity type."},
		{[]kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, exact, str("x")), component(TypeUser, def, nil)}, kerr.InvalidRequest.Code, "Entity type user cannot appear more than once in the filter."},
		{[]kmsg.DescribeClientQuotasRequestComponent{component("group", exact, str("x"))}, kerr.UnsupportedVersion.Code, "Unsupported entity type group"},
		{[]kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, exact, nil)}, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."},
		{[]kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, def, str("x"))}, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."},
		{[]kmsg.DescribeClientQuotasRequestComponent{component(TypeUser, 7, nil)}, kerr.InvalidRequest.Code, "Unknown match type 7"},
		{[]kmsg.DescribeClientQuotasRequestComponent{component(TypeIP, def, nil), component(TypeUser, def, nil)}, kerr.InvalidRequest.Code,
			"Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."},
	}
	for _, tc := range cases {
		resp := describe(false, tc.comps...)
		if resp.ErrorCode != tc.code || strp(resp.ErrorMessage) != tc.msg || resp.Entries != nil {
			t.Errorf("got %d %q %v, want %d %q", resp.ErrorCode, strp(resp.ErrorMessage), resp.Entries, tc.code, tc.msg)
		}
	}
}
