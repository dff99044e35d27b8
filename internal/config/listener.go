package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Listener is one entry of listeners / advertised.listeners:
// "NAME://host:port". An empty host means all interfaces.
type Listener struct {
	Name string // upper case, as Kafka normalises listener names
	Host string
	Port int
}

// Addr returns host:port for net.Listen / net.Dial.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// Voter is one entry of controller.quorum.voters: "id@host:port".
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Addr returns host:port.
func (v Voter) Addr() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Addr() }

// ParseListeners parses a listeners value: a comma separated list of
// NAME://host:port. Names are upper-cased; each name may appear once.
func ParseListeners(value string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, item := range splitList(value) {
		name, rest, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q is not of the form NAME://host:port", item)
		}
		host, port, err := splitHostPort(rest)
		if err != nil {
			return nil, fmt.Errorf("listener %q: %w", item, err)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears more than once; each listener must have a distinct name", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: port})
	}
	return out, nil
}

// checkDistinctPorts refuses two listeners on one port, except port 0
// (pick a free port) and one IPv4 plus one IPv6 literal address, as Kafka.
func checkDistinctPorts(ls []Listener) error {
	byPort := map[int][]Listener{}
	for _, l := range ls {
		if l.Port != 0 {
			byPort[l.Port] = append(byPort[l.Port], l)
		}
	}
	for port, group := range byPort {
		if len(group) == 1 {
			continue
		}
		if len(group) == 2 && oneIPv4OneIPv6(group[0].Host, group[1].Host) {
			continue
		}
		names := make([]string, len(group))
		for i, l := range group {
			names[i] = l.Name
		}
		return fmt.Errorf("listeners %s share port %d; each listener must have a different port", strings.Join(names, ", "), port)
	}
	return nil
}

func oneIPv4OneIPv6(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	if ia == nil || ib == nil {
		return false
	}
	return (ia.To4() != nil) != (ib.To4() != nil)
}

// ParseVoters parses controller.quorum.voters: id@host:port, comma separated.
func ParseVoters(value string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, item := range splitList(value) {
		idText, addr, ok := strings.Cut(item, "@")
		if !ok {
			return nil, fmt.Errorf("voter %q is not of the form id@host:port", item)
		}
		id, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("voter %q: id must be an integer >= 0", item)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("voter %q: %w", item, err)
		}
		if host == "" {
			return nil, fmt.Errorf("voter %q: host must not be empty", item)
		}
		if seen[int32(id)] {
			return nil, fmt.Errorf("voter id %d appears more than once", id)
		}
		seen[int32(id)] = true
		out = append(out, Voter{ID: int32(id), Host: host, Port: port})
	}
	return out, nil
}

// splitHostPort accepts "host:port", ":port" and "[ipv6]:port".
func splitHostPort(s string) (string, int, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("address %q has no port", s)
	}
	host, portText := s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", 0, fmt.Errorf("IPv6 address %q must be in brackets", host)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q must be an integer between 0 and 65535", portText)
	}
	return host, port, nil
}

// ParseProtocolMap parses listener.security.protocol.map: NAME:PROTOCOL, ...
// Names are upper-cased; protocols must be Kafka security protocols.
func ParseProtocolMap(value string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(value) {
		name, proto, ok := strings.Cut(item, ":")
		name, proto = strings.TrimSpace(name), strings.TrimSpace(proto)
		if !ok || name == "" || proto == "" {
			return nil, fmt.Errorf("entry %q is not of the form LISTENER_NAME:SECURITY_PROTOCOL", item)
		}
		if err := oneOf(securityProtocols...)(strings.ToUpper(proto)); err != nil {
			return nil, fmt.Errorf("entry %q: security protocol %w", item, err)
		}
		name = strings.ToUpper(name)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped more than once", name)
		}
		out[name] = strings.ToUpper(proto)
	}
	return out, nil
}

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func validListeners(v string) error {
	ls, err := ParseListeners(v)
	if err != nil {
		return err
	}
	return checkDistinctPorts(ls)
}

func validAdvertisedListeners(v string) error {
	ls, err := ParseListeners(v)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if l.Host == "0.0.0.0" {
			return fmt.Errorf("listener %s cannot advertise the non-routable meta-address 0.0.0.0; use a routable address", l.Name)
		}
	}
	return nil
}

func validVoters(v string) error {
	_, err := ParseVoters(v)
	return err
}

func validProtocolMap(v string) error {
	_, err := ParseProtocolMap(v)
	return err
}

func validBootstrapServers(v string) error {
	for _, item := range splitList(v) {
		host, _, err := splitHostPort(item)
		if err != nil {
			return err
		}
		if host == "" {
			return fmt.Errorf("bootstrap server %q has no host", item)
		}
	}
	return nil
}

func validHostPort(v string) error {
	_, _, err := splitHostPort(v)
	return err
}
