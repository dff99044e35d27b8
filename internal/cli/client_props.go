package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's client configs beyond security (acks, linger.ms, group.id,
// fetch.max.bytes, ...), as the commands apply them. They come from the
// --command-config file, from --producer-property / --consumer-property,
// and from the commands' own flags that stand for one of them (--acks is
// acks): this table is the one mapping from Kafka's names to franz-go's
// options for all three.

// clientRole is the kind of Kafka client a command runs; a producer config
// given to a consumer is, as Kafka's clients say, not a known config.
type clientRole int

const (
	adminClient clientRole = iota
	producerClient
	consumerClient
	shareConsumerClient // a share group member (KIP-932): no offsets, no rebalances of its own
)

// maxRequestSizeLimit is the largest record batch the commands build: the
// client's 1 GiB request limit less room for a produce request's own
// fields.
const maxRequestSizeLimit = 1<<30 - 4096

// clientSettings is what the client configs given to a command say: the
// options for its franz-go client, and the settings the command acts on
// itself.
type clientSettings struct {
	opts []kgo.Opt

	bootstrap []string // bootstrap.servers

	// Producer.
	acks            string // acks as given (all, -1, 1, 0)
	idempotence     string // enable.idempotence as given ("" when not)
	maxRequestSize  int32  // max.request.size; 0 when not given
	bufferMemory    int64  // buffer.memory; 0 when not given
	partitioner     string // partitioner.class, by Gregor's short name
	partitionerImpl kgo.Partitioner

	// Consumer.
	groupID          string
	autoOffsetReset  string // earliest or latest; "" when not given
	noAutoCommit     bool   // enable.auto.commit=false
	maxPollRecords   int    // max.poll.records; 0 when not given
	shareRecordLimit bool   // share.acquire.mode=record_limit
}

// clientKey is one client config: the clients that take it, and how its
// value applies.
type clientKey struct {
	roles []clientRole
	apply func(v string, s *clientSettings) error
}

var (
	anyClient    = []clientRole{adminClient, producerClient, consumerClient, shareConsumerClient}
	producerOnly = []clientRole{producerClient}
	consumerOnly = []clientRole{consumerClient}
	// The configs a share consumer takes as a consumer does; Kafka's share
	// consumer refuses the rest (offsets, sessions, isolation are the share
	// group's configs there).
	anyConsumer = []clientRole{consumerClient, shareConsumerClient}
)

var clientKeys = map[string]clientKey{
	"client.id": {anyClient, func(v string, s *clientSettings) error {
		s.opts = append(s.opts, kgo.ClientID(v))
		return nil
	}},
	"bootstrap.servers": {anyClient, func(v string, s *clientSettings) error {
		s.bootstrap = splitList(v)
		if len(s.bootstrap) == 0 {
			return errors.New("want host:port[,host:port...]")
		}
		return nil
	}},
	"metadata.max.age.ms": {anyClient, millis(10, 3600000, func(d time.Duration) kgo.Opt { return kgo.MetadataMaxAge(d) })},
	"retry.backoff.ms": {anyClient, millis(0, math.MaxInt32, func(d time.Duration) kgo.Opt {
		return kgo.RetryBackoffFn(func(int) time.Duration { return d })
	})},

	"acks": {producerOnly, func(v string, s *clientSettings) error {
		opts, err := acksOpts(v)
		s.acks, s.opts = v, append(s.opts, opts...)
		return err
	}},
	"compression.type": {producerOnly, func(v string, s *clientSettings) error {
		codec, err := compressionCodec(v)
		s.opts = append(s.opts, kgo.ProducerBatchCompression(codec))
		return err
	}},
	"linger.ms": {producerOnly, millis(0, 60000, func(d time.Duration) kgo.Opt { return kgo.ProducerLinger(d) })},
	"max.request.size": {producerOnly, func(v string, s *clientSettings) error {
		n, err := intIn(v, 512, maxRequestSizeLimit)
		s.maxRequestSize = int32(n)
		return err
	}},
	"buffer.memory": {producerOnly, func(v string, s *clientSettings) error {
		n, err := intIn(v, 1, math.MaxInt64)
		s.bufferMemory = n
		s.opts = append(s.opts, kgo.MaxBufferedBytes(int(n)))
		return err
	}},
	"partitioner.class": {producerOnly, func(v string, s *clientSettings) error {
		name, p, err := partitionerByName(v)
		s.partitioner, s.partitionerImpl = name, p
		return err
	}},
	"enable.idempotence": {producerOnly, func(v string, s *clientSettings) error {
		switch v {
		case "true":
		case "false":
			s.opts = append(s.opts, kgo.DisableIdempotentWrite())
		default:
			return errors.New("want true or false")
		}
		s.idempotence = v
		return nil
	}},
	"delivery.timeout.ms": {producerOnly, millis(1, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.RecordDeliveryTimeout(d) })},
	"request.timeout.ms":  {producerOnly, millis(100, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.ProduceRequestTimeout(d) })},
	"retries": {producerOnly, func(v string, s *clientSettings) error {
		n, err := intIn(v, 0, math.MaxInt32)
		s.opts = append(s.opts, kgo.RecordRetries(int(n)))
		return err
	}},
	"max.in.flight.requests.per.connection": {producerOnly, func(v string, s *clientSettings) error {
		n, err := intIn(v, 1, math.MaxInt32)
		s.opts = append(s.opts, kgo.MaxProduceRequestsInflightPerBroker(int(n)))
		return err
	}},

	"group.id": {anyConsumer, func(v string, s *clientSettings) error {
		s.groupID = v
		return nil
	}},
	"group.instance.id": {consumerOnly, func(v string, s *clientSettings) error {
		if v == "" {
			return errors.New("want a non-empty id")
		}
		s.opts = append(s.opts, kgo.InstanceID(v))
		return nil
	}},
	"auto.offset.reset": {consumerOnly, func(v string, s *clientSettings) error {
		switch v {
		case "earliest", "latest":
			s.autoOffsetReset = v
			return nil
		case "none":
			return errors.New("none is not supported here: want earliest or latest")
		}
		return errors.New("want earliest or latest")
	}},
	"enable.auto.commit": {consumerOnly, func(v string, s *clientSettings) error {
		switch v {
		case "true", "false":
			s.noAutoCommit = v == "false"
			return nil
		}
		return errors.New("want true or false")
	}},
	"isolation.level": {consumerOnly, func(v string, s *clientSettings) error {
		switch v {
		case "read_uncommitted":
			s.opts = append(s.opts, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
		case "read_committed":
			s.opts = append(s.opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		default:
			return errors.New("want read_uncommitted or read_committed")
		}
		return nil
	}},
	"fetch.max.bytes": {anyConsumer, func(v string, s *clientSettings) error {
		n, err := intIn(v, 1, maxRequestSizeLimit)
		// A response may be that large and more: read up to twice it.
		s.opts = append(s.opts, kgo.FetchMaxBytes(int32(n)), kgo.BrokerMaxReadBytes(int32(min(max(2*n, 100<<20), 1<<30))))
		return err
	}},
	"max.partition.fetch.bytes": {anyConsumer, func(v string, s *clientSettings) error {
		n, err := intIn(v, 1, maxRequestSizeLimit)
		s.opts = append(s.opts, kgo.FetchMaxPartitionBytes(int32(n)))
		return err
	}},
	"fetch.min.bytes": {anyConsumer, func(v string, s *clientSettings) error {
		n, err := intIn(v, 0, math.MaxInt32)
		s.opts = append(s.opts, kgo.FetchMinBytes(int32(n)))
		return err
	}},
	"fetch.max.wait.ms":     {anyConsumer, millis(10, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(d) })},
	"session.timeout.ms":    {consumerOnly, millis(100, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) })},
	"heartbeat.interval.ms": {consumerOnly, millis(1, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) })},
	"max.poll.interval.ms":  {consumerOnly, millis(100, math.MaxInt32, func(d time.Duration) kgo.Opt { return kgo.RebalanceTimeout(d) })},
	"max.poll.records": {anyConsumer, func(v string, s *clientSettings) error {
		n, err := intIn(v, 1, math.MaxInt32)
		s.maxPollRecords = int(n)
		return err
	}},
	// KIP-1206: record_limit makes max.poll.records a hard limit of the
	// records one fetch acquires; batch_optimized (Kafka's default) acquires
	// whole batches, which may hold more.
	"share.acquire.mode": {[]clientRole{shareConsumerClient}, func(v string, s *clientSettings) error {
		switch v {
		case "batch_optimized", "record_limit":
			s.shareRecordLimit = v == "record_limit"
			return nil
		}
		return errors.New("want batch_optimized or record_limit")
	}},
	"client.rack": {anyConsumer, func(v string, s *clientSettings) error {
		s.opts = append(s.opts, kgo.Rack(v))
		return nil
	}},
}

func isClientKey(k string) bool { _, ok := clientKeys[k]; return ok }

// intIn parses an integer in [lo, hi].
func intIn(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		if hi == math.MaxInt64 || hi == math.MaxInt32 {
			return 0, fmt.Errorf("want an integer of at least %d", lo)
		}
		return 0, fmt.Errorf("want an integer from %d to %d", lo, hi)
	}
	return n, nil
}

// millis applies a milliseconds config in [lo, hi] as the option opt makes.
func millis(lo, hi int64, opt func(time.Duration) kgo.Opt) func(string, *clientSettings) error {
	return func(v string, s *clientSettings) error {
		n, err := intIn(v, lo, hi)
		if err != nil {
			return fmt.Errorf("%w (milliseconds)", err)
		}
		s.opts = append(s.opts, opt(time.Duration(n)*time.Millisecond))
		return nil
	}
}

// configSource says where a client config came from, for its errors and
// warnings: a flag, --producer-property/--consumer-property, or the
// --command-config file.
type configSource interface {
	label() string                     // --acks, --producer-property, --command-config FILE
	describe(key, value string) string // the setting, for an error about its value
}

type flagSource string     // the flag's name
type propertySource string // the property flag's name
type fileSource string     // the file's path

func (f flagSource) label() string               { return "--" + string(f) }
func (f flagSource) describe(_, v string) string { return fmt.Sprintf("--%s %q", string(f), v) }
func (p propertySource) label() string           { return "--" + string(p) }
func (p propertySource) describe(k, v string) string {
	return fmt.Sprintf("--%s %s=%q", string(p), k, v)
}
func (f fileSource) label() string { return "--command-config " + string(f) }
func (f fileSource) describe(k, v string) string {
	return fmt.Sprintf("--command-config %s: %s %q", string(f), k, v)
}

// parseClientSettings applies the client configs in props that a client of
// role takes, in key order. A bad value is an error naming where it came
// from; a key of another kind of client is a warning, as Kafka's clients
// log it, and so is a key no client knows unless it is a security setting
// (parseCommandConfig reads those). Warnings start with their source.
func parseClientSettings(props map[string]string, sources map[string]configSource, role clientRole) (clientSettings, []string, error) {
	s := clientSettings{}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	for _, k := range keys {
		ck, ok := clientKeys[k]
		if !ok {
			continue
		}
		v := props[k]
		if !slices.Contains(ck.roles, role) {
			warnings = append(warnings, fmt.Sprintf("%s: the configuration %q was supplied but isn't a known config; ignored", sources[k].label(), k))
			continue
		}
		if err := ck.apply(v, &s); err != nil {
			return clientSettings{}, nil, fmt.Errorf("%s: %w", sources[k].describe(k, v), err)
		}
	}
	if s.idempotence == "true" && s.acks != "" && s.acks != "all" && s.acks != "-1" {
		return clientSettings{}, nil, fmt.Errorf("enable.idempotence=true needs acks=all, not acks=%s (Kafka: Must set acks to all in order to use the idempotent producer)", s.acks)
	}
	return s, warnings, nil
}

// acksOpts maps Kafka's acks to franz-go's options; acks 1 and 0 turn
// idempotence off, as it needs all.
func acksOpts(s string) ([]kgo.Opt, error) {
	switch s {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, errors.New("want all, -1, 1 or 0")
}

func compressionCodec(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, errors.New("want none, gzip, snappy, lz4 or zstd")
}

// partitionerByName maps Kafka's partitioner.class choices, by Gregor's
// short name or Kafka's class name, to franz-go's partitioners.
func partitionerByName(name string) (string, kgo.Partitioner, error) {
	switch name {
	case "default", "org.apache.kafka.clients.producer.internals.DefaultPartitioner":
		return "default", kgo.StickyKeyPartitioner(nil), nil
	case "round-robin", "org.apache.kafka.clients.producer.RoundRobinPartitioner":
		return "round-robin", kgo.RoundRobinPartitioner(), nil
	case "uniform-sticky", "org.apache.kafka.clients.producer.UniformStickyPartitioner":
		return "uniform-sticky", kgo.StickyPartitioner(), nil
	}
	return "", nil, errors.New("want default, round-robin or uniform-sticky")
}
