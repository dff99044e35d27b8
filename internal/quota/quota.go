// Package quota enforces Kafka's client quotas (KIP-13, KIP-124, KIP-599):
// how many bytes a client may produce and fetch a second
// (producer_byte_rate, consumer_byte_rate), how much of the broker's request
// handling time it may take (request_percentage), and how many partitions
// it may create or delete a second (controller_mutation_rate). Quotas are
// set per user, client id, or both, with defaults (entity.go); a Manager per
// quota type measures each client's rate over a few sampled windows, as
// Kafka's ClientQuotaManager does, and answers how long a client over its
// quota is to be throttled. Throttling itself (muting the connection) is
// the socket server's; this package only measures and decides. It also
// holds the replication throttles (replication.go), which the replica
// manager applies to the traffic of moving replicas.
//
// Managers are safe for concurrent use, start no goroutines and read the
// time from a clock that tests replace. A Manager measures only once a
// quota of its type has been set (until then recording costs nothing and
// no sensor exists, as in Kafka); a client's sensor expires after an hour
// without a recording.
package quota

import (
	"errors"
	"fmt"
	"time"

	"gregor/internal/metadata"
)

// Type is a client quota type.
type Type int

const (
	Produce            Type = iota // producer_byte_rate: bytes of produce requests a second
	Fetch                          // consumer_byte_rate: bytes of fetch responses a second
	Request                        // request_percentage: % of one request handler's time
	ControllerMutation             // controller_mutation_rate: partitions created or deleted a second
)

var typeNames = [...]struct{ name, key, metric string }{
	Produce:            {"Produce", "producer_byte_rate", "byte-rate"},
	Fetch:              {"Fetch", "consumer_byte_rate", "byte-rate"},
	Request:            {"Request", "request_percentage", "request-time"},
	ControllerMutation: {"ControllerMutation", "controller_mutation_rate", "mutation-rate"},
}

// String is Kafka's name of the type (its metrics group).
func (t Type) String() string { return typeNames[t].name }

// Key is the quota's config key in AlterClientQuotas and ClientQuotaRecord.
func (t Type) Key() string { return typeNames[t].key }

// MetricName is Kafka's name of the rate a sensor of this type measures.
func (t Type) MetricName() string { return typeNames[t].metric }

// Defaults, Kafka's.
const (
	DefaultWindowNum  = 11          // quota.window.num, controller.quota.window.num
	DefaultWindowSize = time.Second // quota.window.size.seconds, controller.quota.window.size.seconds
)

// Config configures a Manager.
type Config struct {
	// Samples is how many windows a rate is measured over
	// (quota.window.num); 0 takes DefaultWindowNum.
	Samples int
	// Window is the span of each (quota.window.size.seconds); 0 takes
	// DefaultWindowSize. Kafka sets it in whole seconds.
	Window time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	if c.Samples == 0 {
		c.Samples = DefaultWindowNum
	}
	if c.Window == 0 {
		c.Window = DefaultWindowSize
	}
	if c.Samples < 1 {
		return c, fmt.Errorf("quota window count %d: must be at least 1", c.Samples)
	}
	if c.Window < time.Millisecond {
		return c, fmt.Errorf("quota window size %v: must be at least 1ms", c.Window)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}

// Managers are the client quota managers of a broker, one per type (Kafka's
// QuotaFactory.QuotaManagers without the replication quotas).
type Managers struct {
	Produce, Fetch, Request, ControllerMutation *Manager
}

// NewManagers returns the managers: client configures the byte-rate and
// request quotas (quota.window.*), controller the controller mutation
// quota (controller.quota.window.*).
func NewManagers(client, controller Config) (*Managers, error) {
	var m Managers
	var err error
	for _, x := range []struct {
		dst *(*Manager)
		t   Type
		cfg Config
	}{
		{&m.Produce, Produce, client}, {&m.Fetch, Fetch, client},
		{&m.Request, Request, client}, {&m.ControllerMutation, ControllerMutation, controller},
	} {
		if *x.dst, err = NewManager(x.t, x.cfg); err != nil {
			return nil, err
		}
	}
	return &m, nil
}

// Update gives every manager the quotas now set (a metadata image's
// ClientQuotas: entity -> quota key -> value). Each takes its own key.
func (m *Managers) Update(quotas map[metadata.QuotaEntity]map[string]float64) {
	for _, mgr := range m.All() {
		mgr.Update(quotas)
	}
}

// Enabled reports whether any manager measures (a quota of its type has
// been set).
func (m *Managers) Enabled() bool {
	for _, mgr := range m.All() {
		if mgr.Enabled() {
			return true
		}
	}
	return false
}

// All lists the managers.
func (m *Managers) All() []*Manager {
	return []*Manager{m.Produce, m.Fetch, m.Request, m.ControllerMutation}
}

// ErrThrottlingQuotaExceeded is a strict controller mutation quota refusing
// a mutation (Kafka's THROTTLING_QUOTA_EXCEEDED).
var ErrThrottlingQuotaExceeded = errors.New("the throttling quota has been exceeded")
