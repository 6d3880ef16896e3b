package quota

// Tags are what a quota is measured under (Kafka's metric tags user and
// client-id): every connection with the same tags shares one sensor. An
// empty tag means the level that applies does not distinguish it.
type Tags struct{ User, ClientID string }

// Limits are one quota key's overrides, by user / client-id entity.
type Limits map[Entity]float64

// Limits returns the overrides of key (IP entities hold other keys).
func (q Quotas) Limits(key string) Limits {
	out := Limits{}
	for e, values := range q {
		if v, ok := values[key]; ok && !e.IP.Present {
			out[e] = v
		}
	}
	return out
}

func userEntity(u Name) Entity                { return Entity{User: u} }
func clientEntity(c Name) Entity              { return Entity{ClientID: c} }
func userClientEntity(u, c Name) Entity       { return Entity{User: u, ClientID: c} }
func (l Limits) has(e Entity) bool            { _, ok := l[e]; return ok }
func (l Limits) get(e Entity) (float64, bool) { v, ok := l[e]; return v, ok }

// Tags is DefaultQuotaCallback.quotaMetricTags: the level of the
// precedence list (see the package doc) whose entity has a quota decides
// which of user and client id the sensor is keyed by.
func (l Limits) Tags(user, clientID string) Tags {
	u, c, du, dc := Named(user), Named(clientID), DefaultName(), DefaultName()
	switch {
	case l.has(userClientEntity(u, c)), l.has(userClientEntity(u, dc)):
		return Tags{user, clientID}
	case l.has(userEntity(u)):
		return Tags{User: user}
	case l.has(userClientEntity(du, c)), l.has(userClientEntity(du, dc)):
		return Tags{user, clientID}
	case l.has(userEntity(du)):
		return Tags{User: user}
	}
	return Tags{ClientID: clientID}
}

// Limit is DefaultQuotaCallback.quotaLimit: the quota of the sensor with
// tags t, false when none applies (unlimited).
func (l Limits) Limit(t Tags) (float64, bool) {
	u, c, du, dc := Named(t.User), Named(t.ClientID), DefaultName(), DefaultName()
	var order []Entity
	switch {
	case t.User != "" && t.ClientID != "":
		order = []Entity{userClientEntity(u, c), userClientEntity(u, dc), userClientEntity(du, c), userClientEntity(du, dc)}
	case t.User != "":
		order = []Entity{userEntity(u), userEntity(du)}
	case t.ClientID != "":
		order = []Entity{clientEntity(c), clientEntity(dc)}
	}
	for _, e := range order {
		if v, ok := l.get(e); ok {
			return v, true
		}
	}
	return 0, false
}
