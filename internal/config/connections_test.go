package config

import (
	"maps"
	"testing"
)

func TestConnectionLimitValues(t *testing.T) {
	b, _ := mustLoad(t, map[string]string{
		"max.connections":                                     "100",
		"listener.name.internal.max.connections":              "20",
		"max.connections.per.ip":                              "0",
		"max.connections.per.ip.overrides":                    " 127.0.0.1:5, broker-1:7 ,::1:3,[fe80::1]:4",
		"queued.max.request.bytes":                            "209715200",
		"max.connection.creation.rate":                        "50",
		"listener.name.internal.max.connection.creation.rate": "10",
	})
	if got := b.IntValue("max.connections"); got != 100 {
		t.Errorf("max.connections = %d", got)
	}
	if got := b.ListenerIntValue("INTERNAL", "max.connections"); got != 20 {
		t.Errorf("INTERNAL max.connections = %d", got)
	}
	// A listener without its own value has the broker's.
	if got := b.ListenerIntValue("EXTERNAL", "max.connection.creation.rate"); got != 50 {
		t.Errorf("EXTERNAL max.connection.creation.rate = %d", got)
	}
	if b.QueuedMaxRequestBytes != 209715200 {
		t.Errorf("QueuedMaxRequestBytes = %d", b.QueuedMaxRequestBytes)
	}
	overrides, err := ParseMaxConnectionsPerIPOverrides(b.Value("max.connections.per.ip.overrides"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"127.0.0.1": 5, "broker-1": 7, "::1": 3, "fe80::1": 4}
	if !maps.Equal(overrides, want) {
		t.Errorf("overrides = %v, want %v", overrides, want)
	}
	d, _ := mustLoad(t, nil)
	if d.QueuedMaxRequestBytes != -1 || d.IntValue("max.connections.per.ip") != 2147483647 {
		t.Errorf("defaults: queued.max.request.bytes %d, max.connections.per.ip %d", d.QueuedMaxRequestBytes, d.IntValue("max.connections.per.ip"))
	}
}
