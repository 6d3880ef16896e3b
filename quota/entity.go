package quota

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Entity types (ClientQuotaEntity.USER, CLIENT_ID, IP).
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// Name is one component of an Entity: absent, the <default> of its type,
// or a name.
type Name struct {
	Present bool
	Default bool // <default>: a null name on the wire
	Value   string
}

// Named is a Name with a value.
func Named(v string) Name { return Name{Present: true, Value: v} }

// DefaultName is the <default> of a type.
func DefaultName() Name { return Name{Present: true, Default: true} }

// ptr is the wire form: nil for the default.
func (n Name) ptr() *string {
	if n.Default {
		return nil
	}
	v := n.Value
	return &v
}

func (n Name) String() string {
	if n.Default {
		return "<default>"
	}
	return n.Value
}

// Entity is a quota entity. It is comparable: the quotas of a cluster are
// keyed by it.
type Entity struct {
	User, ClientID, IP Name
}

// components lists the entity's types and names in Kafka's print order.
func (e Entity) components() []struct {
	typ  string
	name Name
} {
	var out []struct {
		typ  string
		name Name
	}
	for _, c := range []struct {
		typ  string
		name Name
	}{{TypeUser, e.User}, {TypeClientID, e.ClientID}, {TypeIP, e.IP}} {
		if c.name.Present {
			out = append(out, c)
		}
	}
	return out
}

// Len is the number of entity types the entity names.
func (e Entity) Len() int { return len(e.components()) }

// String prints the entity as Kafka's ClientQuotaEntity does.
func (e Entity) String() string {
	var parts []string
	for _, c := range e.components() {
		v := "null"
		if !c.name.Default {
			v = c.name.Value
		}
		parts = append(parts, c.typ+"="+v)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// Path is the entity as Kafka's docs name it (/config/users/<user>/clients/<default>).
func (e Entity) Path() string {
	var b strings.Builder
	if e.User.Present {
		fmt.Fprintf(&b, "/config/users/%s", e.User)
	}
	if e.ClientID.Present {
		fmt.Fprintf(&b, "/config/clients/%s", e.ClientID)
		if e.User.Present {
			b.Reset()
			fmt.Fprintf(&b, "/config/users/%s/clients/%s", e.User, e.ClientID)
		}
	}
	if e.IP.Present {
		fmt.Fprintf(&b, "/config/ips/%s", e.IP)
	}
	return b.String()
}

// name returns the component of type typ, false for an unknown type.
func (e *Entity) name(typ string) (*Name, bool) {
	switch typ {
	case TypeUser:
		return &e.User, true
	case TypeClientID:
		return &e.ClientID, true
	case TypeIP:
		return &e.IP, true
	}
	return nil, false
}

// Component is one (type, name) pair of an entity on the wire.
type Component struct {
	Type string
	Name *string // nil: <default>
}

// parseEntity builds an entity from wire components as Kafka's
// AlterClientQuotasRequest.entries does (a map: a type named twice keeps
// its last name) and validates it as ClientQuotaControlManager.validateEntity.
func parseEntity(comps []Component) (Entity, *Error) {
	var e Entity
	var order []string
	for _, c := range comps {
		n, ok := e.name(c.Type)
		if !ok {
			return Entity{}, invalid("Unhandled client quota entity type: %s", c.Type)
		}
		if !n.Present {
			order = append(order, c.Type)
		}
		*n = Name{Present: true, Default: c.Name == nil}
		if c.Name != nil {
			n.Value = *c.Name
		}
	}
	if len(order) == 0 {
		return Entity{}, invalid("Invalid empty client quota entity")
	}
	for _, typ := range order {
		if n, _ := e.name(typ); !n.Default && n.Value == "" {
			return Entity{}, invalid("Empty %s not supported", typ)
		}
	}
	return e, nil
}

// rawEntity is parseEntity without validation, for entities that only
// need a key (an error response lists them as sent).
func rawEntity(comps []Component) Entity {
	var e Entity
	for _, c := range comps {
		if n, ok := e.name(c.Type); ok {
			*n = Name{Present: true, Default: c.Name == nil}
			if c.Name != nil {
				n.Value = *c.Name
			}
		}
	}
	return e
}

// describeEntity is the entity in a DescribeClientQuotas answer.
func describeEntity(e Entity) []kmsg.DescribeClientQuotasResponseEntryEntity {
	return wireEntity(e, func(typ string, name *string) kmsg.DescribeClientQuotasResponseEntryEntity {
		de := kmsg.NewDescribeClientQuotasResponseEntryEntity()
		de.Type, de.Name = typ, name
		return de
	})
}

// alterEntity is the entity in an AlterClientQuotas answer.
func alterEntity(e Entity) []kmsg.AlterClientQuotasResponseEntryEntity {
	return wireEntity(e, func(typ string, name *string) kmsg.AlterClientQuotasResponseEntryEntity {
		ae := kmsg.NewAlterClientQuotasResponseEntryEntity()
		ae.Type, ae.Name = typ, name
		return ae
	})
}

// wireEntity lists e's components as build makes them.
func wireEntity[T any](e Entity, build func(typ string, name *string) T) []T {
	var out []T
	for _, c := range e.components() {
		out = append(out, build(c.typ, c.name.ptr()))
	}
	return out
}

// Components is the entity as wire components, for records.
func (e Entity) Components() []Component {
	return wireEntity(e, func(typ string, name *string) Component { return Component{Type: typ, Name: name} })
}

// EntityFromComponents rebuilds a stored entity (a ClientQuota record's).
func EntityFromComponents(comps []Component) (Entity, error) {
	e, err := parseEntity(comps)
	if err != nil {
		return Entity{}, fmt.Errorf("quota: %s", err.Message)
	}
	return e, nil
}
