package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TopicConfigDef defines one topic-level configuration and the broker
// configurations that supply its value when the topic has no override.
type TopicConfigDef struct {
	Def
	// BrokerSynonyms are the broker keys that hold the server default, most
	// specific first (Kafka's ServerTopicConfigSynonyms): the first one that
	// is set wins. Empty for topic configs without a server default.
	BrokerSynonyms []string
}

// synonymScale converts a broker synonym's value to the topic config's
// unit: log.retention.hours=1 means retention.ms=3600000.
var synonymScale = map[string]int64{
	"log.roll.hours":        3600000,
	"log.roll.jitter.hours": 3600000,
	"log.retention.minutes": 60000,
	"log.retention.hours":   3600000,
}

func tdef(name string, t Type, dflt string, validate func(string) error, doc string, synonyms ...string) TopicConfigDef {
	return TopicConfigDef{
		Def:            Def{Name: name, Type: t, Default: ptr(dflt), Validate: validate, Doc: doc},
		BrokerSynonyms: synonyms,
	}
}

// topicDefList is the constant table of Kafka 4.0's topic configurations
// (LogConfig), sorted by name. message.format.version and
// message.timestamp.difference.max.ms were removed in 4.0 and are unknown.
var topicDefList = []TopicConfigDef{
	tdef("cleanup.policy", List, "delete", listOf("compact", "delete"),
		"What happens to old segments: delete drops them after the retention limits, compact keeps the latest record per key; both may be given.",
		"log.cleanup.policy"),
	tdef("compression.gzip.level", Int, "-1", gzipLevel,
		"gzip level used when compression.type is gzip.", "compression.gzip.level"),
	tdef("compression.lz4.level", Int, "9", intBetween(1, 17),
		"lz4 level used when compression.type is lz4.", "compression.lz4.level"),
	tdef("compression.type", String, "producer", oneOf(brokerCompressionTypes...),
		"Final compression of the topic's batches: gzip, snappy, lz4, zstd, uncompressed, or producer to keep the producer's codec.",
		"compression.type"),
	tdef("compression.zstd.level", Int, "3", intBetween(-131072, 22),
		"zstd level used when compression.type is zstd.", "compression.zstd.level"),
	tdef("delete.retention.ms", Long, "86400000", atLeast(0),
		"How long tombstones stay in a compacted topic; a consumer reading from the start must finish within this time to see them.",
		"log.cleaner.delete.retention.ms"),
	tdef("file.delete.delay.ms", Long, "60000", atLeast(0),
		"Time to wait before a deleted segment's files are removed from the filesystem.",
		"log.segment.delete.delay.ms"),
	tdef("flush.messages", Long, maxLong, atLeast(1),
		"Messages appended before the log is fsynced; by default durability comes from replication, not fsync.",
		"log.flush.interval.messages"),
	tdef("flush.ms", Long, maxLong, atLeast(0),
		"Maximum time before appended data is fsynced.",
		"log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
	tdef("follower.replication.throttled.replicas", List, "", validThrottledReplicas,
		"Replicas whose follower-side replication is throttled, as partition:brokerId pairs or * for all."),
	tdef("index.interval.bytes", Int, "4096", atLeast(0),
		"Bytes appended between two offset index entries.", "log.index.interval.bytes"),
	tdef("leader.replication.throttled.replicas", List, "", validThrottledReplicas,
		"Replicas whose leader-side replication is throttled, as partition:brokerId pairs or * for all."),
	tdef("local.retention.bytes", Long, "-2", atLeast(-2),
		"Tiered storage local retention size; -2 means retention.bytes. Gregor has no tiered storage.",
		"log.local.retention.bytes"),
	tdef("local.retention.ms", Long, "-2", atLeast(-2),
		"Tiered storage local retention time; -2 means retention.ms. Gregor has no tiered storage.",
		"log.local.retention.ms"),
	tdef("max.compaction.lag.ms", Long, maxLong, atLeast(1),
		"Maximum time a record stays ineligible for compaction.", "log.cleaner.max.compaction.lag.ms"),
	tdef("max.message.bytes", Int, "1048588", atLeast(0),
		"Largest record batch (after compression) the topic accepts.", "message.max.bytes"),
	tdef("message.downconversion.enable", Boolean, "true", nil,
		"No effect since Kafka 4.0 (down-conversion is gone); accepted for compatibility.",
		"log.message.downconversion.enable"),
	tdef("message.timestamp.after.max.ms", Long, "3600000", atLeast(0),
		"How far a CreateTime timestamp may lie in the future of the broker's clock; later batches are rejected.",
		"log.message.timestamp.after.max.ms"),
	tdef("message.timestamp.before.max.ms", Long, maxLong, atLeast(0),
		"How far a CreateTime timestamp may lie in the past of the broker's clock; older batches are rejected.",
		"log.message.timestamp.before.max.ms"),
	tdef("message.timestamp.type", String, "CreateTime", oneOf("CreateTime", "LogAppendTime"),
		"Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime.",
		"log.message.timestamp.type"),
	tdef("min.cleanable.dirty.ratio", Double, "0.5", floatBetween(0, 1),
		"Minimum share of uncompacted bytes before the log is compacted.", "log.cleaner.min.cleanable.ratio"),
	tdef("min.compaction.lag.ms", Long, "0", atLeast(0),
		"Minimum age of a record before it may be compacted.", "log.cleaner.min.compaction.lag.ms"),
	tdef("min.insync.replicas", Int, "1", atLeast(1),
		"Minimum in-sync replicas that must acknowledge an acks=all write, else the producer gets NOT_ENOUGH_REPLICAS.",
		"min.insync.replicas"),
	tdef("preallocate", Boolean, "false", nil,
		"Preallocate the file of a new segment.", "log.preallocate"),
	tdef("remote.log.copy.disable", Boolean, "false", nil,
		"Tiered storage: stop copying segments to remote storage. Gregor has no tiered storage."),
	tdef("remote.log.delete.on.disable", Boolean, "false", nil,
		"Tiered storage: delete remote data when tiering is turned off. Gregor has no tiered storage."),
	tdef("remote.storage.enable", Boolean, "false", nil,
		"Tiered storage for this topic. Gregor has no tiered storage, so only false is accepted."),
	tdef("retention.bytes", Long, "-1", nil,
		"Maximum size of a partition's log before old segments are deleted; -1 means no limit.",
		"log.retention.bytes"),
	tdef("retention.ms", Long, "604800000", atLeast(-1),
		"How long a segment is kept before it is deleted; -1 keeps it forever.",
		"log.retention.ms", "log.retention.minutes", "log.retention.hours"),
	tdef("segment.bytes", Int, "1073741824", atLeast(1048576),
		"Maximum size of one segment file.", "log.segment.bytes"),
	tdef("segment.index.bytes", Int, "10485760", atLeast(4),
		"Maximum size of the offset and time index of a segment.", "log.index.size.max.bytes"),
	tdef("segment.jitter.ms", Long, "0", atLeast(0),
		"Maximum random jitter subtracted from segment.ms, so that segments do not all roll at once.",
		"log.roll.jitter.ms", "log.roll.jitter.hours"),
	tdef("segment.ms", Long, "604800000", atLeast(1),
		"Maximum age of the active segment before a new one is rolled, even if it is not full.",
		"log.roll.ms", "log.roll.hours"),
	tdef("unclean.leader.election.enable", Boolean, "false", nil,
		"Allow a replica outside the ISR to become leader as a last resort, at the risk of data loss.",
		"unclean.leader.election.enable"),
}

var topicDefIndex = func() map[string]int {
	m := make(map[string]int, len(topicDefList))
	for i, d := range topicDefList {
		m[d.Name] = i
		for _, s := range d.BrokerSynonyms {
			if _, ok := brokerDefIndex[s]; !ok {
				panic("config: broker synonym " + s + " of " + d.Name + " is not a broker config")
			}
		}
	}
	return m
}()

// TopicDef returns the definition of a topic configuration key.
func TopicDef(name string) (TopicConfigDef, bool) {
	i, ok := topicDefIndex[name]
	if !ok {
		return TopicConfigDef{}, false
	}
	return topicDefList[i], true
}

// TopicDefs returns every topic configuration, sorted by name.
func TopicDefs() []TopicConfigDef {
	out := append([]TopicConfigDef(nil), topicDefList...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ValidateTopicConfig checks one topic configuration change as CreateTopics
// and AlterConfigs need it: an unknown key or a bad value is an error (the
// handlers answer INVALID_CONFIG). value nil means delete the override,
// which is valid for every known key.
func ValidateTopicConfig(name string, value *string) error {
	d, ok := TopicDef(name)
	if !ok {
		return fmt.Errorf("unknown topic config name: %s%s", name, didYouMean(SuggestTopicConfig(name)))
	}
	if value == nil {
		return nil
	}
	if err := d.Check(*value); err != nil {
		return err
	}
	if name == "remote.storage.enable" && strings.EqualFold(strings.TrimSpace(*value), "true") {
		return fmt.Errorf("invalid value %q for configuration %s: tiered storage is not available in this broker, so only false is allowed", *value, name)
	}
	return nil
}

// validThrottledReplicas accepts "*" or partition:brokerId pairs.
func validThrottledReplicas(v string) error {
	items := splitList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, item := range items {
		p, b, ok := strings.Cut(item, ":")
		_, perr := strconv.ParseUint(strings.TrimSpace(p), 10, 31)
		_, berr := strconv.ParseUint(strings.TrimSpace(b), 10, 31)
		if !ok || perr != nil || berr != nil {
			return fmt.Errorf("must be * or a list of partitionId:brokerId pairs (got %q)", item)
		}
	}
	return nil
}
