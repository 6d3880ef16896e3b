package quota

import (
	"cmp"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// filter is a validated DescribeClientQuotas filter: the types that must
// match a name (or the default: a nil name) and the types that must merely
// be present.
type filter struct {
	exact  map[string]*string
	anyOf  map[string]bool
	strict bool
}

// parseFilter is ClientQuotasImage.describe's validation.
func parseFilter(req *kmsg.DescribeClientQuotasRequest) (filter, *Error) {
	f := filter{exact: map[string]*string{}, anyOf: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		_, isExact := f.exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return f, invalid("Invalid empty entity type.")
		case isExact || f.anyOf[c.EntityType]:
			return f, invalid("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		case c.EntityType != TypeIP && c.EntityType != TypeUser && c.EntityType != TypeClientID:
			return f, &Error{Code: kerr.UnsupportedVersion.Code, Message: "Unsupported entity type " + c.EntityType}
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return f, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return f, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			f.exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return f, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			f.anyOf[c.EntityType] = true
		default:
			return f, invalid("Unknown match type %d", c.MatchType)
		}
	}
	if f.has(TypeIP) && (f.has(TypeUser) || f.has(TypeClientID)) {
		return f, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return f, nil
}

func (f filter) has(typ string) bool {
	_, ok := f.exact[typ]
	return ok || f.anyOf[typ]
}

// matches is ClientQuotaControlManager.matches: every exact component names
// the entity's name (or default) of its type, every "specified" type is
// present, and, strictly, the entity has no other type. No component at
// all matches every entity unless strict.
func (f filter) matches(e Entity) bool {
	if f.strict && e.Len() != len(f.exact)+len(f.anyOf) {
		return false
	}
	if !f.strict && len(f.exact) == 0 && len(f.anyOf) == 0 {
		return true
	}
	for typ, want := range f.exact {
		n, _ := e.name(typ)
		switch {
		case !n.Present:
			return false
		case want == nil && !n.Default, want != nil && (n.Default || n.Value != *want):
			return false
		}
	}
	for typ := range f.anyOf {
		if n, _ := e.name(typ); !n.Present {
			return false
		}
	}
	return true
}

// Describe answers a DescribeClientQuotas request from the cluster's
// quotas: the matching entities with all their values, sorted (Kafka's
// order is a hash map's), or the request's error (INVALID_REQUEST,
// UNSUPPORTED_VERSION for an unknown entity type) with no entries.
func Describe(req *kmsg.DescribeClientQuotasRequest, quotas Quotas) *kmsg.DescribeClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	f, e := parseFilter(req)
	if e != nil {
		resp.ErrorCode, resp.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
		return resp
	}
	var entities []Entity
	for entity := range quotas {
		if f.matches(entity) {
			entities = append(entities, entity)
		}
	}
	slices.SortFunc(entities, compareEntities)
	for _, entity := range entities {
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		re.Entity = describeEntity(entity)
		values := quotas[entity]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			re.Values = append(re.Values, v)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

func compareEntities(a, b Entity) int {
	return cmp.Or(compareNames(a.User, b.User), compareNames(a.ClientID, b.ClientID), compareNames(a.IP, b.IP))
}

// compareNames orders absent < default < named.
func compareNames(a, b Name) int {
	rank := func(n Name) int {
		switch {
		case !n.Present:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.Value, b.Value))
}
