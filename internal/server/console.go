package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"gregor/internal/auth"
	"gregor/internal/config"
	"gregor/internal/console"
	"gregor/internal/metrics"
)

// newConsole makes the web console of a broker, mounted on the
// gregor.http.listen listener; a controller-only node has none (the
// console reads the cluster through a broker listener). It learns the
// broker listener once that is bound (setConsoleBroker).
func (s *Server) newConsole() func(mux *http.ServeMux) {
	if !s.cfg.HasRole("broker") {
		return nil
	}
	s.console = console.New(console.Config{
		Metrics:    s.metrics.Gatherer(),
		HTTPListen: s.cfg.GregorHTTPListen,
		Logger:     s.logger.With("component", "console"),
	})
	// Group lag in /metrics comes from the console's view of the cluster:
	// the groups this broker coordinates.
	s.metrics.SetGroupLag(func(ctx context.Context) ([]metrics.GroupLag, error) {
		return s.console.GroupLags(ctx, s.cfg.NodeID)
	})
	return s.console.Mount
}

// setConsoleBroker gives the console this node's first broker listener,
// once it is bound: its address (a wildcard bind turned into loopback so
// that it can be dialled), for SSL and SASL_SSL a TLS client trusting the
// listener's trust store, and for SASL_* the mechanisms visitors log in
// with. The console gets no credentials: on a SASL listener it reads the
// cluster only as a logged-in visitor.
func (s *Server) setConsoleBroker() {
	if s.console == nil {
		return
	}
	ls := s.listeners(false)
	if len(ls) == 0 {
		return
	}
	l := ls[0]
	a, ok := s.brokerNet.Addr(l.Name).(*net.TCPAddr)
	if !ok {
		return
	}
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		// A wildcard bind (0.0.0.0, or :: which Linux makes
		// dual-stack) is reachable on IPv4 loopback.
		host = "127.0.0.1"
	}
	b := console.Broker{Addr: net.JoinHostPort(host, strconv.Itoa(a.Port)), Listener: l.Name}
	protocol := s.cfg.ListenerSecurityProtocolMap[l.Name]
	if protocol == "SSL" || protocol == "SASL_SSL" {
		tlsCfg, err := auth.ClientTLS(consoleTLSSettings(s.cfg, l.Name), "")
		if err != nil {
			b.Err = fmt.Errorf("the console cannot connect to listener %s with TLS: %w", l.Name, err)
		}
		b.TLS, b.ServerName = tlsCfg, s.advertisedHost(l)
	}
	if strings.HasPrefix(protocol, "SASL_") {
		b.SASL = true
		for _, m := range config.SplitList(s.cfg.ListenerValue(l.Name, "sasl.enabled.mechanisms")) {
			if m = strings.TrimSpace(m); slices.Contains(consoleMechanisms, m) && !slices.Contains(b.Mechanisms, m) {
				b.Mechanisms = append(b.Mechanisms, m)
			}
		}
		if len(b.Mechanisms) == 0 && b.Err == nil {
			b.Err = fmt.Errorf("listener %s enables no SASL mechanism the console can log in with (%s)", l.Name, strings.Join(consoleMechanisms, ", "))
		}
	}
	if b.Err != nil {
		s.logger.Warn("the web console cannot read the cluster", "err", b.Err)
	}
	s.console.SetBroker(b)
}

// consoleMechanisms are the SASL mechanisms a visitor logs in to the
// console with: those with a user name and password.
var consoleMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// consoleTLSSettings are the client TLS settings the console dials
// listener with: the listener's trust store and endpoint identification,
// never its key store (the broker's own identity).
func consoleTLSSettings(b *config.Broker, listener string) auth.TLSSettings {
	all := tlsSettings(b, listener)
	return auth.TLSSettings{
		TruststoreType:         all.TruststoreType,
		TruststoreLocation:     all.TruststoreLocation,
		TruststorePassword:     all.TruststorePassword,
		TruststoreCertificates: all.TruststoreCertificates,
		EndpointIdentification: all.EndpointIdentification,
	}
}

// advertisedHost is the host name clients reach listener l by, which its
// certificate names: the advertised host, else the bind host, "" for a
// wildcard.
func (s *Server) advertisedHost(l config.Listener) string {
	for _, al := range s.cfg.AdvertisedListeners {
		if al.Name == l.Name && al.Host != "" {
			if ip := net.ParseIP(al.Host); ip == nil || !ip.IsUnspecified() {
				return al.Host
			}
		}
	}
	if ip := net.ParseIP(l.Host); l.Host != "" && (ip == nil || !ip.IsUnspecified()) {
		return l.Host
	}
	return ""
}
