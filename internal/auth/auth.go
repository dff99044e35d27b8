// Package auth holds who a connection is and how that is proved: the
// principal of a request, the TLS contexts of listeners and of node-to-node
// clients built from Kafka's ssl.* settings, and the mapping of a client
// certificate's subject to a principal (ssl.principal.mapping.rules). The
// SASL mechanisms are in the sasl subpackage.
package auth

// Principal is Kafka's KafkaPrincipal: a type and a name, written
// "User:alice". Every request carries one; the authorizer decides on it.
type Principal struct {
	Type string
	Name string
}

// Anonymous is the principal of a PLAINTEXT connection, and of an SSL
// connection whose client presented no certificate.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// UserType is the principal type Kafka's DefaultKafkaPrincipalBuilder gives
// every authenticated connection.
const UserType = "User"

// User returns the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

func (p Principal) String() string { return p.Type + ":" + p.Name }
