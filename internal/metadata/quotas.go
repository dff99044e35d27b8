package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
)

// Client quota entities, as Kafka's ClientQuotaEntity: a combination of
// user, client-id and ip parts (user, client-id, user+client-id, or ip
// alone), each either a name or the entity type's default.

// Quota entity types, as on the wire (DescribeClientQuotas,
// AlterClientQuotas, ClientQuotaRecord).
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// QuotaName is one part of a QuotaEntity. The zero value is an absent part.
type QuotaName struct {
	// Present is set when the entity has this part.
	Present bool
	// Default is set for the type's default entity (a null name on the
	// wire, "<default>" in Kafka's tools); Name is then "".
	Default bool
	Name    string
}

// QuotaEntity names the entity a client quota applies to. It is
// comparable, so it keys maps.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// part returns the part of e for an entity type, nil for a type that is not
// user, client-id or ip.
func (e *QuotaEntity) part(entityType string) *QuotaName {
	switch entityType {
	case QuotaEntityUser:
		return &e.User
	case QuotaEntityClientID:
		return &e.ClientID
	case QuotaEntityIP:
		return &e.IP
	}
	return nil
}

// QuotaEntityFromData builds an entity from its parts as the wire and
// ClientQuotaRecord carry them (a nil name is the type's default). It
// fails for no parts, a type other than user, client-id and ip, or a type
// given twice; the error's text is Kafka's message for each. Whether the
// combination of types is one Kafka allows is the caller's to check.
func QuotaEntityFromData(parts []ClientQuotaEntityData) (QuotaEntity, error) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, errors.New("Invalid empty client quota entity")
	}
	for _, p := range parts {
		n := e.part(p.EntityType)
		if n == nil {
			return QuotaEntity{}, fmt.Errorf("Unhandled client quota entity type: %s", p.EntityType)
		}
		if n.Present {
			return QuotaEntity{}, fmt.Errorf("Invalid client quota entity, duplicate entity entry %s", p.EntityType)
		}
		n.Present = true
		if p.EntityName == nil {
			n.Default = true
		} else {
			n.Name = *p.EntityName
		}
	}
	return e, nil
}

// Data returns e's parts in the order user, client-id, ip: the inverse of
// QuotaEntityFromData.
func (e QuotaEntity) Data() []ClientQuotaEntityData {
	var out []ClientQuotaEntityData
	for _, p := range e.parts() {
		d := ClientQuotaEntityData{EntityType: p.entityType}
		if !p.name.Default {
			name := p.name.Name
			d.EntityName = &name
		}
		out = append(out, d)
	}
	return out
}

type typedQuotaName struct {
	entityType string
	name       QuotaName
}

// parts returns e's present parts in the order user, client-id, ip.
func (e QuotaEntity) parts() []typedQuotaName {
	out := make([]typedQuotaName, 0, 2)
	for _, p := range []typedQuotaName{{QuotaEntityUser, e.User}, {QuotaEntityClientID, e.ClientID}, {QuotaEntityIP, e.IP}} {
		if p.name.Present {
			out = append(out, p)
		}
	}
	return out
}

// String is the entity as Kafka's tools show it, e.g. "user=alice,
// client-id=<default>" ("<default>" for a type's default entity).
func (e QuotaEntity) String() string {
	var b strings.Builder
	for i, p := range e.parts() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.entityType)
		b.WriteByte('=')
		if p.name.Default {
			b.WriteString("<default>")
		} else {
			b.WriteString(p.name.Name)
		}
	}
	return b.String()
}

// CompareQuotaEntities orders entities with a user first, then those with
// only a client-id, then ip ones; within each by user, then client-id, then
// ip, where an absent part sorts before the default and the default before
// any name (so user=alice comes right before user=alice, client-id=app).
func CompareQuotaEntities(a, b QuotaEntity) int {
	kind := func(e QuotaEntity) int {
		switch {
		case e.User.Present:
			return 0
		case e.ClientID.Present:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(kind(a), kind(b)),
		compareQuotaNames(a.User, b.User), compareQuotaNames(a.ClientID, b.ClientID), compareQuotaNames(a.IP, b.IP))
}

func compareQuotaNames(a, b QuotaName) int {
	rank := func(n QuotaName) int {
		switch {
		case !n.Present:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Name, b.Name))
}
