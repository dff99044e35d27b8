package server

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"gregor/internal/console"
	"gregor/internal/metrics"
)

// newConsole makes the web console of a broker, mounted on the
// gregor.http.listen listener; a controller-only node has none (the
// console reads the cluster through a broker listener). It learns the
// broker listener's address once that is bound (setConsoleBootstrap).
func (s *Server) newConsole() func(mux *http.ServeMux) {
	if !s.cfg.HasRole("broker") {
		return nil
	}
	s.console = console.New(console.Config{
		Metrics: s.metrics.Gatherer(),
		Logger:  s.logger.With("component", "console"),
	})
	// Group lag in /metrics comes from the console's view of the cluster:
	// the groups this broker coordinates.
	s.metrics.SetGroupLag(func(ctx context.Context) ([]metrics.GroupLag, error) {
		return s.console.GroupLags(ctx, s.cfg.NodeID)
	})
	return s.console.Mount
}

// setConsoleBootstrap gives the console this node's first PLAINTEXT broker
// listener, with a wildcard bind address turned into loopback so that it
// can be dialled.
func (s *Server) setConsoleBootstrap() {
	if s.console == nil {
		return
	}
	for _, l := range s.listeners(false) {
		if s.cfg.ListenerSecurityProtocolMap[l.Name] != "PLAINTEXT" {
			continue
		}
		a, ok := s.brokerNet.Addr(l.Name).(*net.TCPAddr)
		if !ok {
			continue
		}
		host := a.IP.String()
		if a.IP == nil || a.IP.IsUnspecified() {
			// A wildcard bind (0.0.0.0, or :: which Linux makes
			// dual-stack) is reachable on IPv4 loopback.
			host = "127.0.0.1"
		}
		s.console.SetBootstrap(net.JoinHostPort(host, strconv.Itoa(a.Port)))
		return
	}
	s.logger.Warn("the web console has no PLAINTEXT broker listener to read the cluster through", "listeners", s.cfg.Listeners)
}
