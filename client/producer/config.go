package producer

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"gregor/client/internal/props"
	"gregor/client/internal/wire"
	"gregor/internal/record"
)

// Config is the producer's configuration. Each field is the Kafka producer
// property named in its comment, with Kafka's default (DefaultConfig). Build
// one with DefaultConfig and set fields, or read a Java client's properties
// with ParseProperties.
type Config struct {
	BootstrapServers []string // bootstrap.servers
	ClientID         string   // client.id

	// Acks is acks: -1 ("all"), 0 or 1.
	Acks int16
	// EnableIdempotence is enable.idempotence (default true). Idempotence
	// needs acks=all and at most 5 requests in flight per connection; when
	// the property was not set explicitly and those do not hold, it is
	// turned off, as Kafka does (IdempotenceExplicit).
	EnableIdempotence   bool
	IdempotenceExplicit bool

	BatchSize      int           // batch.size, bytes (16384)
	Linger         time.Duration // linger.ms (5 ms)
	BufferMemory   int64         // buffer.memory, bytes (32 MiB)
	MaxBlock       time.Duration // max.block.ms (60 s)
	MaxRequestSize int           // max.request.size, bytes (1 MiB)

	// Compression is compression.type: none, gzip, snappy, lz4 or zstd.
	Compression string
	// CompressionLevel is compression.<type>.level for the chosen type;
	// nil is the codec's default.
	CompressionLevel *int

	Retries         int           // retries (MaxInt32)
	RetryBackoff    time.Duration // retry.backoff.ms (100 ms)
	RetryBackoffMax time.Duration // retry.backoff.max.ms (1 s)
	DeliveryTimeout time.Duration // delivery.timeout.ms (120 s)
	RequestTimeout  time.Duration // request.timeout.ms (30 s)
	MaxInFlight     int           // max.in.flight.requests.per.connection (5)

	MetadataMaxAge  time.Duration // metadata.max.age.ms (5 min)
	MetadataMaxIdle time.Duration // metadata.max.idle.ms (5 min)

	// PartitionerAdaptive is partitioner.adaptive.partitioning.enable:
	// the built-in sticky partitioner favours partitions with shorter
	// queues.
	PartitionerAdaptive bool
	// PartitionerAvailabilityTimeout is partitioner.availability.timeout.ms:
	// when not zero, the adaptive sticky partitioner skips partitions whose
	// oldest queued batch has waited this long past linger.ms (their
	// leader is not taking data). Kafka judges the leader broker as a
	// whole; this client judges each partition's queue.
	PartitionerAvailabilityTimeout time.Duration
	// PartitionerIgnoreKeys is partitioner.ignore.keys: keyed records are
	// placed by the sticky partitioner too.
	PartitionerIgnoreKeys bool
	// Partitioner replaces the built-in partitioning (partitioner.class);
	// nil is Kafka's default partitioner.
	Partitioner Partitioner

	// Dial opens connections; nil is a plain TCP dialer. Tests use it to
	// inject connection failures.
	Dial wire.DialFunc
}

// DefaultConfig returns Kafka's producer defaults with the given bootstrap
// servers.
func DefaultConfig(bootstrap ...string) Config {
	return Config{
		BootstrapServers:    bootstrap,
		ClientID:            "gregor-producer",
		Acks:                -1,
		EnableIdempotence:   true,
		BatchSize:           16384,
		Linger:              5 * time.Millisecond,
		BufferMemory:        32 << 20,
		MaxBlock:            60 * time.Second,
		MaxRequestSize:      1 << 20,
		Compression:         "none",
		Retries:             math.MaxInt32,
		RetryBackoff:        100 * time.Millisecond,
		RetryBackoffMax:     time.Second,
		DeliveryTimeout:     120 * time.Second,
		RequestTimeout:      30 * time.Second,
		MaxInFlight:         5,
		MetadataMaxAge:      5 * time.Minute,
		MetadataMaxIdle:     5 * time.Minute,
		PartitionerAdaptive: true,
	}
}

// ignoredProperties are the Java producer's own properties that have no
// meaning for this client (serializer class names; transaction.timeout.ms
// while transactions are not here), accepted so a Java client's file works
// unchanged; props.JavaOnly has those every Java client takes.
var ignoredProperties = map[string]bool{
	"key.serializer": true, "value.serializer": true, "transaction.timeout.ms": true,
}

// ParseProperties reads a Java .properties file's key=value lines (also
// key: value; # and ! comments; backslash line continuations).
func ParseProperties(r io.Reader) (map[string]string, error) { return props.Parse(r) }

// ConfigFromProperties builds a Config from Kafka producer property names.
// Properties this client does not implement are an error, so a setting is
// never silently dropped; the Java-only ones (ignoredProperties,
// props.JavaOnly) are accepted and have no effect.
func ConfigFromProperties(p map[string]string) (Config, error) {
	cfg := DefaultConfig()
	var pv props.Values
	ms, num, boolean := pv.Millis, pv.Int, pv.Bool
	// Numbers are taken up to int64; retries and max.in.flight are clamped
	// to an int32 where they are read.
	const noMax = math.MaxInt64
	levels := map[string]string{}
	for k, v := range p {
		switch k {
		case "bootstrap.servers":
			cfg.BootstrapServers = props.List(v)
		case "client.id":
			cfg.ClientID = v
		case "acks":
			switch v {
			case "all", "-1":
				cfg.Acks = -1
			case "0":
				cfg.Acks = 0
			case "1":
				cfg.Acks = 1
			default:
				pv.Errs = append(pv.Errs, fmt.Errorf("acks: %q is not all, -1, 0 or 1", v))
			}
		case "enable.idempotence":
			boolean(k, v, &cfg.EnableIdempotence)
			cfg.IdempotenceExplicit = true
		case "batch.size":
			cfg.BatchSize = int(num(k, v, 0, noMax))
		case "linger.ms":
			ms(k, v, &cfg.Linger)
		case "buffer.memory":
			cfg.BufferMemory = num(k, v, 0, noMax)
		case "max.block.ms":
			ms(k, v, &cfg.MaxBlock)
		case "max.request.size":
			cfg.MaxRequestSize = int(num(k, v, 1, noMax))
		case "compression.type":
			cfg.Compression = v
		case "compression.gzip.level", "compression.lz4.level", "compression.zstd.level":
			levels[k] = v
		case "retries":
			cfg.Retries = int(min(num(k, v, 0, noMax), math.MaxInt32))
		case "retry.backoff.ms":
			ms(k, v, &cfg.RetryBackoff)
		case "retry.backoff.max.ms":
			ms(k, v, &cfg.RetryBackoffMax)
		case "delivery.timeout.ms":
			ms(k, v, &cfg.DeliveryTimeout)
		case "request.timeout.ms":
			ms(k, v, &cfg.RequestTimeout)
		case "max.in.flight.requests.per.connection":
			cfg.MaxInFlight = int(min(num(k, v, 1, noMax), math.MaxInt32))
		case "metadata.max.age.ms":
			ms(k, v, &cfg.MetadataMaxAge)
		case "metadata.max.idle.ms":
			ms(k, v, &cfg.MetadataMaxIdle)
		case "partitioner.adaptive.partitioning.enable":
			boolean(k, v, &cfg.PartitionerAdaptive)
		case "partitioner.availability.timeout.ms":
			ms(k, v, &cfg.PartitionerAvailabilityTimeout)
		case "partitioner.ignore.keys":
			boolean(k, v, &cfg.PartitionerIgnoreKeys)
		case "partitioner.class":
			switch v {
			case "", "org.apache.kafka.clients.producer.internals.DefaultPartitioner":
				cfg.Partitioner = nil
			case "org.apache.kafka.clients.producer.RoundRobinPartitioner":
				cfg.Partitioner = NewRoundRobinPartitioner()
			default:
				pv.Errs = append(pv.Errs, fmt.Errorf("partitioner.class: %q is a Java class; set Config.Partitioner instead", v))
			}
		case "security.protocol":
			if v != "PLAINTEXT" {
				pv.Errs = append(pv.Errs, fmt.Errorf("security.protocol: %q is not supported by this client (PLAINTEXT only)", v))
			}
		case "transactional.id":
			if v != "" {
				pv.Errs = append(pv.Errs, errors.New("transactional.id: transactions are not supported by this client yet"))
			}
		default:
			if !ignoredProperties[k] && !props.JavaOnly(k) {
				pv.Errs = append(pv.Errs, fmt.Errorf("%s: not a producer property this client implements", k))
			}
		}
	}
	if lv, ok := levels["compression."+cfg.Compression+".level"]; ok {
		n, err := strconv.Atoi(lv)
		if err != nil {
			pv.Errs = append(pv.Errs, fmt.Errorf("compression.%s.level: %q is not a number", cfg.Compression, lv))
		} else {
			cfg.CompressionLevel = &n
		}
	}
	if err := errors.Join(pv.Errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// resolved is a validated Config with the derived settings.
type resolved struct {
	Config
	idempotent bool
	codec      record.Codec
}

// validate checks cfg as Kafka's ProducerConfig does.
func (cfg Config) validate() (resolved, error) {
	r := resolved{Config: cfg}
	if len(cfg.BootstrapServers) == 0 {
		return r, errors.New("bootstrap.servers is empty")
	}
	if cfg.Acks != -1 && cfg.Acks != 0 && cfg.Acks != 1 {
		return r, fmt.Errorf("acks: %d is not -1, 0 or 1", cfg.Acks)
	}
	codec, err := record.ParseCodec(cfg.Compression)
	if err != nil {
		return r, fmt.Errorf("compression.type: %w", err)
	}
	r.codec = codec
	if cfg.CompressionLevel != nil {
		if err := checkLevel(codec, *cfg.CompressionLevel); err != nil {
			return r, err
		}
	}
	if cfg.MaxInFlight < 1 {
		return r, fmt.Errorf("max.in.flight.requests.per.connection: %d is below 1", cfg.MaxInFlight)
	}
	if cfg.BatchSize < 0 || cfg.BufferMemory < 0 || cfg.MaxRequestSize < 1 {
		return r, errors.New("batch.size, buffer.memory and max.request.size must not be negative")
	}
	if cfg.DeliveryTimeout < cfg.Linger+cfg.RequestTimeout {
		// Kafka's producer refuses this too: a batch could expire before
		// it was ever given a chance to be sent.
		return r, fmt.Errorf("delivery.timeout.ms (%v) must be at least linger.ms + request.timeout.ms (%v)",
			cfg.DeliveryTimeout, cfg.Linger+cfg.RequestTimeout)
	}
	if cfg.RequestTimeout <= 0 {
		return r, errors.New("request.timeout.ms must be positive")
	}
	r.idempotent = cfg.EnableIdempotence
	if r.idempotent {
		conflict := ""
		switch {
		case cfg.Acks != -1:
			conflict = "acks must be all"
		case cfg.MaxInFlight > 5:
			conflict = "max.in.flight.requests.per.connection must be at most 5"
		case cfg.Retries == 0:
			conflict = "retries must be above 0"
		}
		if conflict != "" {
			if cfg.IdempotenceExplicit {
				return r, fmt.Errorf("enable.idempotence=true: %s", conflict)
			}
			r.idempotent = false
		}
	}
	return r, nil
}
