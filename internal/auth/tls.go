package auth

// TLSSettings are the ssl.* values of one listener (server side) or one
// client (a node dialing a peer, a CLI command's --command-config), after
// listener-prefix resolution. Empty strings are unset, with one exception:
// EndpointIdentification "" is Kafka's explicit "no host name check", so the
// configuration layer must fill in Kafka's default "https" itself.
type TLSSettings struct {
	KeystoreType             string   // ssl.keystore.type: JKS (default), PKCS12, PEM
	KeystoreLocation         string   // ssl.keystore.location
	KeystorePassword         string   // ssl.keystore.password
	KeyPassword              string   // ssl.key.password
	KeystoreKey              string   // ssl.keystore.key (inline PEM)
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain (inline PEM)
	TruststoreType           string   // ssl.truststore.type: JKS (default), PKCS12, PEM
	TruststoreLocation       string   // ssl.truststore.location
	TruststorePassword       string   // ssl.truststore.password
	TruststoreCertificates   string   // ssl.truststore.certificates (inline PEM)
	ClientAuth               string   // ssl.client.auth: none, requested, required (servers)
	Protocol                 string   // ssl.protocol
	EnabledProtocols         []string // ssl.enabled.protocols
	CipherSuites             []string // ssl.cipher.suites (Kafka/IANA names)
	EndpointIdentification   string   // ssl.endpoint.identification.algorithm: https or "" (clients)
	AllowDNChanges           bool     // ssl.allow.dn.changes: a reload may change the certificate's subject (servers)
	AllowSANChanges          bool     // ssl.allow.san.changes: a reload may drop subject alternative names (servers)
}

// DefaultEndpointIdentification is Kafka's default
// ssl.endpoint.identification.algorithm: clients check the server's host
// name against its certificate.
const DefaultEndpointIdentification = "https"
