package metadata

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
