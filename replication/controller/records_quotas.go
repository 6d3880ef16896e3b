package controller

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/kbroker/kbroker/quota"
)

// Client quota records, Kafka's ClientQuotaRecord under its name:
//
//	{"type":"ClientQuota","v":1,"entity":[{"type":"user","name":"alice"},{"type":"client-id"}],
//	 "key":"producer_byte_rate","value":1048576}
//	{"type":"ClientQuota","v":1,"entity":[{"type":"user","name":"alice"}],"key":"producer_byte_rate","remove":true}
//
// An entity component without "name" is the <default> of its type. The
// values are the validated quota values (quota.PlanAlter): positive and
// finite.

// clientQuotaRecord sets or removes one quota of one entity.
type clientQuotaRecord struct {
	Entity []quotaEntityData `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value,omitempty"`
	Remove bool              `json:"remove,omitempty"`
}

// quotaEntityData is one component of a record's entity.
type quotaEntityData struct {
	Type string  `json:"type"`
	Name *string `json:"name,omitempty"`
}

func (*clientQuotaRecord) kind() string { return "ClientQuota" }

func newClientQuotaRecord(c quota.Change) *clientQuotaRecord {
	r := &clientQuotaRecord{Key: c.Key, Remove: c.Value == nil}
	if c.Value != nil {
		r.Value = *c.Value
	}
	for _, comp := range c.Entity.Components() {
		r.Entity = append(r.Entity, quotaEntityData{Type: comp.Type, Name: comp.Name})
	}
	return r
}

func (r *clientQuotaRecord) entity() (quota.Entity, error) {
	comps := make([]quota.Component, len(r.Entity))
	for i, e := range r.Entity {
		comps[i] = quota.Component{Type: e.Type, Name: e.Name}
	}
	return quota.EntityFromComponents(comps)
}

func (r *clientQuotaRecord) apply(b *imageBuilder, _ uint64) error {
	e, err := r.entity()
	switch {
	case err != nil:
		return recordErr("client quota entity: %v", err)
	case r.Key == "":
		return recordErr("client quota of %s without a key", e)
	case !r.Remove && (!(r.Value > 0) || math.IsInf(r.Value, 0)):
		return recordErr("client quota %s of %s is %v", r.Key, e, r.Value)
	}
	values := b.clientQuotaForWrite(e)
	if r.Remove {
		delete(values, r.Key)
		if len(values) == 0 {
			delete(b.img.ClientQuotas, e)
		}
		return nil
	}
	values[r.Key] = r.Value
	return nil
}

// clientQuotaForWrite returns the builder's own copy of an entity's quotas
// (creating the entity), copying the map of entities once per build.
func (b *imageBuilder) clientQuotaForWrite(e quota.Entity) map[string]float64 {
	if !b.copiedQuotas {
		b.img.ClientQuotas = maps.Clone(b.img.ClientQuotas)
		if b.img.ClientQuotas == nil {
			b.img.ClientQuotas = quota.Quotas{}
		}
		b.copiedQuotas = true
		b.ownQuotas = map[quota.Entity]bool{}
	}
	if !b.ownQuotas[e] {
		b.img.ClientQuotas[e] = maps.Clone(b.img.ClientQuotas[e])
		if b.img.ClientQuotas[e] == nil {
			b.img.ClientQuotas[e] = map[string]float64{}
		}
		b.ownQuotas[e] = true
	}
	return b.img.ClientQuotas[e]
}

// snapshotClientQuotas lists the image's quotas as records, in a stable
// order, for a snapshot.
func snapshotClientQuotas(img *Image) []clientQuotaRecord {
	var out []clientQuotaRecord
	entities := slices.Collect(maps.Keys(img.ClientQuotas))
	slices.SortFunc(entities, func(a, b quota.Entity) int {
		return cmp.Compare(a.String(), b.String())
	})
	for _, e := range entities {
		values := img.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := values[k]
			out = append(out, *newClientQuotaRecord(quota.Change{Entity: e, Key: k, Value: &v}))
		}
	}
	return out
}

// restoreClientQuotas applies a snapshot's quotas to img.
func restoreClientQuotas(img *Image, recs []clientQuotaRecord) error {
	b := newImageBuilder(img)
	for i := range recs {
		if err := recs[i].apply(b, img.AppliedIndex); err != nil {
			return fmt.Errorf("controller: snapshot client quota: %w", err)
		}
	}
	img.ClientQuotas = b.img.ClientQuotas
	return nil
}
