package config

import (
	"strings"
	"testing"
)

func TestSuggestTopicConfig(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"max.mesage.bytes", "max.message.bytes"},  // a slip
		{"Retention.MS", "retention.ms"},           // case
		{"retention_ms", "retention.ms"},           // separator
		{"log.retention.ms", "retention.ms"},       // the broker's name for it
		{"message.max.bytes", "max.message.bytes"}, // the broker's name, far by edits
		{"log.cleanup.policy", "cleanup.policy"},
		{"segment.byte", "segment.bytes"},
		{"no.such.config", ""}, // nothing close
		{"foo", ""},
	} {
		if got := SuggestTopicConfig(tc.name); got != tc.want {
			t.Errorf("SuggestTopicConfig(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSuggestBrokerConfig(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"log.segment.byte", "log.segment.bytes"},
		{"num.partition", "num.partitions"},
		{"retention.ms", "log.retention.ms"}, // the topic's name for it
		{"max.message.bytes", "message.max.bytes"},
		{"listener.name.plaintext.max.conections", "listener.name.plaintext.max.connections"},
		{"zookeeper.connect", ""},
		{"listener.name.plaintext.zookeeper.connect", ""},
	} {
		if got := SuggestBrokerConfig(tc.name); got != tc.want {
			t.Errorf("SuggestBrokerConfig(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The messages that reach operators carry the suggestion: the broker's
// answer to CreateTopics / AlterConfigs, and the server.properties warning.
func TestUnknownKeyMessagesSuggest(t *testing.T) {
	err := ValidateTopicConfig("max.mesage.bytes", ptr("3000000"))
	if err == nil || err.Error() != "unknown topic config name: max.mesage.bytes (did you mean max.message.bytes?)" {
		t.Errorf("ValidateTopicConfig: %v", err)
	}
	err = ValidateTopicConfig("no.such.config", ptr("1"))
	if err == nil || err.Error() != "unknown topic config name: no.such.config" {
		t.Errorf("ValidateTopicConfig without a suggestion: %v", err)
	}
	err = ValidateBrokerDynamic("log.retention.msec", ptr("1000"), false)
	if err == nil || err.Error() != "unknown broker config name: log.retention.msec (did you mean log.retention.ms?)" {
		t.Errorf("ValidateBrokerDynamic: %v", err)
	}
	_, warnings := mustLoad(t, map[string]string{"num.partition": "3"})
	if len(warnings) != 1 || !strings.Contains(string(warnings[0]), `unknown configuration "num.partition" is ignored (did you mean num.partitions?)`) {
		t.Errorf("Load warnings %q", warnings)
	}
}
