package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Connection limits (Kafka's ConnectionQuotas). max.connections and
// max.connection.creation.rate may be given per listener
// (listener.name.<l>.max.connections), read with ListenerValue; the rest
// are broker-wide. All but queued.max.request.bytes may change dynamically.

// ParseMaxConnectionsPerIPOverrides parses max.connections.per.ip.overrides:
// comma-separated host:count pairs, the host an IP address or a name (split
// at the last colon, so IPv6 addresses need no brackets).
func ParseMaxConnectionsPerIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, entry := range splitList(v) {
		if entry == "" {
			continue
		}
		i := strings.LastIndex(entry, ":")
		if i <= 0 {
			return nil, fmt.Errorf("override %q is not host:count", entry)
		}
		host := strings.Trim(strings.TrimSpace(entry[:i]), "[]")
		n, err := strconv.Atoi(strings.TrimSpace(entry[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("override %q: count must be a non-negative integer", entry)
		}
		out[host] = n
	}
	return out, nil
}

func validPerIPOverrides(v string) error {
	_, err := ParseMaxConnectionsPerIPOverrides(v)
	return err
}

// Value returns key's effective value: the property, else its default.
func (b *Broker) Value(key string) string { return values(b.Props).str(key) }

// IntValue is Value parsed as an integer (0 if it does not parse; the
// definitions' validators reject such values at load).
func (b *Broker) IntValue(key string) int64 {
	n, _ := strconv.ParseInt(b.Value(key), 10, 64)
	return n
}

// ListenerIntValue is ListenerValue parsed as an integer.
func (b *Broker) ListenerIntValue(listener, key string) int64 {
	n, _ := strconv.ParseInt(b.ListenerValue(listener, key), 10, 64)
	return n
}
