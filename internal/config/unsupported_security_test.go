package config

import (
	"strings"
	"testing"
)

// TestLoadRefusesUnsupportedSecurity: a configuration asking for security
// Gregor does not implement stops Load with a one-line error naming the
// key; Kafka's defaults and what Gregor does implement load.
func TestLoadRefusesUnsupportedSecurity(t *testing.T) {
	const oauthValidator = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	refused := map[string]string{
		"authorizer.class.name":                                                 "kafka.security.authorizer.AclAuthorizer",
		"principal.builder.class":                                               "com.example.MyPrincipalBuilder",
		"listener.name.sasl_ssl.principal.builder.class":                        "com.example.MyPrincipalBuilder",
		"sasl.enabled.mechanisms":                                               "GSSAPI,PLAIN",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms":                  "gssapi",
		"listener.name.sasl_plaintext.plain.sasl.server.callback.handler.class": "com.example.LdapCallbackHandler",
		"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class":       oauthValidator,
		"sasl.server.callback.handler.class":                                    "com.example.Handler",
		"sasl.kerberos.service.name":                                            "kafka",
		"listener.name.sasl_plaintext.gssapi.sasl.kerberos.service.name":        "kafka",
		"ssl.engine.factory.class":                                              "com.example.Engine",
		"security.providers":                                                    "com.example.ProviderCreator",
		"ssl.keymanager.algorithm":                                              "PKIX",
		"sasl.login.callback.handler.class":                                     "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"delegation.token.secret.key":                                           "secret",
	}
	for k, v := range refused {
		_, _, err := Load(map[string]string{k: v})
		if err == nil {
			t.Errorf("%s=%s loaded", k, v)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, k) || strings.Contains(msg, "\n") {
			t.Errorf("%s=%s: error is not one line naming the key: %q", k, v, msg)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error quotes the value: %v", k, err)
		}
	}
	accepted := map[string]string{
		"authorizer.class.name":      StandardAuthorizerClass,
		"principal.builder.class":    "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
		"sasl.enabled.mechanisms":    "PLAIN,SCRAM-SHA-512",
		"ssl.keymanager.algorithm":   "SunX509",
		"ssl.trustmanager.algorithm": "PKIX",
		"listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class": oauthValidator,
	}
	for k, v := range accepted {
		if _, _, err := Load(map[string]string{k: v}); err != nil {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}

// TestValidateBrokerDynamicRefusesUnsupportedSecurity: the same settings
// are refused as dynamic broker configs.
func TestValidateBrokerDynamicRefusesUnsupportedSecurity(t *testing.T) {
	for k, v := range map[string]string{
		"listener.name.sasl_plaintext.principal.builder.class": "com.example.MyPrincipalBuilder",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI",
	} {
		if err := ValidateBrokerDynamic(k, &v, true); err == nil {
			t.Errorf("dynamic %s=%s accepted", k, v)
		}
	}
	ok := "PLAIN"
	if err := ValidateBrokerDynamic("listener.name.sasl_plaintext.sasl.enabled.mechanisms", &ok, true); err != nil {
		t.Errorf("dynamic sasl.enabled.mechanisms=PLAIN: %v", err)
	}
}
