package consumer

import (
	"errors"
	"fmt"
	"io"
	"time"

	"gregor/client/internal/props"
	"gregor/client/internal/wire"
)

// Config is the consumer's configuration. Each field is the Kafka consumer
// property named in its comment, with Kafka's default (DefaultConfig).
type Config struct {
	BootstrapServers []string // bootstrap.servers
	ClientID         string   // client.id
	// GroupID is group.id: the group whose committed offsets the consumer
	// reads and writes. Empty means no group: Commit and Committed fail.
	GroupID string

	MaxPollRecords         int           // max.poll.records (500)
	FetchMinBytes          int32         // fetch.min.bytes (1)
	FetchMaxBytes          int32         // fetch.max.bytes (50 MiB)
	MaxPartitionFetchBytes int32         // max.partition.fetch.bytes (1 MiB)
	FetchMaxWait           time.Duration // fetch.max.wait.ms (500 ms)

	// AutoOffsetReset is auto.offset.reset: earliest, latest or none.
	AutoOffsetReset string
	// IsolationLevel is isolation.level: read_uncommitted or
	// read_committed.
	IsolationLevel string

	EnableAutoCommit   bool          // enable.auto.commit (true)
	AutoCommitInterval time.Duration // auto.commit.interval.ms (5 s)

	RequestTimeout        time.Duration // request.timeout.ms (30 s)
	DefaultAPITimeout     time.Duration // default.api.timeout.ms (60 s)
	RetryBackoff          time.Duration // retry.backoff.ms (100 ms)
	AllowAutoCreateTopics bool          // allow.auto.create.topics (true)
	CheckCRCs             bool          // check.crcs: always checked here; false is accepted and ignored
	ClientRack            string        // client.rack: accepted; this client fetches from leaders only

	// Dial opens connections; nil is a plain TCP dialer.
	Dial wire.DialFunc
}

// DefaultConfig returns Kafka's consumer defaults with the given bootstrap
// servers.
func DefaultConfig(bootstrap ...string) Config {
	return Config{
		BootstrapServers:       bootstrap,
		ClientID:               "gregor-consumer",
		MaxPollRecords:         500,
		FetchMinBytes:          1,
		FetchMaxBytes:          50 << 20,
		MaxPartitionFetchBytes: 1 << 20,
		FetchMaxWait:           500 * time.Millisecond,
		AutoOffsetReset:        "latest",
		IsolationLevel:         "read_uncommitted",
		EnableAutoCommit:       true,
		AutoCommitInterval:     5 * time.Second,
		RequestTimeout:         30 * time.Second,
		DefaultAPITimeout:      60 * time.Second,
		RetryBackoff:           100 * time.Millisecond,
		AllowAutoCreateTopics:  true,
		CheckCRCs:              true,
	}
}

// ignoredProperties are Java consumer properties accepted, with no effect,
// so a Java client's file works unchanged (props.JavaOnly has those every
// Java client takes): the deserializer class names, and three this client
// has no counterpart for yet: metadata.max.age.ms (metadata is refreshed
// after errors only), retry.backoff.max.ms (the backoff stays
// retry.backoff.ms) and exclude.internal.topics (it matters to Subscribe,
// which is not here).
var ignoredProperties = map[string]bool{
	"key.deserializer": true, "value.deserializer": true,
	"retry.backoff.max.ms": true, "metadata.max.age.ms": true, "exclude.internal.topics": true,
}

// ParseProperties reads a Java .properties file.
func ParseProperties(r io.Reader) (map[string]string, error) { return props.Parse(r) }

// ConfigFromProperties builds a Config from Kafka consumer property names.
// A property this client does not implement is an error (never silently
// dropped); the Java-only ones (ignoredProperties, props.JavaOnly) are
// accepted. Group membership properties (partition.assignment.strategy,
// session.timeout.ms, ...) are refused: this consumer has no Subscribe yet.
func ConfigFromProperties(p map[string]string) (Config, error) {
	cfg := DefaultConfig()
	var pv props.Values
	ms, num, boolean := pv.Millis, pv.Int, pv.Bool
	const maxInt32 = 1<<31 - 1
	for k, v := range p {
		switch k {
		case "bootstrap.servers":
			cfg.BootstrapServers = props.List(v)
		case "client.id":
			cfg.ClientID = v
		case "group.id":
			cfg.GroupID = v
		case "max.poll.records":
			cfg.MaxPollRecords = int(num(k, v, 1, maxInt32))
		case "fetch.min.bytes":
			cfg.FetchMinBytes = int32(num(k, v, 0, maxInt32))
		case "fetch.max.bytes":
			cfg.FetchMaxBytes = int32(num(k, v, 0, maxInt32))
		case "max.partition.fetch.bytes":
			cfg.MaxPartitionFetchBytes = int32(num(k, v, 0, maxInt32))
		case "fetch.max.wait.ms":
			ms(k, v, &cfg.FetchMaxWait)
		case "auto.offset.reset":
			cfg.AutoOffsetReset = v
		case "isolation.level":
			cfg.IsolationLevel = v
		case "enable.auto.commit":
			boolean(k, v, &cfg.EnableAutoCommit)
		case "auto.commit.interval.ms":
			ms(k, v, &cfg.AutoCommitInterval)
		case "request.timeout.ms":
			ms(k, v, &cfg.RequestTimeout)
		case "default.api.timeout.ms":
			ms(k, v, &cfg.DefaultAPITimeout)
		case "retry.backoff.ms":
			ms(k, v, &cfg.RetryBackoff)
		case "allow.auto.create.topics":
			boolean(k, v, &cfg.AllowAutoCreateTopics)
		case "check.crcs":
			boolean(k, v, &cfg.CheckCRCs)
		case "client.rack":
			cfg.ClientRack = v
		case "security.protocol":
			if v != "PLAINTEXT" {
				pv.Errs = append(pv.Errs, fmt.Errorf("security.protocol: %q is not supported by this client (PLAINTEXT only)", v))
			}
		default:
			if !ignoredProperties[k] && !props.JavaOnly(k) {
				pv.Errs = append(pv.Errs, fmt.Errorf("%s: not a consumer property this client implements", k))
			}
		}
	}
	if err := errors.Join(pv.Errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// validate checks cfg as Kafka's ConsumerConfig does.
func (cfg Config) validate() error {
	if len(cfg.BootstrapServers) == 0 {
		return errors.New("bootstrap.servers is empty")
	}
	switch cfg.AutoOffsetReset {
	case "earliest", "latest", "none":
	default:
		return fmt.Errorf("auto.offset.reset: %q is not earliest, latest or none", cfg.AutoOffsetReset)
	}
	switch cfg.IsolationLevel {
	case "read_uncommitted", "read_committed":
	default:
		return fmt.Errorf("isolation.level: %q is not read_uncommitted or read_committed", cfg.IsolationLevel)
	}
	if cfg.MaxPollRecords < 1 {
		return fmt.Errorf("max.poll.records: %d is below 1", cfg.MaxPollRecords)
	}
	if cfg.RequestTimeout <= 0 || cfg.DefaultAPITimeout <= 0 {
		return errors.New("request.timeout.ms and default.api.timeout.ms must be positive")
	}
	if cfg.FetchMaxWait >= cfg.RequestTimeout {
		// A fetch the broker may hold for fetch.max.wait.ms must not time
		// out on the client first.
		return fmt.Errorf("fetch.max.wait.ms (%v) must be below request.timeout.ms (%v)", cfg.FetchMaxWait, cfg.RequestTimeout)
	}
	return nil
}
