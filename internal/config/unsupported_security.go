package config

import (
	"fmt"
	"sort"
	"strings"
)

// Security settings Gregor cannot honour. A Kafka configuration that asks
// for one of them would otherwise start a broker less secure than asked
// (a custom principal builder or SASL callback ignored, Kerberos dropped),
// so Load refuses it with one line naming the key. Kafka's keys that only
// tune the JVM's security (providers, key manager algorithms) count too:
// set to anything but Kafka's default they ask for something Go's
// crypto/tls does not have. Each may be given for a listener
// (listener.name.<l>.<key>) or a mechanism (listener.name.<l>.<m>.<key>).

// unsupportedSecurityKeys are Kafka security settings Gregor has no
// counterpart for, with the value that asks for nothing ("" when any
// value does).
var unsupportedSecurityKeys = map[string]struct{ harmless, what string }{
	"ssl.engine.factory.class":            {"", "a custom SSL engine factory"},
	"security.providers":                  {"", "Java security providers"},
	"ssl.provider":                        {"", "a Java security provider for TLS"},
	"ssl.secure.random.implementation":    {"", "a Java SecureRandom implementation"},
	"ssl.keymanager.algorithm":            {"SunX509", "a Java key manager algorithm"},
	"ssl.trustmanager.algorithm":          {"PKIX", "a Java trust manager algorithm"},
	"sasl.login.class":                    {"", "a custom SASL login class"},
	"sasl.login.callback.handler.class":   {"", "a custom SASL login callback handler (nodes authenticate to each other with the JAAS username and password, PLAIN or SCRAM)"},
	"sasl.client.callback.handler.class":  {"", "a custom SASL client callback handler"},
	"sasl.oauthbearer.token.endpoint.url": {"", "fetching OAuth tokens between nodes"},
	"delegation.token.secret.key":         {"", "delegation tokens"},
	"delegation.token.master.key":         {"", "delegation tokens"},
	"delegation.token.max.lifetime.ms":    {"", "delegation tokens"},
	"delegation.token.expiry.time.ms":     {"", "delegation tokens"},
}

// StandardAuthorizerClass is the one authorizer.class.name Gregor has:
// Kafka's StandardAuthorizer, with the ACLs in the cluster metadata.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// defaultPrincipalBuilder is the only principal.builder.class Gregor has.
const defaultPrincipalBuilder = "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"

// oauthValidatorHandlers are the sasl.server.callback.handler.class values
// Gregor implements, for OAUTHBEARER only (internal/auth/sasl checks which
// one a listener names).
var oauthValidatorHandlers = []string{
	"org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
	"org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler",
}

// checkUnsupportedSecurity returns an error for the first property (in key
// order) that asks for security Gregor does not implement.
func checkUnsupportedSecurity(props map[string]string) error {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		base, mechanism := securityKeyBase(k)
		if u, ok := unsupportedSecurityKeys[base]; ok {
			if v != "" && v != u.harmless {
				return fmt.Errorf("%s is set, but Gregor does not support %s: remove it", k, u.what)
			}
			continue
		}
		switch {
		case k == "authorizer.class.name" && v != "" && v != StandardAuthorizerClass:
			return fmt.Errorf("authorizer.class.name=%s is not supported: use %s (ACLs in the cluster metadata) or leave it unset", v, StandardAuthorizerClass)
		case strings.HasPrefix(base, "sasl.kerberos."):
			return fmt.Errorf("%s is set, but Gregor does not support Kerberos (GSSAPI): remove it", k)
		case base == "principal.builder.class" && v != "" && v != defaultPrincipalBuilder:
			return fmt.Errorf("%s=%s is not supported: Gregor builds principals as Kafka's DefaultKafkaPrincipalBuilder (ssl.principal.mapping.rules maps certificate subjects)", k, v)
		case base == "sasl.server.callback.handler.class" && v != "":
			known := false
			for _, h := range oauthValidatorHandlers {
				known = known || h == v
			}
			if !known || (mechanism != "" && mechanism != "oauthbearer") {
				return fmt.Errorf("%s=%s is not supported: Gregor runs no custom SASL callback handlers; only OAUTHBEARER's validator handlers (listener.name.<l>.oauthbearer.sasl.server.callback.handler.class)", k, v)
			}
		case base == "sasl.enabled.mechanisms":
			for _, m := range splitList(v) {
				if strings.EqualFold(m, "GSSAPI") {
					return fmt.Errorf("%s=%s: GSSAPI (Kerberos) is not supported by Gregor; enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", k, v)
				}
			}
		}
	}
	return nil
}

// securityKeyBase strips a listener prefix (listener.name.<l>.) and a
// mechanism prefix after it from a key, and returns the key Kafka names
// and the mechanism (lower case, "" without one).
func securityKeyBase(k string) (base, mechanism string) {
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return k, ""
	}
	_, base, ok = strings.Cut(rest, ".")
	if !ok {
		return k, ""
	}
	if _, known := unsupportedSecurityKeys[base]; known || isSecurityBase(base) {
		return base, ""
	}
	if m, after, ok := strings.Cut(base, "."); ok {
		return after, strings.ToLower(m)
	}
	return base, ""
}

// isSecurityBase reports whether a key is one checkUnsupportedSecurity
// reads when given without a mechanism prefix.
func isSecurityBase(k string) bool {
	return strings.HasPrefix(k, "sasl.kerberos.") || k == "principal.builder.class" ||
		k == "sasl.server.callback.handler.class" || k == "sasl.enabled.mechanisms"
}
