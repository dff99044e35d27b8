package config

import (
	"reflect"
	"strings"
	"testing"
)

func entryByName(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s in %d entries", name, len(entries))
	return Entry{}
}

func syn(name, value string, src Source) Synonym {
	return Synonym{Name: name, Value: ptr(value), Source: src}
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestDescribeTopicSources(t *testing.T) {
	l := Layers{
		Topic:          map[string]string{"cleanup.policy": "compact, delete", "max.message.bytes": "2000"},
		DynamicBroker:  map[string]string{"log.segment.bytes": "2097152"},
		DynamicDefault: map[string]string{"log.segment.bytes": "3145728", "min.insync.replicas": "2"},
		Static:         map[string]string{"log.segment.bytes": "4194304", "min.insync.replicas": "3", "compression.type": "zstd", "log.retention.hours": "24"},
	}
	entries := DescribeTopic(l, nil, true, true)
	if len(entries) != len(TopicDefs()) {
		t.Fatalf("got %d entries, want all %d topic configs", len(entries), len(TopicDefs()))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i-1].Name >= entries[i].Name {
			t.Fatalf("entries not sorted: %s before %s", entries[i-1].Name, entries[i].Name)
		}
	}

	cases := []struct {
		name     string
		value    string
		source   Source
		synonyms []Synonym
	}{
		// Override: the topic's own value first, then the broker default.
		{"cleanup.policy", "compact,delete", TopicConfig, []Synonym{
			syn("cleanup.policy", "compact,delete", TopicConfig),
			syn("log.cleanup.policy", "delete", DefaultConfig)}},
		{"max.message.bytes", "2000", TopicConfig, []Synonym{
			syn("max.message.bytes", "2000", TopicConfig),
			syn("message.max.bytes", "1048588", DefaultConfig)}},
		// Every broker layer in precedence order.
		{"segment.bytes", "2097152", DynamicBrokerConfig, []Synonym{
			syn("log.segment.bytes", "2097152", DynamicBrokerConfig),
			syn("log.segment.bytes", "3145728", DynamicDefaultBrokerConfig),
			syn("log.segment.bytes", "4194304", StaticBrokerConfig),
			syn("log.segment.bytes", "1073741824", DefaultConfig)}},
		{"min.insync.replicas", "2", DynamicDefaultBrokerConfig, []Synonym{
			syn("min.insync.replicas", "2", DynamicDefaultBrokerConfig),
			syn("min.insync.replicas", "3", StaticBrokerConfig),
			syn("min.insync.replicas", "1", DefaultConfig)}},
		{"compression.type", "zstd", StaticBrokerConfig, []Synonym{
			syn("compression.type", "zstd", StaticBrokerConfig),
			syn("compression.type", "producer", DefaultConfig)}},
		// Nothing set anywhere: the broker default is the only synonym.
		{"segment.index.bytes", "10485760", DefaultConfig, []Synonym{
			syn("log.index.size.max.bytes", "10485760", DefaultConfig)}},
		// The primary broker key log.roll.ms has no default, so Kafka lists
		// no synonyms even though log.roll.hours supplies the value.
		{"segment.ms", "604800000", DefaultConfig, nil},
		// Kafka drops synonyms before the first one named like the primary
		// broker key (log.retention.ms, which is unset): the value comes from
		// log.retention.hours=24, yet the source is DEFAULT_CONFIG and the
		// synonym list is empty, exactly as a Kafka broker answers.
		{"retention.ms", "86400000", DefaultConfig, nil},
		// No server default at all.
		{"remote.storage.enable", "false", DefaultConfig, nil},
	}
	for _, tc := range cases {
		e := entryByName(t, entries, tc.name)
		if deref(e.Value) != tc.value || e.Source != tc.source {
			t.Errorf("%s: value %s source %v, want %s %v", tc.name, deref(e.Value), e.Source, tc.value, tc.source)
		}
		if !reflect.DeepEqual(e.Synonyms, tc.synonyms) {
			t.Errorf("%s: synonyms\n got %s\nwant %s", tc.name, fmtSynonyms(e.Synonyms), fmtSynonyms(tc.synonyms))
		}
		if e.ReadOnly || e.Sensitive || e.Doc == "" {
			t.Errorf("%s: readOnly=%v sensitive=%v doc=%q", tc.name, e.ReadOnly, e.Sensitive, e.Doc)
		}
	}
	if e := entryByName(t, entries, "retention.ms"); e.Type != Long || e.Type.String() != "LONG" {
		t.Errorf("retention.ms type = %v", e.Type)
	}
}

func fmtSynonyms(s []Synonym) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, x.Source.String()+":"+x.Name+"="+deref(x.Value))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func TestDescribeTopicRetentionSynonyms(t *testing.T) {
	// With log.retention.ms set statically, all three broker keys show up.
	l := Layers{Static: map[string]string{"log.retention.ms": "1000", "log.retention.hours": "24"}}
	e := DescribeTopic(l, []string{"retention.ms"}, true, false)
	if len(e) != 1 {
		t.Fatalf("entries = %v", e)
	}
	want := []Synonym{
		syn("log.retention.ms", "1000", StaticBrokerConfig),
		syn("log.retention.hours", "24", StaticBrokerConfig),
		syn("log.retention.hours", "168", DefaultConfig),
	}
	if deref(e[0].Value) != "1000" || e[0].Source != StaticBrokerConfig || !reflect.DeepEqual(e[0].Synonyms, want) {
		t.Errorf("retention.ms = %s %v %s", deref(e[0].Value), e[0].Source, fmtSynonyms(e[0].Synonyms))
	}
	if e[0].Doc != "" {
		t.Errorf("doc returned although not asked for")
	}
	// Without includeSynonyms the source is still computed from them.
	e = DescribeTopic(Layers{DynamicDefault: map[string]string{"log.retention.ms": "5000"}}, []string{"retention.ms", "no.such.config"}, false, false)
	if len(e) != 1 || e[0].Synonyms != nil || e[0].Source != DynamicDefaultBrokerConfig || deref(e[0].Value) != "5000" {
		t.Errorf("got %+v", e)
	}
}

func TestDescribeBroker(t *testing.T) {
	l := Layers{
		DynamicBroker:  map[string]string{"log.retention.ms": "7200000", "ssl.keystore.password": "secret"},
		DynamicDefault: map[string]string{"num.io.threads": "16"},
		Static:         map[string]string{"log.retention.hours": "24", "node.id": "1", "my.custom": "x"},
	}
	entries := DescribeBroker(l, nil, true, true)
	if len(entries) != len(BrokerDefs())+1 {
		t.Errorf("got %d entries, want every known key plus my.custom", len(entries))
	}

	e := entryByName(t, entries, "log.retention.ms")
	wantSyn := []Synonym{
		syn("log.retention.ms", "7200000", DynamicBrokerConfig),
		syn("log.retention.hours", "24", StaticBrokerConfig),
		syn("log.retention.hours", "168", DefaultConfig),
	}
	if deref(e.Value) != "7200000" || e.Source != DynamicBrokerConfig || e.ReadOnly || !reflect.DeepEqual(e.Synonyms, wantSyn) {
		t.Errorf("log.retention.ms = %s %v ro=%v %s", deref(e.Value), e.Source, e.ReadOnly, fmtSynonyms(e.Synonyms))
	}
	e = entryByName(t, entries, "log.retention.hours")
	if deref(e.Value) != "24" || e.Source != StaticBrokerConfig || !e.ReadOnly || len(e.Synonyms) != 2 {
		t.Errorf("log.retention.hours = %s %v ro=%v %s", deref(e.Value), e.Source, e.ReadOnly, fmtSynonyms(e.Synonyms))
	}
	e = entryByName(t, entries, "num.io.threads")
	if deref(e.Value) != "16" || e.Source != DynamicDefaultBrokerConfig || e.Type != Int {
		t.Errorf("num.io.threads = %s %v", deref(e.Value), e.Source)
	}
	e = entryByName(t, entries, "ssl.keystore.password")
	if e.Value != nil || !e.Sensitive || e.Synonyms[0].Value != nil || e.Source != DynamicBrokerConfig {
		t.Errorf("password leaked or wrong: %+v", e)
	}
	e = entryByName(t, entries, "log.dirs")
	if e.Value != nil || e.Source != DefaultConfig || len(e.Synonyms) != 0 || !e.ReadOnly {
		t.Errorf("log.dirs = %+v", e)
	}
	e = entryByName(t, entries, "my.custom")
	if e.Value != nil || !e.Sensitive || e.Type != TypeUnknown || !e.ReadOnly || e.Source != StaticBrokerConfig {
		t.Errorf("unknown key = %+v", e)
	}
	e = entryByName(t, entries, "log.cleaner.io.max.bytes.per.second")
	if deref(e.Value) != "1.7976931348623157E308" || e.Type != Double {
		t.Errorf("double default = %s", deref(e.Value))
	}

	only := DescribeBroker(l, []string{"num.io.threads"}, false, false)
	if len(only) != 1 || only[0].Synonyms != nil || only[0].Doc != "" {
		t.Errorf("filtered describe = %+v", only)
	}
}

func TestDescribeBrokerDefault(t *testing.T) {
	l := Layers{
		DynamicBroker:  map[string]string{"num.io.threads": "12"},
		DynamicDefault: map[string]string{"num.io.threads": "16", "log.retention.ms": "1000"},
		Static:         map[string]string{"num.io.threads": "4"},
	}
	entries := DescribeBrokerDefault(l, nil, true, false)
	if len(entries) != 2 {
		t.Fatalf("entries = %+v, want only the two cluster-default keys", entries)
	}
	e := entryByName(t, entries, "num.io.threads")
	if deref(e.Value) != "16" || e.Source != DynamicDefaultBrokerConfig ||
		!reflect.DeepEqual(e.Synonyms, []Synonym{syn("num.io.threads", "16", DynamicDefaultBrokerConfig)}) {
		t.Errorf("num.io.threads = %s %v %s", deref(e.Value), e.Source, fmtSynonyms(e.Synonyms))
	}
}

func TestValidateBrokerDynamic(t *testing.T) {
	ok := []struct {
		name      string
		value     *string
		perBroker bool
	}{
		{"log.retention.ms", ptr("1000"), false},
		{"log.retention.ms", nil, true},
		{"num.io.threads", ptr("16"), false},
		{"message.max.bytes", ptr("2000000"), true},
		{"listeners", ptr("PLAINTEXT://:9092"), true},
		{"listener.name.ssl.ssl.keystore.location", ptr("/ks.jks"), true},
		{"listener.name.internal.max.connections", ptr("100"), false},
		{"listener.name.sasl_ssl.plain.sasl.jaas.config", ptr("x required;"), true},
	}
	for _, tc := range ok {
		if err := ValidateBrokerDynamic(tc.name, tc.value, tc.perBroker); err != nil {
			t.Errorf("ValidateBrokerDynamic(%s, %s, %v) = %v", tc.name, deref(tc.value), tc.perBroker, err)
		}
	}
	bad := []struct {
		name      string
		value     *string
		perBroker bool
		want      string
	}{
		{"log.dirs", ptr("/x"), true, "Cannot update these configs dynamically: Set(log.dirs)"},
		{"log.retention.hours", ptr("1"), true, "Cannot update these configs dynamically"},
		{"node.id", nil, true, "Cannot update these configs dynamically"},
		{"no.such.config", ptr("1"), true, "unknown broker config name: no.such.config"},
		{"num.io.threads", ptr("0"), true, `invalid value "0" for configuration num.io.threads`},
		{"listeners", ptr("PLAINTEXT://:9092"), false, "Cannot update these configs at default cluster level, broker id must be specified"},
		{"listener.name.ssl.ssl.keystore.location", ptr("/ks"), false, "broker id must be specified"},
		{"ssl.keystore.location", ptr("/ks.jks"), true, "only per-listener using the listener prefix"},
		{"listener.name.plaintext.log.dirs", ptr("/x"), true, "Cannot update these configs dynamically"},
	}
	for _, tc := range bad {
		err := ValidateBrokerDynamic(tc.name, tc.value, tc.perBroker)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateBrokerDynamic(%s, %s, %v) = %v, want %q", tc.name, deref(tc.value), tc.perBroker, err, tc.want)
		}
	}
}

func TestValidateTopicConfig(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"retention.ms", "-1"}, {"cleanup.policy", "compact,delete"}, {"cleanup.policy", " compact "},
		{"compression.type", "zstd"}, {"min.cleanable.dirty.ratio", "0.1"}, {"segment.bytes", "1048576"},
		{"leader.replication.throttled.replicas", "0:1,1:2"}, {"follower.replication.throttled.replicas", "*"},
		{"message.timestamp.type", "LogAppendTime"}, {"preallocate", "TRUE"}, {"compression.gzip.level", "-1"},
		{"remote.storage.enable", "false"}, {"message.downconversion.enable", "false"},
	} {
		if err := ValidateTopicConfig(c.name, ptr(c.value)); err != nil {
			t.Errorf("ValidateTopicConfig(%s=%s) = %v", c.name, c.value, err)
		}
	}
	if err := ValidateTopicConfig("retention.ms", nil); err != nil {
		t.Errorf("delete of a known key: %v", err)
	}
	for _, c := range []struct {
		name  string
		value *string
		want  string
	}{
		{"no.such.config", ptr("1"), "unknown topic config name: no.such.config"},
		{"no.such.config", nil, "unknown topic config name"},
		{"message.timestamp.difference.max.ms", ptr("1000"), "unknown topic config name"}, // removed in Kafka 4.0
		{"message.format.version", ptr("3.0"), "unknown topic config name"},               // removed in Kafka 4.0
		{"retention.ms", ptr("-2"), `invalid value "-2" for configuration retention.ms: must be an integer >= -1`},
		{"retention.ms", ptr("1h"), "must be a 64-bit integer"},
		{"segment.bytes", ptr("1048575"), "must be an integer >= 1048576"},
		{"segment.bytes", ptr("3000000000"), "must be a 32-bit integer"},
		{"cleanup.policy", ptr("archive"), "every item must be one of: compact, delete"},
		{"cleanup.policy", ptr(""), "must be a non-empty list"},
		{"compression.type", ptr("GZIP"), "must be one of"},
		{"min.cleanable.dirty.ratio", ptr("1.1"), "must be a number between 0.0 and 1.0"},
		{"min.insync.replicas", ptr("0"), "must be an integer >= 1"},
		{"message.timestamp.type", ptr("createtime"), "must be one of: CreateTime, LogAppendTime"},
		{"unclean.leader.election.enable", ptr("1"), "must be true or false"},
		{"compression.gzip.level", ptr("10"), "between 1 and 9, or -1"},
		{"compression.zstd.level", ptr("23"), "between -131072 and 22"},
		{"leader.replication.throttled.replicas", ptr("0-1"), "partitionId:brokerId"},
		{"remote.storage.enable", ptr("true"), "tiered storage is not available"},
	} {
		err := ValidateTopicConfig(c.name, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ValidateTopicConfig(%s=%s) = %v, want %q", c.name, deref(c.value), err, c.want)
		}
	}
}

func TestResolveTopic(t *testing.T) {
	tp, err := ResolveTopic(Layers{})
	if err != nil {
		t.Fatal(err)
	}
	want := Topic{
		CleanupPolicy: []string{"delete"}, CompressionType: "producer", SegmentBytes: 1073741824,
		SegmentMs: 604800000, SegmentJitterMs: 0, SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096,
		FlushMessages: 9223372036854775807, FlushMs: 9223372036854775807, RetentionMs: 604800000,
		RetentionBytes: -1, MaxMessageBytes: 1048588, MessageTimestampType: "CreateTime",
		MessageTimestampBeforeMaxMs: 9223372036854775807, MessageTimestampAfterMaxMs: 3600000,
		MinInsyncReplicas: 1, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 9223372036854775807,
		MinCleanableDirtyRatio: 0.5, FileDeleteDelayMs: 60000,
		CompressionGzipLevel: -1, CompressionLz4Level: 9, CompressionZstdLevel: 3,
	}
	if !reflect.DeepEqual(tp, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", tp, want)
	}
	if !tp.Delete() || tp.Compact() {
		t.Errorf("policy helpers wrong")
	}

	cases := []struct {
		name      string
		l         Layers
		retention int64
	}{
		{"hours", Layers{Static: map[string]string{"log.retention.hours": "2"}}, 7200000},
		{"minutes beat hours", Layers{Static: map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}}, 180000},
		{"ms beats minutes and hours", Layers{Static: map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "42"}}, 42},
		{"dynamic default ms beats static hours", Layers{DynamicDefault: map[string]string{"log.retention.ms": "99"}, Static: map[string]string{"log.retention.hours": "2"}}, 99},
		{"dynamic broker beats dynamic default", Layers{DynamicBroker: map[string]string{"log.retention.ms": "7"}, DynamicDefault: map[string]string{"log.retention.ms": "99"}}, 7},
		{"negative hours mean forever", Layers{Static: map[string]string{"log.retention.hours": "-1"}}, -1},
		{"topic override beats all", Layers{Topic: map[string]string{"retention.ms": "5"}, DynamicBroker: map[string]string{"log.retention.ms": "7"}}, 5},
	}
	for _, tc := range cases {
		tp, err := ResolveTopic(tc.l)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tp.RetentionMs != tc.retention {
			t.Errorf("%s: RetentionMs = %d, want %d", tc.name, tp.RetentionMs, tc.retention)
		}
	}

	tp, err = ResolveTopic(Layers{
		Topic:  map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.25"},
		Static: map[string]string{"log.roll.hours": "1", "log.flush.scheduler.interval.ms": "500", "message.max.bytes": "2000000", "compression.type": "lz4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !tp.Compact() || tp.Delete() || tp.MinCleanableDirtyRatio != 0.25 || tp.SegmentMs != 3600000 ||
		tp.FlushMs != 500 || tp.MaxMessageBytes != 2000000 || tp.CompressionType != "lz4" {
		t.Errorf("resolved = %+v", tp)
	}

	if _, err := ResolveTopic(Layers{Topic: map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}}); err == nil ||
		!strings.Contains(err.Error(), "min.compaction.lag.ms (10) > max.compaction.lag.ms (5)") {
		t.Errorf("compaction lag conflict: %v", err)
	}
	if _, err := ResolveTopic(Layers{Topic: map[string]string{"segment.bytes": "12"}}); err == nil ||
		!strings.Contains(err.Error(), "segment.bytes") {
		t.Errorf("bad stored override: %v", err)
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0.5: "0.5", 1: "1.0", 0.9: "0.9", 100: "100.0", 1e7: "1.0E7", 1.7976931348623157e308: "1.7976931348623157E308",
		0.0001: "1.0E-4", 0: "0.0", -2.5: "-2.5",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
}
