//go:build e2e

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// python is the system interpreter that has python3-kafka and
// python3-confluent-kafka; the python3 on PATH may be another one.
const python = "/usr/bin/python3"

// The scripts produce pyRecords records, record i to partition i%3 with
// timestamp base+i ms, and read them back; the Go side checks the JSON they
// print.
const pyRecords = 300

const kafkaPythonScript = `
import json, sys, time
from kafka import KafkaProducer, KafkaConsumer, KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic, ConfigResource, ConfigResourceType

bootstrap, topic, codec, n, base = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
out = {}

admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="gregor-e2e")
resp = admin.create_topics([NewTopic(topic, 3, 1, topic_configs={"retention.ms": "7200000", "max.message.bytes": "500000"})])
out["create_errors"] = [e[1] for e in resp.topic_errors]
try:
    admin.create_topics([NewTopic(topic, 3, 1)])
    out["create_again"] = "ok"
except Exception as e:
    out["create_again"] = type(e).__name__
configs = {}
for r in admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]):
    for res in r.resources:
        out["describe_error"] = res[0]
        for e in res[4]:
            configs[e[0]] = [e[1], e[3]]
out["configs"] = configs
admin.close()

producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all",
                         compression_type=None if codec == "none" else codec,
                         linger_ms=5, retries=0)
futures = [producer.send(topic, key=b"k%d" % i,
                         value=(("%s-%05d-" % (topic, i)) + "abcdefgh" * 8).encode(),
                         partition=i % 3, timestamp_ms=base + i) for i in range(n)]
producer.flush(30)
out["produced"] = [[m.partition, m.offset] for m in (f.get(30) for f in futures)]
producer.close()

consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
tps = [TopicPartition(topic, p) for p in range(3)]
consumer.assign(tps)
consumer.seek_to_beginning()
records = []
deadline = time.time() + 30
while len(records) < n and time.time() < deadline:
    for tp, msgs in consumer.poll(timeout_ms=500).items():
        for m in msgs:
            records.append([m.partition, m.offset, m.key.decode(), m.value.decode(), m.timestamp])
out["consumed"] = records
out["end_offsets"] = {str(tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
out["beginning_offsets"] = {str(tp.partition): o for tp, o in consumer.beginning_offsets(tps).items()}
times = {}
for q in [0, 1, n // 2, n - 1, n + 1000]:
    res = consumer.offsets_for_times({tp: base + q for tp in tps})
    times[str(q)] = {str(tp.partition): (None if v is None else [v.offset, v.timestamp]) for tp, v in res.items()}
out["offsets_for_times"] = times
consumer.close()
print(json.dumps(out))
`

const confluentScript = `
import json, sys, time
from confluent_kafka import Producer, Consumer, TopicPartition, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic, ConfigResource

bootstrap, topic, codec, n, base = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
out = {}

admin = AdminClient({"bootstrap.servers": bootstrap})
for t, f in admin.create_topics([NewTopic(topic, 3, 1, config={"retention.ms": "7200000", "segment.ms": "3600000"})]).items():
    f.result(20)
try:
    for t, f in admin.create_topics([NewTopic(topic, 3, 1)]).items():
        f.result(20)
    out["create_again"] = "ok"
except KafkaException as e:
    out["create_again"] = e.args[0].name()

def describe():
    for r, f in admin.describe_configs([ConfigResource("topic", topic)]).items():
        return {k: [v.value, v.source] for k, v in f.result(20).items()}
out["configs_before"] = describe()
# AlterConfigs (not incremental) replaces the whole set of topic configs.
for r, f in admin.alter_configs([ConfigResource("topic", topic, set_config={"retention.ms": "3600000", "max.message.bytes": "600000"})]).items():
    f.result(20)
out["configs_after"] = describe()
try:
    for r, f in admin.alter_configs([ConfigResource("topic", topic, set_config={"retention.ms": "not-a-number"})]).items():
        f.result(20)
    out["alter_invalid"] = "ok"
except KafkaException as e:
    out["alter_invalid"] = e.args[0].name()

producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                     "compression.type": codec, "linger.ms": 5})
reports = [None] * n
def on_delivery(i):
    def cb(err, msg):
        reports[i] = [str(err) if err else None, msg.partition(), msg.offset()]
    return cb
for i in range(n):
    producer.produce(topic, key=b"k%d" % i, value=(("%s-%05d-" % (topic, i)) + "abcdefgh" * 8).encode(),
                     partition=i % 3, timestamp=base + i, on_delivery=on_delivery(i))
    producer.poll(0)
out["unflushed"] = producer.flush(30)
out["reports"] = reports

consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "gregor-e2e-unused",
                     "enable.auto.commit": False, "enable.partition.eof": False})
consumer.assign([TopicPartition(topic, p, -2) for p in range(3)])
records = []
errors = []
deadline = time.time() + 30
while len(records) < n and time.time() < deadline:
    m = consumer.poll(0.5)
    if m is None:
        continue
    if m.error():
        errors.append(str(m.error()))
        continue
    records.append([m.partition(), m.offset(), m.key().decode(), m.value().decode(), m.timestamp()[1]])
out["consumed"] = records
out["consume_errors"] = errors
out["watermarks"] = {str(p): list(consumer.get_watermark_offsets(TopicPartition(topic, p), 10)) for p in range(3)}
times = {}
for q in [0, 1, n // 2, n - 1, n + 1000]:
    res = consumer.offsets_for_times([TopicPartition(topic, p, base + q) for p in range(3)], 10)
    times[str(q)] = {str(tp.partition): tp.offset for tp in res}
out["offsets_for_times"] = times
consumer.close()
print(json.dumps(out))
`

// pyRun writes script to a temp dir and runs it with the system python,
// decoding the JSON it prints into out.
func pyRun(t *testing.T, script string, out any, args ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stdout, err := run(t, 120*time.Second, "", python, append([]string{path}, args...)...)
	if err != nil {
		t.Fatalf("%s failed after %v: %v\n%s", python, time.Since(start), err, stdout)
	}
	// The JSON is the last line; client libraries may log before it.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("decode script output: %v\n%s", err, stdout)
	}
}

func needPythonModule(t *testing.T, module string) {
	t.Helper()
	if _, err := exec.LookPath(python); err != nil {
		t.Skipf("%s not installed", python)
	}
	if out, err := run(t, 30*time.Second, "", python, "-c", "import "+module); err != nil {
		t.Skipf("python module %s not available: %s", module, out)
	}
}

// pyRecord is one consumed record: partition, offset, key, value, timestamp.
type pyRecord struct {
	Partition int32
	Offset    int64
	Key       string
	Value     string
	Timestamp int64
}

func (r *pyRecord) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 5 {
		return fmt.Errorf("record %s: want 5 fields", b)
	}
	r.Partition, r.Offset = int32(a[0].(float64)), int64(a[1].(float64))
	r.Key, r.Value, r.Timestamp = a[2].(string), a[3].(string), int64(a[4].(float64))
	return nil
}

// checkPyRecords checks the consumed records are exactly the produced ones:
// record i on partition i%3 at offset i/3, with its key, value and
// timestamp, each once, in offset order per partition.
func checkPyRecords(t *testing.T, topic string, base int64, recs []pyRecord) {
	t.Helper()
	if len(recs) != pyRecords {
		t.Errorf("consumed %d records, want %d", len(recs), pyRecords)
	}
	next := map[int32]int64{}
	for _, r := range recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d (gap, duplicate or disorder)", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		i := int(r.Offset)*3 + int(r.Partition)
		wantValue := fmt.Sprintf("%s-%05d-%s", topic, i, strings.Repeat("abcdefgh", 8))
		if r.Key != fmt.Sprintf("k%d", i) || r.Value != wantValue || r.Timestamp != base+int64(i) {
			t.Fatalf("partition %d offset %d: got key %q value %q ts %d; want record %d", r.Partition, r.Offset, r.Key, r.Value, r.Timestamp, i)
		}
	}
}

// wantOffsetForTime is the first offset on partition p whose timestamp is
// >= base+q, or -1: record i (timestamp base+i) sits at offset i/3 of
// partition i%3.
func wantOffsetForTime(q, p int) int64 {
	k := 0
	if q > p {
		k = (q - p + 2) / 3
	}
	if k*3+p >= pyRecords {
		return -1
	}
	return int64(k)
}

// TestKafkaPython drives one broker with kafka-python 2.0: admin
// create/describe, a compressed producer at acks=all, and a consumer with
// manual assignment, end offsets and offsets by time.
func TestKafkaPython(t *testing.T) {
	needPythonModule(t, "kafka")
	t.Parallel()
	b := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			topic := topicName("kafka-python", codec)
			base := time.Now().Add(-time.Hour).UnixMilli()
			var out struct {
				CreateErrors     []int16                         `json:"create_errors"`
				CreateAgain      string                          `json:"create_again"`
				DescribeError    int16                           `json:"describe_error"`
				Configs          map[string][2]any               `json:"configs"`
				Produced         [][2]int64                      `json:"produced"`
				Consumed         []pyRecord                      `json:"consumed"`
				EndOffsets       map[string]int64                `json:"end_offsets"`
				BeginningOffsets map[string]int64                `json:"beginning_offsets"`
				OffsetsForTimes  map[string]map[string]*[2]int64 `json:"offsets_for_times"`
			}
			pyRun(t, kafkaPythonScript, &out, b.addr(), topic, codec, fmt.Sprint(pyRecords), fmt.Sprint(base))

			if fmt.Sprint(out.CreateErrors) != "[0]" || out.CreateAgain != "TopicAlreadyExistsError" {
				t.Errorf("create_topics errors %v then %q, want [0] then TopicAlreadyExistsError", out.CreateErrors, out.CreateAgain)
			}
			if out.DescribeError != 0 {
				t.Errorf("describe_configs error %d", out.DescribeError)
			}
			// Sources: 1 = DYNAMIC_TOPIC_CONFIG, 5 = DEFAULT_CONFIG.
			for name, want := range map[string][2]any{
				"retention.ms":      {"7200000", 1.0},
				"max.message.bytes": {"500000", 1.0},
				"cleanup.policy":    {"delete", 5.0},
			} {
				if got := out.Configs[name]; got != want {
					t.Errorf("describe_configs %s = %v, want %v", name, got, want)
				}
			}
			for i, po := range out.Produced {
				if po != [2]int64{int64(i % 3), int64(i / 3)} {
					t.Fatalf("record %d acknowledged at %v, want [%d %d]", i, po, i%3, i/3)
				}
			}
			checkPyRecords(t, topic, base, out.Consumed)
			for p := 0; p < 3; p++ {
				if e := out.EndOffsets[fmt.Sprint(p)]; e != pyRecords/3 {
					t.Errorf("end_offsets[%d] = %d, want %d", p, e, pyRecords/3)
				}
				if e := out.BeginningOffsets[fmt.Sprint(p)]; e != 0 {
					t.Errorf("beginning_offsets[%d] = %d, want 0", p, e)
				}
			}
			for qs, byPart := range out.OffsetsForTimes {
				var q int
				fmt.Sscan(qs, &q)
				for p := 0; p < 3; p++ {
					got, want := byPart[fmt.Sprint(p)], wantOffsetForTime(q, p)
					switch {
					case want < 0 && got != nil:
						t.Errorf("offsets_for_times(base+%d)[%d] = %v, want None", q, p, *got)
					case want >= 0 && (got == nil || got[0] != want || got[1] != base+want*3+int64(p)):
						t.Errorf("offsets_for_times(base+%d)[%d] = %v, want offset %d", q, p, got, want)
					}
				}
			}
			checkStoredCodec(t, b, topic, 0, codec)
		})
	}
}

// TestConfluentKafka drives one broker with confluent-kafka (librdkafka):
// admin create/describe/alter configs, a producer at acks=all with delivery
// reports, and a consumer with manual assignment, watermarks and offsets by
// time.
func TestConfluentKafka(t *testing.T) {
	needPythonModule(t, "confluent_kafka")
	t.Parallel()
	b := startBroker(t)
	for _, codec := range codecs {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			topic := topicName("confluent", codec)
			base := time.Now().Add(-time.Hour).UnixMilli()
			var out struct {
				CreateAgain     string                      `json:"create_again"`
				ConfigsBefore   map[string][2]any           `json:"configs_before"`
				ConfigsAfter    map[string][2]any           `json:"configs_after"`
				AlterInvalid    string                      `json:"alter_invalid"`
				Unflushed       int                         `json:"unflushed"`
				Reports         [][3]any                    `json:"reports"`
				Consumed        []pyRecord                  `json:"consumed"`
				ConsumeErrors   []string                    `json:"consume_errors"`
				Watermarks      map[string][2]int64         `json:"watermarks"`
				OffsetsForTimes map[string]map[string]int64 `json:"offsets_for_times"`
			}
			pyRun(t, confluentScript, &out, b.addr(), topic, codec, fmt.Sprint(pyRecords), fmt.Sprint(base))

			if out.CreateAgain != "TOPIC_ALREADY_EXISTS" {
				t.Errorf("second create_topics: %q, want TOPIC_ALREADY_EXISTS", out.CreateAgain)
			}
			// Sources: 1 = DYNAMIC_TOPIC_CONFIG, 5 = DEFAULT_CONFIG.
			checkConfigs := func(what string, got map[string][2]any, want map[string][2]any) {
				for name, w := range want {
					if got[name] != w {
						t.Errorf("%s: %s = %v, want %v", what, name, got[name], w)
					}
				}
			}
			checkConfigs("after create", out.ConfigsBefore, map[string][2]any{
				"retention.ms":      {"7200000", 1.0},
				"segment.ms":        {"3600000", 1.0},
				"max.message.bytes": {"1048588", 5.0},
			})
			// AlterConfigs replaces the set: segment.ms falls back to its default.
			checkConfigs("after alter_configs", out.ConfigsAfter, map[string][2]any{
				"retention.ms":      {"3600000", 1.0},
				"max.message.bytes": {"600000", 1.0},
				"segment.ms":        {"604800000", 5.0},
			})
			if out.AlterInvalid != "INVALID_CONFIG" {
				t.Errorf("alter_configs retention.ms=not-a-number: %q, want INVALID_CONFIG", out.AlterInvalid)
			}
			if out.Unflushed != 0 || len(out.Reports) != pyRecords {
				t.Fatalf("flush left %d, %d reports", out.Unflushed, len(out.Reports))
			}
			for i, r := range out.Reports {
				if r[0] != nil || r[1] != float64(i%3) || r[2] != float64(i/3) {
					t.Fatalf("delivery report %d = %v, want no error at %d/%d", i, r, i%3, i/3)
				}
			}
			if len(out.ConsumeErrors) > 0 {
				t.Errorf("consumer errors: %v", out.ConsumeErrors)
			}
			checkPyRecords(t, topic, base, out.Consumed)
			for p := 0; p < 3; p++ {
				if w := out.Watermarks[fmt.Sprint(p)]; w != [2]int64{0, pyRecords / 3} {
					t.Errorf("get_watermark_offsets(%d) = %v, want [0 %d]", p, w, pyRecords/3)
				}
			}
			for qs, byPart := range out.OffsetsForTimes {
				var q int
				fmt.Sscan(qs, &q)
				for p := 0; p < 3; p++ {
					// librdkafka reports "no such offset" as -1 (OFFSET_END).
					if got, want := byPart[fmt.Sprint(p)], wantOffsetForTime(q, p); got != want {
						t.Errorf("offsets_for_times(base+%d)[%d] = %d, want %d", q, p, got, want)
					}
				}
			}
			t.Run("stored-codec", func(t *testing.T) {
				skipIfLibrdkafkaDropsCodec(t, codec)
				checkStoredCodec(t, b, topic, 0, codec)
			})
		})
	}
}
