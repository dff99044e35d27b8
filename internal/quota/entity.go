package quota

import (
	"math"
	"net/url"
	"strings"

	"gregor/internal/metadata"
)

// Which quota applies to a client, as Kafka's DefaultQuotaCallback decides.
// A client is a user (its principal's name) and a client id. Of the quotas
// set, the most specific that matches applies, in this order:
//
//  1. user and client id
//  2. user, default client id
//  3. user
//  4. default user, client id
//  5. default user, default client id
//  6. default user
//  7. client id
//  8. default client id
//
// Clients share a sensor (the rate measured against the quota, and its
// metrics) when they match the same entity: the sensor's tags are the user
// and client id of that entity's level ("" for a part the level lacks), so
// every client id of user alice counts against alice's user quota together.
// When quotas of only one shape are set (only client ids, only users, or
// only user and client id pairs) the tags follow that shape directly, as in
// Kafka; which shapes were ever set is remembered until the broker
// restarts, as Kafka's quotaTypesEnabled is.

// Shapes of quota entities (Kafka's QuotaTypes bits).
const (
	clientIDShape     = 1 << iota // client id (or default client id) alone
	userShape                     // user (or default user) alone
	userClientIDShape             // user and client id
)

// Tags identify a sensor: the user and client id of the entity level that
// applies to its clients ("" for a part the level lacks). User is the
// principal's name as is; metrics show it sanitized (SanitizedUser), as
// Kafka tags them.
type Tags struct {
	User, ClientID string
}

// SanitizedUser is the user tag as Kafka's metrics carry it: URL-encoded
// (Kafka's Sanitizer), so that any principal name is a valid tag value.
func (t Tags) SanitizedUser() string { return Sanitize(t.User) }

// Sanitize is Kafka's Sanitizer.sanitize: Java's URL form encoding (letters,
// digits and ".-*_" kept, others as %XX of their UTF-8 bytes), with '*'
// and the space's '+' percent-encoded too.
func Sanitize(name string) string {
	enc := url.QueryEscape(name)
	// Go's form encoding differs from Java's only in keeping '~' and in
	// encoding '*', which Kafka encodes anyway.
	return strings.NewReplacer("+", "%20", "~", "%7E").Replace(enc)
}

// named is the QuotaName of a given name; def is the type's default.
func named(n string) metadata.QuotaName { return metadata.QuotaName{Present: true, Name: n} }

var (
	def    = metadata.QuotaName{Present: true, Default: true}
	absent = metadata.QuotaName{}
)

// quotaSet is one quota type's values by entity, and the shapes of the
// entities ever set.
type quotaSet struct {
	bounds map[metadata.QuotaEntity]float64
	shapes int
}

func (q *quotaSet) has(user, clientID metadata.QuotaName) bool {
	_, ok := q.bounds[metadata.QuotaEntity{User: user, ClientID: clientID}]
	return ok
}

func (q *quotaSet) get(user, clientID metadata.QuotaName) (float64, bool) {
	v, ok := q.bounds[metadata.QuotaEntity{User: user, ClientID: clientID}]
	return v, ok
}

// tags are the sensor tags of a client (Kafka's quotaMetricTags).
func (q *quotaSet) tags(user, clientID string) Tags {
	switch q.shapes {
	case 0, clientIDShape:
		return Tags{ClientID: clientID}
	case userShape:
		return Tags{User: user}
	case userClientIDShape:
		return Tags{User: user, ClientID: clientID}
	}
	u, c := named(user), named(clientID)
	switch {
	case q.has(u, c), q.has(u, def):
		return Tags{User: user, ClientID: clientID}
	case q.has(u, absent):
		return Tags{User: user}
	case q.has(def, c), q.has(def, def):
		return Tags{User: user, ClientID: clientID}
	case q.has(def, absent):
		return Tags{User: user}
	default:
		return Tags{ClientID: clientID}
	}
}

// bound is the quota of the sensor with tags t (Kafka's quotaLimit): the
// most specific entity set for the tags' level, +Inf when none is.
func (q *quotaSet) bound(t Tags) float64 {
	var order [][2]metadata.QuotaName
	u, c := named(t.User), named(t.ClientID)
	switch {
	case t.User != "" && t.ClientID != "":
		order = [][2]metadata.QuotaName{{u, c}, {u, def}, {def, c}, {def, def}}
	case t.User != "":
		order = [][2]metadata.QuotaName{{u, absent}, {def, absent}}
	case t.ClientID != "":
		order = [][2]metadata.QuotaName{{absent, c}, {absent, def}}
	}
	for _, e := range order {
		if v, ok := q.get(e[0], e[1]); ok {
			return v
		}
	}
	return math.Inf(1)
}

// shapeOf is the shape bit of a user/client-id entity (0 for others).
func shapeOf(e metadata.QuotaEntity) int {
	switch {
	case e.IP.Present:
		return 0
	case e.User.Present && e.ClientID.Present:
		return userClientIDShape
	case e.User.Present:
		return userShape
	case e.ClientID.Present:
		return clientIDShape
	}
	return 0
}
