package config

// Share groups (KIP-932): the broker's group.share.* settings, and the
// dynamic configs of a share group (the GROUP config resource, type 32) as
// Kafka 4.2's GroupConfig defines them, validated against those settings.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// GroupShare holds the broker's group.share.* settings.
type GroupShare struct {
	SessionTimeoutMs        int64 // group.share.session.timeout.ms
	MinSessionTimeoutMs     int64 // group.share.min.session.timeout.ms
	MaxSessionTimeoutMs     int64 // group.share.max.session.timeout.ms
	HeartbeatIntervalMs     int64 // group.share.heartbeat.interval.ms
	MinHeartbeatIntervalMs  int64 // group.share.min.heartbeat.interval.ms
	MaxHeartbeatIntervalMs  int64 // group.share.max.heartbeat.interval.ms
	MaxSize                 int32 // group.share.max.size
	RecordLockDurationMs    int64 // group.share.record.lock.duration.ms
	MinRecordLockDurationMs int64 // group.share.min.record.lock.duration.ms
	MaxRecordLockDurationMs int64 // group.share.max.record.lock.duration.ms
	DeliveryCountLimit      int32 // group.share.delivery.count.limit
	PartitionMaxRecordLocks int32 // group.share.partition.max.record.locks
}

// validate is Kafka's GroupCoordinatorConfig and ShareGroupConfig checks,
// in their order and with their messages.
func (s GroupShare) validate() error {
	for _, c := range []struct {
		ok  bool
		msg string
	}{
		{s.MaxHeartbeatIntervalMs >= s.MinHeartbeatIntervalMs, "group.share.max.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{s.HeartbeatIntervalMs >= s.MinHeartbeatIntervalMs, "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{s.HeartbeatIntervalMs <= s.MaxHeartbeatIntervalMs, "group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"},
		{s.MaxSessionTimeoutMs >= s.MinSessionTimeoutMs, "group.share.max.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{s.SessionTimeoutMs >= s.MinSessionTimeoutMs, "group.share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{s.SessionTimeoutMs <= s.MaxSessionTimeoutMs, "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{s.HeartbeatIntervalMs < s.SessionTimeoutMs, "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"},
		{s.RecordLockDurationMs >= s.MinRecordLockDurationMs, "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{s.MaxRecordLockDurationMs >= s.RecordLockDurationMs, "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms"},
	} {
		if !c.ok {
			return errors.New(c.msg)
		}
	}
	return nil
}

// Share group configs (the GROUP resource's share.* keys).
const (
	ShareSessionTimeoutMs     = "share.session.timeout.ms"
	ShareHeartbeatIntervalMs  = "share.heartbeat.interval.ms"
	ShareRecordLockDurationMs = "share.record.lock.duration.ms"
	ShareAutoOffsetReset      = "share.auto.offset.reset"
	ShareIsolationLevel       = "share.isolation.level"
)

// Consumer group configs of the GROUP resource (KIP-848 groups).
const (
	ConsumerSessionTimeoutMs    = "consumer.session.timeout.ms"
	ConsumerHeartbeatIntervalMs = "consumer.heartbeat.interval.ms"
)

// GroupConfigNames are the keys a GROUP resource may set, sorted.
var GroupConfigNames = []string{
	ConsumerHeartbeatIntervalMs, ConsumerSessionTimeoutMs,
	ShareAutoOffsetReset, ShareHeartbeatIntervalMs, ShareIsolationLevel,
	ShareRecordLockDurationMs, ShareSessionTimeoutMs,
}

// ShareGroupConfig is one share group's effective settings: its dynamic
// configs over the broker's defaults.
type ShareGroupConfig struct {
	SessionTimeoutMs     int32
	HeartbeatIntervalMs  int32
	RecordLockDurationMs int32
	// AutoOffsetReset is "latest", "earliest" or "by_duration:<ISO-8601>".
	AutoOffsetReset string
	// AutoOffsetResetDuration is the by_duration duration (0 otherwise).
	AutoOffsetResetDuration time.Duration
	// ReadCommitted is share.isolation.level=read_committed.
	ReadCommitted bool
	// DeliveryCountLimit and PartitionMaxRecordLocks are the broker's
	// (Kafka 4.2 has no group config for them).
	DeliveryCountLimit      int32
	PartitionMaxRecordLocks int32
}

// ShareGroup is a share group's effective settings given its dynamic
// configs (nil: none). A stored value that no longer parses is ignored
// for the broker's default; configs are validated when set.
func (b *Broker) ShareGroup(configs map[string]string) ShareGroupConfig {
	s := b.GroupShare
	out := ShareGroupConfig{
		SessionTimeoutMs: int32(s.SessionTimeoutMs), HeartbeatIntervalMs: int32(s.HeartbeatIntervalMs),
		RecordLockDurationMs: int32(s.RecordLockDurationMs), AutoOffsetReset: "latest",
		DeliveryCountLimit: s.DeliveryCountLimit, PartitionMaxRecordLocks: s.PartitionMaxRecordLocks,
	}
	num := func(name string, into *int32) {
		if v, ok := configs[name]; ok {
			if n, err := strconv.ParseInt(v, 10, 32); err == nil {
				*into = int32(n)
			}
		}
	}
	num(ShareSessionTimeoutMs, &out.SessionTimeoutMs)
	num(ShareHeartbeatIntervalMs, &out.HeartbeatIntervalMs)
	num(ShareRecordLockDurationMs, &out.RecordLockDurationMs)
	if v, ok := configs[ShareAutoOffsetReset]; ok {
		if d, err := parseAutoOffsetReset(v); err == nil {
			out.AutoOffsetReset, out.AutoOffsetResetDuration = strings.ToLower(v), d
		}
	}
	out.ReadCommitted = strings.EqualFold(configs[ShareIsolationLevel], "read_committed")
	return out
}

// ValidateGroupConfig checks a GROUP resource's configs once changed (Kafka's
// GroupConfig.validate): known names, values of the right type, and share
// and consumer timeouts within the broker's bounds. all is the resource's
// whole set of dynamic configs after the change. The error is the message
// of INVALID_CONFIG.
func (b *Broker) ValidateGroupConfig(all map[string]string) error {
	for name := range all {
		if !isGroupConfig(name) {
			return fmt.Errorf("Unknown group config name: %s", name)
		}
	}
	get := func(name string, dflt int64) (int64, error) {
		v, ok := all[name]
		if !ok {
			return dflt, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return 0, fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, name)
		}
		if n < 1 {
			return 0, fmt.Errorf("Invalid value %s for configuration %s: Value must be at least 1", v, name)
		}
		return n, nil
	}
	s := b.GroupShare
	values := map[string]int64{}
	// Kafka's GroupConfig.validateValues, in its order.
	for _, c := range []struct {
		name, minName, maxName string
		dflt, lo, hi           int64
	}{
		{ConsumerHeartbeatIntervalMs, "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
			b.GroupConsumerHeartbeatIntervalMs, b.GroupConsumerMinHeartbeatIntervalMs, b.GroupConsumerMaxHeartbeatIntervalMs},
		{ConsumerSessionTimeoutMs, "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
			b.GroupConsumerSessionTimeoutMs, b.GroupConsumerMinSessionTimeoutMs, b.GroupConsumerMaxSessionTimeoutMs},
		{ShareHeartbeatIntervalMs, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms",
			s.HeartbeatIntervalMs, s.MinHeartbeatIntervalMs, s.MaxHeartbeatIntervalMs},
		{ShareSessionTimeoutMs, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms",
			s.SessionTimeoutMs, s.MinSessionTimeoutMs, s.MaxSessionTimeoutMs},
		{ShareRecordLockDurationMs, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms",
			s.RecordLockDurationMs, s.MinRecordLockDurationMs, s.MaxRecordLockDurationMs},
	} {
		n, err := get(c.name, c.dflt)
		if err != nil {
			return err
		}
		if n < c.lo {
			return fmt.Errorf("%s must be greater than or equal to %s", c.name, c.minName)
		}
		if n > c.hi {
			return fmt.Errorf("%s must be less than or equal to %s", c.name, c.maxName)
		}
		values[c.name] = n
	}
	if values[ConsumerSessionTimeoutMs] <= values[ConsumerHeartbeatIntervalMs] {
		return fmt.Errorf("%s must be greater than %s", ConsumerSessionTimeoutMs, ConsumerHeartbeatIntervalMs)
	}
	if values[ShareSessionTimeoutMs] <= values[ShareHeartbeatIntervalMs] {
		return fmt.Errorf("%s must be greater than %s", ShareSessionTimeoutMs, ShareHeartbeatIntervalMs)
	}
	if v, ok := all[ShareAutoOffsetReset]; ok {
		if _, err := parseAutoOffsetReset(v); err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: %v", v, ShareAutoOffsetReset, err)
		}
	}
	if v, ok := all[ShareIsolationLevel]; ok && !strings.EqualFold(v, "read_committed") && !strings.EqualFold(v, "read_uncommitted") {
		return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", v, ShareIsolationLevel)
	}
	return nil
}

func isGroupConfig(name string) bool {
	for _, n := range GroupConfigNames {
		if n == name {
			return true
		}
	}
	return false
}

// GroupConfigDefault is the value a GROUP resource's config has when it
// does not set it: the broker's setting it defaults to.
func (b *Broker) GroupConfigDefault(name string) (value, source string, ok bool) {
	s := b.GroupShare
	switch name {
	case ConsumerSessionTimeoutMs:
		return strconv.FormatInt(b.GroupConsumerSessionTimeoutMs, 10), "group.consumer.session.timeout.ms", true
	case ConsumerHeartbeatIntervalMs:
		return strconv.FormatInt(b.GroupConsumerHeartbeatIntervalMs, 10), "group.consumer.heartbeat.interval.ms", true
	case ShareSessionTimeoutMs:
		return strconv.FormatInt(s.SessionTimeoutMs, 10), "group.share.session.timeout.ms", true
	case ShareHeartbeatIntervalMs:
		return strconv.FormatInt(s.HeartbeatIntervalMs, 10), "group.share.heartbeat.interval.ms", true
	case ShareRecordLockDurationMs:
		return strconv.FormatInt(s.RecordLockDurationMs, 10), "group.share.record.lock.duration.ms", true
	case ShareAutoOffsetReset:
		return "latest", "", true
	case ShareIsolationLevel:
		return "read_uncommitted", "", true
	}
	return "", "", false
}

// parseAutoOffsetReset reads share.auto.offset.reset: latest, earliest, or
// by_duration:<ISO-8601 duration PnDTnHnMn.nS>, not negative (Kafka's
// ShareGroupAutoOffsetResetStrategy).
func parseAutoOffsetReset(v string) (time.Duration, error) {
	lower := strings.ToLower(strings.TrimSpace(v))
	switch lower {
	case "latest", "earliest":
		return 0, nil
	}
	iso, ok := strings.CutPrefix(lower, "by_duration:")
	if !ok {
		return 0, fmt.Errorf("String must be one of: latest, earliest, by_duration:PnDTnHnMn.nS")
	}
	d, err := parseISODuration(iso)
	if err != nil {
		return 0, fmt.Errorf("Unable to parse duration string %s: %w", iso, err)
	}
	if d < 0 {
		return 0, fmt.Errorf("Negative duration is not supported.")
	}
	return d, nil
}

// parseISODuration reads java.time.Duration's ISO-8601 form PnDTnHnMn.nS
// (case-insensitive, optional sign before P and before each number).
func parseISODuration(s string) (time.Duration, error) {
	s = strings.ToUpper(s)
	neg := false
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		neg = s[0] == '-'
		s = s[1:]
	}
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return 0, fmt.Errorf("not an ISO-8601 duration")
	}
	var total float64
	inTime, any := false, false
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, fmt.Errorf("not an ISO-8601 duration")
			}
			inTime, rest = true, rest[1:]
			if rest == "" {
				return 0, fmt.Errorf("not an ISO-8601 duration")
			}
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] == '-' || rest[i] == '+' || rest[i] == '.' || (rest[i] >= '0' && rest[i] <= '9')) {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		unit := rest[i]
		fraction := strings.Contains(rest[:i], ".")
		switch {
		case unit == 'D' && !inTime && !fraction:
			total += n * 86400
		case unit == 'H' && inTime && !fraction:
			total += n * 3600
		case unit == 'M' && inTime && !fraction:
			total += n * 60
		case unit == 'S' && inTime:
			total += n
		default:
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		any, rest = true, rest[i+1:]
	}
	if !any {
		return 0, fmt.Errorf("not an ISO-8601 duration")
	}
	if neg {
		total = -total
	}
	return time.Duration(total * float64(time.Second)), nil
}

// groupConfigTypes are the GROUP resource's config types and docs.
var groupConfigTypes = map[string]struct {
	t   Type
	doc string
}{
	ConsumerSessionTimeoutMs:    {Int, "The timeout to detect client failures when using the consumer group protocol."},
	ConsumerHeartbeatIntervalMs: {Int, "The heartbeat interval given to the members of a consumer group."},
	ShareSessionTimeoutMs:       {Int, "The timeout to detect client failures when using the share group protocol."},
	ShareHeartbeatIntervalMs:    {Int, "The heartbeat interval given to the members of a share group."},
	ShareRecordLockDurationMs:   {Int, "The record acquisition lock duration in milliseconds for share groups."},
	ShareAutoOffsetReset:        {String, "The strategy to initialize the share-partition start offset: latest, earliest or by_duration:PnDTnHnMn.nS."},
	ShareIsolationLevel:         {String, "Controls how to read records written transactionally: read_committed or read_uncommitted."},
}

// DescribeGroup is a GROUP resource's configs for DescribeConfigs (Kafka's
// createGroupConfigEntry): each group config, from the group's dynamic
// configs (GROUP_CONFIG) or else its default (DEFAULT_CONFIG, the broker's
// setting it defaults to); none is read-only.
func (b *Broker) DescribeGroup(dynamic map[string]string, names []string, includeSynonyms, includeDocs bool) []Entry {
	var out []Entry
	for _, name := range GroupConfigNames {
		if !wanted(names, name) {
			continue
		}
		def := groupConfigTypes[name]
		e := Entry{Name: name, Type: def.t}
		if includeDocs {
			e.Doc = def.doc
		}
		if v, ok := dynamic[name]; ok {
			e.Value, e.Source = &v, GroupConfig
			if includeSynonyms {
				e.Synonyms = []Synonym{{Name: name, Value: &v, Source: GroupConfig}}
			}
		} else {
			v, _, _ := b.GroupConfigDefault(name)
			e.Value, e.Source = &v, DefaultConfig
			if includeSynonyms {
				e.Synonyms = []Synonym{}
			}
		}
		out = append(out, e)
	}
	return out
}
