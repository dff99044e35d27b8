package config

import (
	"strings"
)

// Listener-scoped settings. Kafka lets most security settings be given for
// one listener, and SASL settings for one mechanism of one listener, by a
// prefix: listener.name.<listener>.<key> and
// listener.name.<listener>.<mechanism>.<key>, with the listener and
// mechanism names in lower case. The most specific one set wins, then the
// unprefixed key, then its default.

// ListenerValue returns key's effective value on listener: the
// listener-prefixed property, else the property, else the default.
func (b *Broker) ListenerValue(listener, key string) string {
	if v, ok := b.Props[listenerPrefix(listener)+key]; ok {
		return normalizeKey(key, v)
	}
	return values(b.Props).str(key)
}

// MechanismValue returns key's effective value for a SASL mechanism on
// listener: listener.name.<l>.<mechanism>.<key>, else the listener value.
func (b *Broker) MechanismValue(listener, mechanism, key string) string {
	if v, ok := b.Props[listenerPrefix(listener)+strings.ToLower(mechanism)+"."+key]; ok {
		return normalizeKey(key, v)
	}
	return b.ListenerValue(listener, key)
}

// ListenerSet reports whether key is given for listener (prefixed or not).
func (b *Broker) ListenerSet(listener, key string) bool {
	if _, ok := b.Props[listenerPrefix(listener)+key]; ok {
		return true
	}
	_, ok := b.Props[key]
	return ok
}

// MechanismSet reports whether key is given for a mechanism on listener
// (with either prefix, or none).
func (b *Broker) MechanismSet(listener, mechanism, key string) bool {
	if _, ok := b.Props[listenerPrefix(listener)+strings.ToLower(mechanism)+"."+key]; ok {
		return true
	}
	return b.ListenerSet(listener, key)
}

func listenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

func normalizeKey(key, v string) string {
	if d, ok := BrokerDef(key); ok {
		return normalize(d.Type, v)
	}
	return strings.TrimSpace(v)
}

// SplitList splits a comma-separated list value, trimming blanks.
func SplitList(v string) []string { return splitList(v) }
