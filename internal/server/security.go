package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"gregor/internal/auth"
	"gregor/internal/auth/sasl"
	"gregor/internal/config"
	"gregor/internal/metadata"
	"gregor/internal/network"
	"gregor/internal/rpc"
)

// Security wiring: from Kafka's listener-scoped ssl.* and sasl.* settings to
// the socket server's listener configurations (the server side) and to the
// rpc clients this node dials its peers with (the client side, with the
// security of the inter-broker or controller listener, as Kafka's
// inter-broker clients use that listener's settings).

// security holds what the listeners' authentication owns for the life of
// the process: the reloadable TLS contexts and the SASL mechanisms (some
// run a JWKS refresher).
type security struct {
	tls     map[string]*auth.ServerTLS // by listener name
	closers []func()
}

func (sec *security) close() {
	for _, c := range sec.closers {
		c()
	}
}

// tlsSettings reads the ssl.* settings of a listener.
func tlsSettings(b *config.Broker, listener string) auth.TLSSettings {
	v := func(k string) string { return b.ListenerValue(listener, k) }
	return auth.TLSSettings{
		KeystoreType:             v("ssl.keystore.type"),
		KeystoreLocation:         v("ssl.keystore.location"),
		KeystorePassword:         v("ssl.keystore.password"),
		KeyPassword:              v("ssl.key.password"),
		KeystoreKey:              v("ssl.keystore.key"),
		KeystoreCertificateChain: v("ssl.keystore.certificate.chain"),
		TruststoreType:           v("ssl.truststore.type"),
		TruststoreLocation:       v("ssl.truststore.location"),
		TruststorePassword:       v("ssl.truststore.password"),
		TruststoreCertificates:   v("ssl.truststore.certificates"),
		ClientAuth:               v("ssl.client.auth"),
		Protocol:                 v("ssl.protocol"),
		EnabledProtocols:         config.SplitList(v("ssl.enabled.protocols")),
		CipherSuites:             config.SplitList(v("ssl.cipher.suites")),
		EndpointIdentification:   v("ssl.endpoint.identification.algorithm"),
	}
}

func usesTLS(protocol string) bool  { return protocol == "SSL" || protocol == "SASL_SSL" }
func usesSASL(protocol string) bool { return strings.HasPrefix(protocol, "SASL_") }

// listenerSecurity fills in the TLS and SASL parts of a listener's socket
// server configuration.
func (s *Server) listenerSecurity(lc *network.ListenerConfig, scram sasl.ScramLookup) error {
	name, protocol := lc.Name, lc.SecurityProtocol
	if s.sec == nil {
		s.sec = &security{tls: map[string]*auth.ServerTLS{}}
	}
	if usesTLS(protocol) {
		st, err := auth.NewServerTLS(tlsSettings(s.cfg, name))
		if err != nil {
			return fmt.Errorf("listener %s: %w", name, err)
		}
		s.sec.tls[name] = st
		lc.TLS = st.Config()
		mapper, err := auth.ParsePrincipalMapping(s.cfg.ListenerValue(name, "ssl.principal.mapping.rules"))
		if err != nil {
			return fmt.Errorf("listener %s: ssl.principal.mapping.rules: %w", name, err)
		}
		lc.PrincipalFromCert = func(cs tls.ConnectionState) (auth.Principal, error) {
			return auth.CertificatePrincipal(cs, mapper)
		}
	}
	if usesSASL(protocol) {
		mechs, err := s.saslServers(name, scram)
		if err != nil {
			return fmt.Errorf("listener %s: %w", name, err)
		}
		lc.SASL = mechs
		lc.ReauthMax = func(mechanism string) time.Duration {
			ms, _ := strconv.ParseInt(s.cfg.MechanismValue(name, mechanism, "connections.max.reauth.ms"), 10, 64)
			return time.Duration(ms) * time.Millisecond
		}
	}
	return nil
}

// enabledMechanisms is sasl.enabled.mechanisms of a listener. Gregor has
// no Kerberos: a GSSAPI set in the configuration stops config.Load, and
// the one left is Kafka's default (the key unset), so it is dropped and a
// listener left with no mechanism is an error.
func (s *Server) enabledMechanisms(listener string) ([]string, error) {
	var out []string
	for _, m := range config.SplitList(s.cfg.ListenerValue(listener, "sasl.enabled.mechanisms")) {
		if m = strings.ToUpper(m); m != sasl.GSSAPI {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sasl.enabled.mechanisms names no mechanism Gregor supports (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; GSSAPI is not supported)")
	}
	return out, nil
}

// jaas reads the JAAS configuration of a mechanism on a listener.
func (s *Server) jaas(listener, mechanism string) (*sasl.JAASEntry, error) {
	v := s.cfg.MechanismValue(listener, mechanism, "sasl.jaas.config")
	if v == "" {
		return nil, nil
	}
	e, err := sasl.ParseJAAS(v)
	if err != nil {
		return nil, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config: %w", strings.ToLower(listener), strings.ToLower(mechanism), err)
	}
	return e, nil
}

// clientSecurity is how this node dials a listener of its peers (the
// inter-broker listener, or the controller listener): that listener's TLS
// settings, and the mechanism given with the credentials of the listener's
// JAAS configuration (username, password).
func (s *Server) clientSecurity(listener, mechanism string) (rpc.Security, error) {
	var sec rpc.Security
	protocol := s.cfg.ListenerSecurityProtocolMap[listener]
	if usesTLS(protocol) {
		cfg, err := auth.ClientTLS(tlsSettings(s.cfg, listener), "")
		if err != nil {
			return sec, fmt.Errorf("TLS client of listener %s: %w", listener, err)
		}
		sec.TLS = cfg
	}
	if !usesSASL(protocol) {
		return sec, nil
	}
	mechanism = strings.ToUpper(mechanism)
	enabled, err := s.enabledMechanisms(listener)
	if err != nil {
		return sec, fmt.Errorf("listener %s: %w", listener, err)
	}
	if !slices.Contains(enabled, mechanism) {
		return sec, fmt.Errorf("SASL mechanism %s between nodes is not in sasl.enabled.mechanisms of listener %s (%s)",
			mechanism, listener, strings.Join(enabled, ","))
	}
	e, err := s.jaas(listener, mechanism)
	if err != nil {
		return sec, err
	}
	if e == nil || e.Options["username"] == "" {
		return sec, fmt.Errorf("listener.name.%s.%s.sasl.jaas.config needs username and password options: this node authenticates to its peers with them",
			strings.ToLower(listener), strings.ToLower(mechanism))
	}
	user, pass := e.Options["username"], e.Options["password"]
	switch mechanism {
	case sasl.Plain:
		sec.SASL = plain.Auth{User: user, Pass: pass}.AsMechanism()
	case sasl.ScramSHA256:
		sec.SASL = scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	case sasl.ScramSHA512:
		sec.SASL = scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	default:
		return sec, fmt.Errorf("SASL mechanism %s between nodes is not supported (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mechanism)
	}
	return sec, nil
}

// interBrokerSecurity is how this broker dials other brokers.
func (s *Server) interBrokerSecurity() (rpc.Security, error) {
	return s.clientSecurity(s.cfg.InterBrokerListenerName, s.cfg.ListenerValue(s.cfg.InterBrokerListenerName, "sasl.mechanism.inter.broker.protocol"))
}

// controllerSecurity is how this node dials the controllers.
func (s *Server) controllerSecurity() (rpc.Security, error) {
	l := s.cfg.ControllerListenerNames[0]
	m := s.cfg.ListenerValue(l, "sasl.mechanism.controller.protocol")
	if usesSASL(s.cfg.ListenerSecurityProtocolMap[l]) && strings.HasPrefix(strings.ToUpper(m), "SCRAM-") {
		// The controllers hold the SCRAM credentials in the metadata
		// log they would need to authenticate to read: Kafka refuses it too.
		return rpc.Security{}, fmt.Errorf("sasl.mechanism.controller.protocol=%s: SCRAM cannot authenticate to the controllers, which keep the SCRAM credentials; use PLAIN (or OAUTHBEARER) on the controller listener", m)
	}
	return s.clientSecurity(l, m)
}

// scramLookup finds SCRAM credentials in the metadata image a node
// follows, at the moment of each authentication.
func scramLookup(image func() *metadata.Image) sasl.ScramLookup {
	return func(mechanism, user string) (sasl.ScramCredential, bool) {
		return image().ScramCredential(mechanism, user)
	}
}

// oauthKeys are the settings of an OAUTHBEARER mechanism.
var oauthKeys = []string{
	sasl.ConfigServerCallbackHandlerClass, sasl.ConfigJWKSEndpointURL, sasl.ConfigJWKSRefreshMs,
	sasl.ConfigJWKSRetryBackoffMs, sasl.ConfigJWKSRetryBackoffMaxMs, sasl.ConfigExpectedAudience,
	sasl.ConfigExpectedIssuer, sasl.ConfigClockSkewSeconds, sasl.ConfigScopeClaimName, sasl.ConfigSubClaimName,
}

// saslServers builds the mechanisms enabled on a SASL listener.
func (s *Server) saslServers(listener string, scramCreds sasl.ScramLookup) ([]sasl.Server, error) {
	names, err := s.enabledMechanisms(listener)
	if err != nil {
		return nil, err
	}
	var out []sasl.Server
	for _, name := range names {
		jaas, err := s.jaas(listener, name)
		if err != nil {
			return nil, err
		}
		switch name {
		case sasl.Plain:
			if jaas == nil {
				return nil, fmt.Errorf("PLAIN needs listener.name.%s.plain.sasl.jaas.config with its users (user_<name>=\"<password>\")", strings.ToLower(listener))
			}
			m, err := sasl.NewPlainFromJAAS(jaas)
			if err != nil {
				return nil, fmt.Errorf("listener.name.%s.plain.sasl.jaas.config: %w", strings.ToLower(listener), err)
			}
			out = append(out, m)
		case sasl.ScramSHA256, sasl.ScramSHA512:
			m, err := sasl.NewScram(name, scramCreds)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		case sasl.OAuthBearer:
			props := map[string]string{}
			for _, k := range oauthKeys {
				if s.cfg.MechanismSet(listener, name, k) {
					props[k] = s.cfg.MechanismValue(listener, name, k)
				}
			}
			cfg, err := sasl.ParseOAuthConfig(props, jaas)
			if err != nil {
				return nil, fmt.Errorf("OAUTHBEARER: %w", err)
			}
			cfg.Log = s.logger.With("component", "oauthbearer", "listener", listener)
			m, err := sasl.NewOAuthBearer(context.Background(), cfg)
			if err != nil {
				return nil, fmt.Errorf("OAUTHBEARER: %w", err)
			}
			s.sec.closers = append(s.sec.closers, m.Close)
			out = append(out, m)
		default:
			return nil, fmt.Errorf("SASL mechanism %q in sasl.enabled.mechanisms is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", name)
		}
	}
	return out, nil
}

// tlsReloader is a metadata publisher that reloads the TLS contexts of the
// broker's listeners when their ssl.* settings change through dynamic
// broker configs (IncrementalAlterConfigs on this broker or on the
// cluster default, with a listener prefix as Kafka requires), as Kafka's
// DynamicListenerConfig reconfigures its SslFactory: new connections use
// the new keystore, open ones keep theirs. A keystore that does not load,
// or whose certificate names another subject, is refused and the old one
// stays.
type tlsReloader struct {
	s *Server
	// applied is the effective settings last loaded per listener.
	applied map[string]auth.TLSSettings
}

func newTLSReloader(s *Server) *tlsReloader {
	r := &tlsReloader{s: s, applied: map[string]auth.TLSSettings{}}
	for name := range s.sec.tls {
		r.applied[name] = tlsSettings(s.cfg, name)
	}
	return r
}

func (r *tlsReloader) Publish(delta *metadata.Delta, img *metadata.Image) {
	if len(r.applied) == 0 {
		return
	}
	// Kafka's precedence: per-broker dynamic, cluster-default dynamic,
	// then server.properties.
	eff := *r.s.cfg
	eff.Props = maps.Clone(r.s.cfg.Props)
	maps.Copy(eff.Props, img.ClusterConfigs())
	maps.Copy(eff.Props, img.BrokerConfigs(r.s.cfg.NodeID))
	for name, st := range r.s.sec.tls {
		want := tlsSettings(&eff, name)
		if reflect.DeepEqual(want, r.applied[name]) {
			continue
		}
		r.applied[name] = want
		changed, err := st.Reload(want)
		if err != nil {
			r.s.logger.Error("TLS settings changed but not applied; the listener keeps its previous keystore and truststore",
				"listener", name, "err", err)
			continue
		}
		if changed {
			r.s.logger.Info("TLS keystore and truststore reloaded", "listener", name)
		}
	}
}
