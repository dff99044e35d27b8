package producer

import (
	"strings"
	"testing"
	"time"
)

func TestParsePropertiesJavaFile(t *testing.T) {
	const file = `# a Java producer's file
bootstrap.servers=a:9092, b:9092
acks = all
linger.ms: 20
key.serializer=org.apache.kafka.common.serialization.StringSerializer
value.serializer=org.apache.kafka.common.serialization.StringSerializer
compression.type=zstd
compression.zstd.level=7
batch.size=\
  32768
! another comment
max.in.flight.requests.per.connection=5
`
	props, err := ParseProperties(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.BootstrapServers) != 2 || cfg.BootstrapServers[1] != "b:9092" || cfg.Acks != -1 ||
		cfg.Linger != 20*time.Millisecond || cfg.Compression != "zstd" || cfg.CompressionLevel == nil ||
		*cfg.CompressionLevel != 7 || cfg.BatchSize != 32768 || cfg.MaxInFlight != 5 {
		t.Fatalf("config %+v", cfg)
	}
	if _, err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"acks": "2"}, "acks"},
		{map[string]string{"linger.ms": "-1"}, "linger.ms"},
		{map[string]string{"no.such.property": "1"}, "no.such.property"},
		{map[string]string{"transactional.id": "t"}, "transactions"},
		{map[string]string{"security.protocol": "SSL"}, "PLAINTEXT only"},
		{map[string]string{"partitioner.class": "com.example.Mine"}, "Config.Partitioner"},
		{map[string]string{"enable.idempotence": "maybe"}, "enable.idempotence"},
	} {
		_, err := ConfigFromProperties(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error about %s", tc.props, err, tc.want)
		}
	}
}

func TestIdempotenceConflicts(t *testing.T) {
	// Implicit idempotence gives way to acks=1, as in Kafka; explicit
	// idempotence with acks=1 is a configuration error.
	cfg := DefaultConfig("x:1")
	cfg.Acks = 1
	r, err := cfg.validate()
	if err != nil || r.idempotent {
		t.Fatalf("implicit: %v idempotent=%v", err, r.idempotent)
	}
	cfg.IdempotenceExplicit = true
	if _, err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "acks must be all") {
		t.Fatalf("explicit: %v", err)
	}
	cfg = DefaultConfig("x:1")
	cfg.MaxInFlight = 6
	cfg.IdempotenceExplicit = true
	if _, err := cfg.validate(); err == nil {
		t.Fatal("max.in.flight 6 with explicit idempotence accepted")
	}
	cfg = DefaultConfig("x:1")
	cfg.DeliveryTimeout = time.Second
	if _, err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "delivery.timeout.ms") {
		t.Fatalf("delivery.timeout.ms below request.timeout.ms: %v", err)
	}
	bad := 30
	cfg = DefaultConfig("x:1")
	cfg.Compression, cfg.CompressionLevel = "gzip", &bad
	if _, err := cfg.validate(); err == nil {
		t.Fatal("gzip level 30 accepted")
	}
}

func TestBackoffGrowsToMax(t *testing.T) {
	e := &engine{cfg: resolved{Config: DefaultConfig("x:1")}}
	for attempts := 1; attempts < 12; attempts++ {
		want := min(100*time.Millisecond<<(attempts-1), time.Second)
		got := e.backoff(attempts)
		if got < want*8/10 || got > want*12/10 {
			t.Errorf("attempt %d: backoff %v, want %v ±20%%", attempts, got, want)
		}
	}
}
