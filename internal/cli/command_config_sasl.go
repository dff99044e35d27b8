package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	authsasl "gregor/internal/auth/sasl"
)

// Kafka's client-side login modules and the OAuth login callback handler
// (the second name is its package before Kafka 3.4).
const (
	plainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	oauthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	oauthLoginHandler      = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	oauthLoginHandlerOld   = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
)

// saslMechanism builds the franz-go mechanism that sasl.mechanism and
// sasl.jaas.config describe:
//
//   - PLAIN and SCRAM-SHA-256/512 take username and password from the
//     PlainLoginModule or ScramLoginModule options (tokenauth="true" marks a
//     delegation token, SCRAM only);
//   - OAUTHBEARER without a login callback handler makes an unsecured
//     (unsigned) token from the unsecuredLogin* options, as Kafka's default
//     OAuthBearerUnsecuredLoginCallbackHandler does;
//   - OAUTHBEARER with sasl.login.callback.handler.class set to Kafka's
//     OAuthBearerLoginCallbackHandler and sasl.oauthbearer.token.endpoint.url
//     a file: URL sends the token in that file (a token issued beforehand).
//
// Left out: GSSAPI (Kerberos); fetching a token from an OAuth server (an
// http(s) token endpoint, client credentials); custom callback handler
// classes; Kafka 4.1's sasl.oauthbearer.jwt.retriever.class.
func saslMechanism(props map[string]string) (sasl.Mechanism, error) {
	mech, ok := props["sasl.mechanism"]
	if !ok {
		return nil, errors.New("sasl.mechanism is not set (Kafka's default, GSSAPI, is not supported here): use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	}
	mech = strings.TrimSpace(mech)
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER":
	case "GSSAPI":
		return nil, errors.New("sasl.mechanism GSSAPI (Kerberos) is not supported here: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	default:
		return nil, fmt.Errorf("sasl.mechanism %q is not supported: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", mech)
	}
	handler := strings.TrimSpace(props["sasl.login.callback.handler.class"])
	switch handler {
	case "":
	case oauthLoginHandler, oauthLoginHandlerOld:
		if mech != "OAUTHBEARER" {
			return nil, fmt.Errorf("sasl.login.callback.handler.class %s goes with sasl.mechanism=OAUTHBEARER, not %s", handler, mech)
		}
	default:
		return nil, fmt.Errorf("sasl.login.callback.handler.class %s is not supported: Java callback handlers cannot run here", handler)
	}
	jaasText, ok := props["sasl.jaas.config"]
	if !ok || strings.TrimSpace(jaasText) == "" {
		return nil, errors.New("sasl.jaas.config is not set: give the login module and its options")
	}
	jaas, err := authsasl.ParseJAAS(jaasText)
	if err != nil {
		return nil, fmt.Errorf("sasl.jaas.config: %w", err)
	}

	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if jaas.Module != plainLoginModule && jaas.Module != scramLoginModule {
			return nil, fmt.Errorf("sasl.jaas.config: login module %s does not go with sasl.mechanism=%s (use %s or %s)", jaas.Module, mech, plainLoginModule, scramLoginModule)
		}
		user, pass, err := jaasCredentials(jaas)
		if err != nil {
			return nil, err
		}
		if mech == "PLAIN" {
			return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
		}
		a := scram.Auth{User: user, Pass: pass, IsToken: strings.EqualFold(jaas.Options["tokenauth"], "true")}
		if mech == "SCRAM-SHA-256" {
			return a.AsSha256Mechanism(), nil
		}
		return a.AsSha512Mechanism(), nil
	}

	if jaas.Module != oauthBearerLoginModule {
		return nil, fmt.Errorf("sasl.jaas.config: login module %s does not go with sasl.mechanism=OAUTHBEARER (use %s)", jaas.Module, oauthBearerLoginModule)
	}
	if handler != "" {
		token, err := tokenFromEndpoint(props["sasl.oauthbearer.token.endpoint.url"])
		if err != nil {
			return nil, err
		}
		return oauth.Auth{Token: token}.AsMechanism(), nil
	}
	if _, ok := props["sasl.oauthbearer.token.endpoint.url"]; ok {
		return nil, fmt.Errorf("sasl.oauthbearer.token.endpoint.url is used only with sasl.login.callback.handler.class=%s", oauthLoginHandler)
	}
	// Check the options now, so a mistake is an error before connecting;
	// each connection then gets a token with fresh iat and exp.
	if _, _, err := unsecuredToken(jaas.Options, time.Now()); err != nil {
		return nil, err
	}
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		token, ext, err := unsecuredToken(jaas.Options, time.Now())
		return oauth.Auth{Token: token, Extensions: ext}, err
	}), nil
}

func jaasCredentials(e *authsasl.JAASEntry) (user, pass string, err error) {
	user, okUser := e.Options["username"]
	pass, okPass := e.Options["password"]
	switch {
	case !okUser:
		return "", "", errors.New("sasl.jaas.config: the login module has no username option")
	case !okPass:
		return "", "", errors.New("sasl.jaas.config: the login module has no password option")
	}
	return user, pass, nil
}

// tokenFromEndpoint reads the token of a file: token endpoint URL, as
// Kafka's FileJwtRetriever does.
func tokenFromEndpoint(endpoint string) (string, error) {
	const key = "sasl.oauthbearer.token.endpoint.url"
	if strings.TrimSpace(endpoint) == "" {
		return "", fmt.Errorf("%s is not set: the OAuth login callback handler needs it", key)
	}
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("%s: only a file: URL (a token issued beforehand) is supported; fetching a token from an OAuth server is not", key)
	}
	path := u.Path
	if path == "" {
		path = u.Opaque // file:token.jwt
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("%s: the token file %s is empty", key, path)
	}
	return token, nil
}

// The unsecuredLogin* options of Kafka's OAuthBearerUnsecuredLoginCallbackHandler.
const (
	unsecuredPrefix          = "unsecuredLogin"
	unsecuredStringClaim     = unsecuredPrefix + "StringClaim_"
	unsecuredNumberClaim     = unsecuredPrefix + "NumberClaim_"
	unsecuredListClaim       = unsecuredPrefix + "ListClaim_"
	unsecuredExtension       = unsecuredPrefix + "Extension_"
	unsecuredPrincipalClaim  = unsecuredPrefix + "PrincipalClaimName"
	unsecuredLifetimeSeconds = unsecuredPrefix + "LifetimeSeconds"
)

// Kafka's OAuthBearerClientInitialResponse patterns for extensions.
var (
	extensionNamePattern  = regexp.MustCompile(`^[A-Za-z]+$`)
	extensionValuePattern = regexp.MustCompile(`^[\x21-\x7E \t\r\n]+$`)
)

// unsecuredToken makes the unsigned JWS Kafka's unsecured login handler
// makes: header {"alg":"none"}, claims iat and exp (seconds, exp one hour
// later unless unsecuredLoginLifetimeSeconds says otherwise) and the
// configured string, number and list claims, and an empty signature. The
// principal claim (sub unless unsecuredLoginPrincipalClaimName names
// another) must be a non-empty string. Brokers accept such a token only
// with the unsecured validator, which is meant for development.
func unsecuredToken(options map[string]string, now time.Time) (string, map[string]string, error) {
	claims := map[string]any{}
	extensions := map[string]string{}
	lifetime := int64(3600)
	principalClaim := "sub"
	for name, value := range options {
		var claim string
		switch {
		case name == unsecuredLifetimeSeconds:
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil {
				return "", nil, fmt.Errorf("sasl.jaas.config: %s must be a whole number of seconds", name)
			}
			lifetime = n
			continue
		case name == unsecuredPrincipalClaim:
			if v := strings.TrimSpace(value); v != "" {
				principalClaim = v
			}
			continue
		case strings.HasPrefix(name, unsecuredExtension):
			ext := strings.TrimPrefix(name, unsecuredExtension)
			if !extensionNamePattern.MatchString(ext) || ext == "auth" {
				return "", nil, fmt.Errorf("sasl.jaas.config: extension name %q is invalid (letters only, not \"auth\")", ext)
			}
			if !extensionValuePattern.MatchString(value) {
				return "", nil, fmt.Errorf("sasl.jaas.config: the value of extension %s has characters an extension may not hold", ext)
			}
			extensions[ext] = value
			continue
		case strings.HasPrefix(name, unsecuredStringClaim) && len(name) > len(unsecuredStringClaim):
			claim = strings.TrimPrefix(name, unsecuredStringClaim)
			claims[claim] = value
		case strings.HasPrefix(name, unsecuredNumberClaim) && len(name) > len(unsecuredNumberClaim):
			claim = strings.TrimPrefix(name, unsecuredNumberClaim)
			n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return "", nil, fmt.Errorf("sasl.jaas.config: %s must be a number", name)
			}
			claims[claim] = n
		case strings.HasPrefix(name, unsecuredListClaim) && len(name) > len(unsecuredListClaim):
			// The first character is the delimiter: "|a|b" is [a, b].
			claim = strings.TrimPrefix(name, unsecuredListClaim)
			list := []string{}
			if len(value) > 1 {
				list = strings.Split(value[1:], value[:1])
			}
			claims[claim] = list
		default:
			continue // other options belong to other handlers, as in Kafka
		}
		if claim == "iat" || claim == "exp" {
			return "", nil, fmt.Errorf("sasl.jaas.config: %s: the %s claim is set from the clock and cannot be given", name, claim)
		}
	}
	if p, ok := claims[principalClaim].(string); !ok || strings.TrimSpace(p) == "" {
		return "", nil, fmt.Errorf("sasl.jaas.config: the unsecured OAUTHBEARER token needs a principal: set %s%s", unsecuredStringClaim, principalClaim)
	}
	iat := float64(now.UnixMilli()) / 1000
	claims["iat"] = iat
	claims["exp"] = iat + float64(lifetime)
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", nil, fmt.Errorf("sasl.jaas.config: unsecured token claims: %w", err)
	}
	enc := base64.RawURLEncoding
	token := enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(payload) + "."
	if len(extensions) == 0 {
		extensions = nil
	}
	return token, extensions, nil
}
