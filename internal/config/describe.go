package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Source is where a configuration value comes from, with the ids of
// DescribeConfigs' ConfigSource.
type Source int8

const (
	Unknown                    Source = 0
	TopicConfig                Source = 1 // a topic override
	DynamicBrokerConfig        Source = 2 // dynamic, for this broker (resource name = node id)
	DynamicDefaultBrokerConfig Source = 3 // dynamic cluster-wide default (resource name "")
	StaticBrokerConfig         Source = 4 // server.properties
	DefaultConfig              Source = 5 // the built-in default
	DynamicBrokerLoggerConfig  Source = 6
	ClientMetricsConfig        Source = 7
	GroupConfig                Source = 8
)

func (s Source) String() string {
	switch s {
	case TopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case DynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case DynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case StaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case DefaultConfig:
		return "DEFAULT_CONFIG"
	case DynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	case ClientMetricsConfig:
		return "CLIENT_METRICS_CONFIG"
	case GroupConfig:
		return "GROUP_CONFIG"
	}
	return "UNKNOWN"
}

// Synonym is one place a configuration's value is (or could be) defined.
type Synonym struct {
	Name   string
	Value  *string // nil for sensitive values
	Source Source
}

// Entry is one configuration of a DescribeConfigs result.
type Entry struct {
	Name      string
	Value     *string // nil when null or sensitive
	Source    Source
	ReadOnly  bool
	Sensitive bool
	Type      Type
	Doc       string    // empty unless documentation was asked for
	Synonyms  []Synonym // nil unless synonyms were asked for
}

// Layers are the places configuration values live, most specific first:
// topic overrides; dynamic configs of this broker (resource name = node
// id); the dynamic cluster-wide default (resource name ""); the static
// server.properties. Below them are the built-in defaults.
type Layers struct {
	Topic          map[string]string
	DynamicBroker  map[string]string
	DynamicDefault map[string]string
	Static         map[string]string
}

// brokerLayers returns the broker layers most specific first with their sources.
func (l Layers) brokerLayers() []struct {
	m      map[string]string
	source Source
} {
	return []struct {
		m      map[string]string
		source Source
	}{
		{l.DynamicBroker, DynamicBrokerConfig},
		{l.DynamicDefault, DynamicDefaultBrokerConfig},
		{l.Static, StaticBrokerConfig},
	}
}

// brokerValue returns the raw value of a broker key from the most specific
// broker layer that sets it.
func (l Layers) brokerValue(name string) (string, bool) {
	for _, layer := range l.brokerLayers() {
		if v, ok := layer.m[name]; ok {
			return v, true
		}
	}
	return "", false
}

// brokerConfigSynonyms lists the broker keys that define the same setting
// as name, most specific first (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if base, ok := listenerPrefixedBase(name); ok {
		return []string{name, base}
	}
	return []string{name}
}

// configSynonyms collects the synonyms of name as Kafka's ConfigHelper does:
// layer by layer (dynamic broker, dynamic default, static, default), each
// layer in synonym order, then drops everything before the first entry
// named name itself. So describing log.retention.ms when only
// log.retention.hours is set yields no synonyms, exactly as Kafka answers.
func configSynonyms(l Layers, name string, synonyms []string, sensitive bool) []Synonym {
	var out []Synonym
	add := func(n, v string, src Source) {
		var value *string
		if !sensitive {
			value = ptr(v)
		}
		out = append(out, Synonym{Name: n, Value: value, Source: src})
	}
	for _, layer := range l.brokerLayers() {
		for _, s := range synonyms {
			if v, ok := layer.m[s]; ok {
				add(s, v, layer.source)
			}
		}
	}
	for _, s := range synonyms {
		if d, ok := BrokerDef(s); ok && d.Default != nil {
			add(s, *d.Default, DefaultConfig)
		}
	}
	i := slices.IndexFunc(out, func(s Synonym) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return out[i:]
}

func wanted(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, name)
}

// topicValue is the effective value of a topic config: the override, else
// the first broker synonym set in the broker layers (converted to the topic
// config's unit), else the default. The result is normalized.
func topicValue(d TopicConfigDef, l Layers) (string, bool) {
	if v, ok := l.Topic[d.Name]; ok {
		return normalize(d.Type, v), true
	}
	for _, s := range d.BrokerSynonyms {
		v, ok := l.brokerValue(s)
		if !ok {
			continue
		}
		if scale, scaled := synonymScale[s]; scaled {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return normalize(d.Type, v), false
			}
			n *= scale
			if d.Name == "retention.ms" && n < 0 {
				n = -1 // Kafka: any negative retention means forever
			}
			return strconv.FormatInt(n, 10), false
		}
		if d.Name == "retention.ms" {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n < 0 {
				return "-1", false
			}
		}
		return normalize(d.Type, v), false
	}
	return *d.Default, false
}

// DescribeTopic answers DescribeConfigs for a topic: every topic config
// (or those named), sorted by name. A config without an override takes its
// value from its broker synonyms or its default; the source is that of the
// first synonym, as in Kafka.
func DescribeTopic(l Layers, names []string, includeSynonyms, includeDocs bool) []Entry {
	var out []Entry
	for _, d := range TopicDefs() {
		if !wanted(names, d.Name) {
			continue
		}
		value, overridden := topicValue(d, l)
		var synonyms []Synonym
		if overridden {
			synonyms = append(synonyms, Synonym{Name: d.Name, Value: ptr(value), Source: TopicConfig})
		}
		if len(d.BrokerSynonyms) > 0 {
			synonyms = append(synonyms, configSynonyms(l, d.BrokerSynonyms[0], d.BrokerSynonyms, false)...)
		}
		e := Entry{Name: d.Name, Value: ptr(value), Source: DefaultConfig, Type: d.Type}
		if len(synonyms) > 0 {
			e.Source = synonyms[0].Source
		}
		if includeSynonyms {
			e.Synonyms = synonyms
		}
		if includeDocs {
			e.Doc = d.Doc
		}
		out = append(out, e)
	}
	return out
}

// brokerEntryDef returns the definition used to type a broker key: its own,
// or for a listener override the base key's. known is false for keys
// Gregor does not know.
func brokerEntryDef(name string) (d Def, exact, known bool) {
	if d, ok := BrokerDef(name); ok {
		return d, true, true
	}
	if base, ok := listenerPrefixedBase(name); ok {
		d, _ := BrokerDef(base)
		return d, false, true
	}
	return Def{}, false, false
}

// brokerEntry builds one broker DescribeConfigs entry. Unknown keys are
// reported as Kafka does: type UNKNOWN, sensitive (so no value), read-only.
func brokerEntry(name string, value *string, synonyms []Synonym, includeSynonyms, includeDocs bool) Entry {
	d, exact, known := brokerEntryDef(name)
	sensitive := !known || d.Type == Password
	e := Entry{Name: name, Source: DefaultConfig, Sensitive: sensitive, Type: d.Type,
		ReadOnly: !exact || d.Dynamic == ReadOnly}
	if !sensitive && value != nil {
		e.Value = ptr(normalize(d.Type, *value))
	}
	if len(synonyms) > 0 {
		e.Source = synonyms[0].Source
	}
	if includeSynonyms {
		e.Synonyms = synonyms
	}
	if includeDocs && exact {
		e.Doc = d.Doc
	}
	return e
}

// DescribeBroker answers DescribeConfigs for this broker (resource name =
// node id): every broker key Gregor knows plus any other key set in a
// layer, sorted by name, each with its effective value.
func DescribeBroker(l Layers, names []string, includeSynonyms, includeDocs bool) []Entry {
	all := map[string]bool{}
	for _, d := range brokerDefList {
		all[d.Name] = true
	}
	for _, layer := range l.brokerLayers() {
		for k := range layer.m {
			all[k] = true
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		if wanted(names, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]Entry, 0, len(keys))
	for _, name := range keys {
		d, _, _ := brokerEntryDef(name)
		var value *string
		if v, ok := l.brokerValue(name); ok {
			value = &v
		} else if def, ok := BrokerDef(name); ok {
			value = def.Default
		}
		synonyms := configSynonyms(l, name, brokerConfigSynonyms(name), d.Type == Password || d.Name == "")
		out = append(out, brokerEntry(name, value, synonyms, includeSynonyms, includeDocs))
	}
	return out
}

// DescribeBrokerDefault answers DescribeConfigs for the cluster-wide default
// broker resource (resource name ""): only the keys set at that level, with
// synonyms limited to that level, as Kafka does.
func DescribeBrokerDefault(l Layers, names []string, includeSynonyms, includeDocs bool) []Entry {
	keys := make([]string, 0, len(l.DynamicDefault))
	for k := range l.DynamicDefault {
		if wanted(names, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]Entry, 0, len(keys))
	for _, name := range keys {
		d, _, _ := brokerEntryDef(name)
		v := l.DynamicDefault[name]
		var synonyms []Synonym
		for _, s := range configSynonyms(l, name, brokerConfigSynonyms(name), d.Type == Password || d.Name == "") {
			if s.Source == DynamicDefaultBrokerConfig {
				synonyms = append(synonyms, s)
			}
		}
		out = append(out, brokerEntry(name, &v, synonyms, includeSynonyms, includeDocs))
	}
	return out
}

// ValidateBrokerDynamic checks one dynamic broker config change
// (AlterConfigs / IncrementalAlterConfigs on a BROKER resource). perBroker
// is true for a node-id resource, false for the cluster default (""). value
// nil means delete. Unlike Kafka, which stores unknown broker keys, Gregor
// refuses them so typos surface.
func ValidateBrokerDynamic(name string, value *string, perBroker bool) error {
	d, exact, known := brokerEntryDef(name)
	if !known {
		return fmt.Errorf("unknown broker config name: %s%s", name, didYouMean(SuggestBrokerConfig(name)))
	}
	scope := d.Dynamic
	if !exact {
		// A listener override: per-broker, except the connection limits
		// that Kafka also allows per listener at cluster level.
		if scope == ReadOnly {
			return fmt.Errorf("Cannot update these configs dynamically: Set(%s)", name)
		}
		scope = PerBroker
		if clusterLevelListenerConfigs[d.Name] {
			scope = ClusterWide
		}
	} else {
		if scope == ReadOnly {
			return fmt.Errorf("Cannot update these configs dynamically: Set(%s)", name)
		}
		if listenerSecurityConfigs[name] {
			return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: Set(%s)", name)
		}
	}
	if value != nil {
		if err := d.Check(*value); err != nil {
			if !exact {
				return fmt.Errorf("%s: %w", name, err)
			}
			return err
		}
		if err := checkUnsupportedSecurity(map[string]string{name: *value}); err != nil {
			return err
		}
	}
	if !perBroker && scope == PerBroker {
		return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: Set(%s)", name)
	}
	return nil
}
