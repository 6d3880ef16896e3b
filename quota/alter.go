package quota

import "github.com/twmb/franz-go/pkg/kmsg"

// Change sets (Value non-nil) or removes one quota of one entity: what a
// ClientQuota record carries.
type Change struct {
	Entity Entity
	Key    string
	Value  *float64
}

// Quotas are a cluster's client quotas: entity -> key -> value.
type Quotas map[Entity]map[string]float64

// AlterPlan is what AlterClientQuotas decides: the changes to commit and
// the answer per entity.
type AlterPlan struct {
	Changes []Change
	Entries []kmsg.AlterClientQuotasResponseEntry
}

// PlanAlter is ClientQuotaControlManager.alterClientQuotas: each entry's
// entity and ops are validated on their own (INVALID_REQUEST with Kafka's
// message); a value equal to the current one and the removal of an absent
// key change nothing. As in Kafka, an entity named twice is answered
// "Ignoring duplicate entity" (its first entry's changes still apply), and
// an entry naming a key twice is answered the same way, without changes.
func PlanAlter(req *kmsg.AlterClientQuotasRequest, cur Quotas) AlterPlan {
	var plan AlterPlan
	results := map[Entity]*Error{}
	var order []Entity
	for _, entry := range req.Entries {
		entity := rawEntity(entryComponents(entry))
		ops, dupKey := alterations(entry)
		if _, seen := results[entity]; !seen {
			order = append(order, entity)
		}
		if _, seen := results[entity]; seen || dupKey != "" {
			results[entity] = invalid("Ignoring duplicate entity %s", entity)
			continue
		}
		changes, e := planEntity(entryComponents(entry), ops, cur)
		if e == nil {
			plan.Changes = append(plan.Changes, changes...)
			e = &Error{}
		}
		results[entity] = e
	}
	for _, entity := range order {
		e := results[entity]
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.Entity = alterEntity(entity)
		re.ErrorCode = e.Code
		if e.Message != "" {
			re.ErrorMessage = kmsg.StringPtr(e.Message)
		}
		plan.Entries = append(plan.Entries, re)
	}
	return plan
}

func entryComponents(entry kmsg.AlterClientQuotasRequestEntry) []Component {
	comps := make([]Component, len(entry.Entity))
	for i, c := range entry.Entity {
		comps[i] = Component{Type: c.Type, Name: c.Name}
	}
	return comps
}

// op is one alteration: a value, or nil to remove the key.
type op struct {
	key   string
	value *float64
}

// alterations lists an entry's ops in order, and the first key named
// twice, if any.
func alterations(entry kmsg.AlterClientQuotasRequestEntry) ([]op, string) {
	seen := map[string]bool{}
	var ops []op
	for _, o := range entry.Ops {
		if seen[o.Key] {
			return nil, o.Key
		}
		seen[o.Key] = true
		var v *float64
		if !o.Remove {
			v = new(float64)
			*v = o.Value
		}
		ops = append(ops, op{key: o.Key, value: v})
	}
	return ops, ""
}

// planEntity is ClientQuotaControlManager.alterClientQuotaEntity.
func planEntity(comps []Component, ops []op, cur Quotas) ([]Change, *Error) {
	entity, e := parseEntity(comps)
	if e != nil {
		return nil, e
	}
	keys, e := keysFor(entity)
	if e != nil {
		return nil, e
	}
	current := cur[entity]
	var changes []Change
	for _, o := range ops {
		if o.value == nil {
			if _, ok := current[o.key]; ok {
				changes = append(changes, Change{Entity: entity, Key: o.key})
			}
			continue
		}
		if e := validateValue(keys, o.key, *o.value); e != nil {
			return nil, e
		}
		if old, ok := current[o.key]; !ok || old != *o.value {
			changes = append(changes, Change{Entity: entity, Key: o.key, Value: o.value})
		}
	}
	return changes, nil
}

// Apply returns cur with changes applied, cur unchanged (copy on write:
// entities not changed are shared).
func Apply(cur Quotas, changes []Change) Quotas {
	out := make(Quotas, len(cur)+len(changes))
	for e, m := range cur {
		out[e] = m
	}
	copied := map[Entity]bool{}
	for _, c := range changes {
		if !copied[c.Entity] {
			m := make(map[string]float64, len(out[c.Entity])+1)
			for k, v := range out[c.Entity] {
				m[k] = v
			}
			out[c.Entity] = m
			copied[c.Entity] = true
		}
		if c.Value == nil {
			delete(out[c.Entity], c.Key)
		} else {
			out[c.Entity][c.Key] = *c.Value
		}
		if len(out[c.Entity]) == 0 {
			delete(out, c.Entity)
			delete(copied, c.Entity)
		}
	}
	return out
}
