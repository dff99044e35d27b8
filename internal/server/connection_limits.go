package server

import (
	"context"
	"maps"
	"math"
	"net"
	"net/netip"
	"strings"
	"time"

	"gregor/internal/config"
	"gregor/internal/metadata"
	"gregor/internal/network"
)

// connectionLimits reads the connection limits of a socket server serving
// listeners from cfg: max.connections and max.connection.creation.rate per
// listener (listener.name.<l>. prefix, else the broker value) and for the
// whole server, max.connections.per.ip and its overrides, whose host names
// are resolved here (an unresolvable one is logged and left out).
func (s *Server) connectionLimits(cfg *config.Broker, listeners []string) network.ConnectionLimits {
	l := network.ConnectionLimits{
		MaxConnections:            limit(cfg.IntValue("max.connections")),
		MaxConnectionsPerIP:       limit(cfg.IntValue("max.connections.per.ip")),
		MaxConnectionCreationRate: limit(cfg.IntValue("max.connection.creation.rate")),
		Listeners:                 map[string]network.ListenerLimits{},
	}
	for _, name := range listeners {
		l.Listeners[name] = network.ListenerLimits{
			MaxConnections:            limit(cfg.ListenerIntValue(name, "max.connections")),
			MaxConnectionCreationRate: limit(cfg.ListenerIntValue(name, "max.connection.creation.rate")),
		}
	}
	overrides, err := config.ParseMaxConnectionsPerIPOverrides(cfg.Value("max.connections.per.ip.overrides"))
	if err != nil { // checked at load and by dynamic config validation
		s.logger.Error("max.connections.per.ip.overrides ignored", "err", err)
		return l
	}
	for host, n := range overrides {
		if ip, err := netip.ParseAddr(host); err == nil {
			l.PerIPOverrides = setOverride(l.PerIPOverrides, ip.Unmap(), n)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		cancel()
		if err != nil {
			s.logger.Warn("max.connections.per.ip.overrides: host not resolved; its override is not applied", "host", host, "err", err)
			continue
		}
		for _, ip := range ips {
			l.PerIPOverrides = setOverride(l.PerIPOverrides, ip.Unmap(), n)
		}
	}
	return l
}

func setOverride(m map[netip.Addr]int, ip netip.Addr, n int) map[netip.Addr]int {
	if m == nil {
		m = map[netip.Addr]int{}
	}
	m[ip] = n
	return m
}

// limit maps Kafka's Int.MaxValue ("no limit") to network.Unlimited.
func limit(v int64) int {
	if v >= math.MaxInt32 {
		return network.Unlimited
	}
	return int(v)
}

// connectionLimitsUpdater is a metadata publisher that applies dynamic
// changes of the connection limits (cluster default or this broker,
// listener-prefixed or not) to the broker listeners, as Kafka's
// DynamicListenerConfig and DynamicConnectionQuota reconfigure
// ConnectionQuotas: open connections are kept, new ones meet the new
// limits. The controller listener keeps the limits of server.properties.
type connectionLimitsUpdater struct {
	s         *Server
	net       *network.Server
	listeners []string
	// props are the connection-limit properties last applied: limits are
	// recomputed (and override host names resolved) only when they change,
	// not on every metadata delta.
	props map[string]string
	// ipRates are the connection_creation_rate quotas of ip entities last
	// applied (ipQuotas).
	ipRates map[metadata.QuotaName]int
}

func newConnectionLimitsUpdater(s *Server, ns *network.Server, listeners []string) *connectionLimitsUpdater {
	return &connectionLimitsUpdater{s: s, net: ns, listeners: listeners, props: connectionLimitProps(s.cfg.Props)}
}

// connectionLimitProps picks the properties connectionLimits reads.
func connectionLimitProps(props map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range props {
		for _, key := range []string{"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connection.creation.rate"} {
			if k == key || strings.HasPrefix(k, "listener.name.") && strings.HasSuffix(k, "."+key) {
				out[k] = v
			}
		}
	}
	return out
}

func (u *connectionLimitsUpdater) Publish(delta *metadata.Delta, img *metadata.Image) {
	eff := *u.s.cfg
	eff.Props = maps.Clone(u.s.cfg.Props)
	maps.Copy(eff.Props, img.ClusterConfigs())
	maps.Copy(eff.Props, img.BrokerConfigs(u.s.cfg.NodeID))
	props := connectionLimitProps(eff.Props)
	ipRates := ipQuotas(img)
	if maps.Equal(props, u.props) && maps.Equal(ipRates, u.ipRates) {
		return
	}
	u.props, u.ipRates = props, ipRates
	want := u.s.connectionLimits(&eff, u.listeners)
	for name, rate := range ipRates {
		if want.IPCreationRates == nil {
			want.IPCreationRates = map[netip.Addr]int{}
		}
		if name.Default {
			want.IPCreationRates[netip.Addr{}] = rate
			continue
		}
		ip, err := netip.ParseAddr(name.Name)
		if err != nil { // AlterClientQuotas accepts only addresses
			u.s.logger.Warn("connection_creation_rate quota of an ip entity that is not an address ignored", "ip", name.Name)
			continue
		}
		want.IPCreationRates[ip.Unmap()] = rate
	}
	u.net.SetConnectionLimits(want)
	u.s.logger.Info("connection limits changed", "max_connections", want.MaxConnections,
		"max_connections_per_ip", want.MaxConnectionsPerIP, "max_connection_creation_rate", want.MaxConnectionCreationRate,
		"ip_connection_creation_rate_quotas", len(ipRates))
}

// ipQuotas picks the connection_creation_rate quotas of ip entities from
// an image (Kafka keeps this quota for ip entities only).
func ipQuotas(img *metadata.Image) map[metadata.QuotaName]int {
	out := map[metadata.QuotaName]int{}
	for e, q := range img.ClientQuotas {
		if !e.IP.Present || e.User.Present || e.ClientID.Present {
			continue
		}
		if rate, ok := q["connection_creation_rate"]; ok {
			out[e.IP] = limit(int64(rate))
		}
	}
	return out
}
