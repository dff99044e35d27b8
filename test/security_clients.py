# Produce n records to partition 0 of a topic over an authenticated
# listener and read them back, with kafka-python or confluent-kafka
# (librdkafka). Run by security_clients_test.go:
#
#   security_clients.py '{"client": "kafka-python", "bootstrap": "...",
#                         "topic": "...", "n": 50, "security": {...}}'
#
# "security" holds the client's own settings (kafka-python keyword
# arguments, or librdkafka properties). The last line printed is JSON:
# {"version": ..., "offsets": [...], "values": [...]}, with "error" instead
# of offsets and values when the client failed (and "librdkafka", the
# library version, for confluent-kafka).
import json
import sys
import time

spec = json.loads(sys.argv[1])
client, bootstrap, topic, n, sec = spec["client"], spec["bootstrap"], spec["topic"], spec["n"], spec["security"]
values = ["%s-%04d" % (topic, i) for i in range(n)]
out = {}


def kafka_python():
    import kafka
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition

    out["version"] = kafka.__version__
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=0, **sec)
    futures = [producer.send(topic, key=b"k%d" % i, value=v.encode(), partition=0) for i, v in enumerate(values)]
    producer.flush(30)
    out["offsets"] = [f.get(30).offset for f in futures]
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, **sec)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    deadline = time.time() + 30
    while len(got) < n and time.time() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            got.extend(m.value.decode() for m in msgs)
    consumer.close()
    out["values"] = got


def confluent():
    import confluent_kafka
    from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING

    out["version"] = "%s (librdkafka %s)" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0])
    out["librdkafka"] = confluent_kafka.libversion()[0]
    errors = []
    producer = Producer(dict(sec, **{"bootstrap.servers": bootstrap, "acks": "all",
                                     "enable.idempotence": False, "error_cb": errors.append}))
    offsets = [None] * n

    def on_delivery(i):
        def cb(err, msg):
            offsets[i] = str(err) if err else msg.offset()
        return cb

    for i, v in enumerate(values):
        producer.produce(topic, key=b"k%d" % i, value=v.encode(), partition=0, on_delivery=on_delivery(i))
    # Give up at the first client error (say, a refused login) rather than
    # when the flush times out.
    deadline = time.time() + 30
    while len(producer) > 0 and time.time() < deadline and not errors:
        producer.flush(0.2)
    if len(producer) or errors:
        raise RuntimeError("%d records undelivered, errors %s" % (len(producer), [str(e) for e in errors]))
    out["offsets"] = offsets

    consumer = Consumer(dict(sec, **{"bootstrap.servers": bootstrap, "group.id": "security-e2e",
                                     "enable.auto.commit": False, "error_cb": errors.append}))
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = []
    deadline = time.time() + 30
    while len(got) < n and time.time() < deadline and not errors:
        m = consumer.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise RuntimeError(str(m.error()))
        got.append(m.value().decode())
    consumer.close()
    if errors:
        raise RuntimeError("errors %s" % [str(e) for e in errors])
    out["values"] = got


try:
    {"kafka-python": kafka_python, "confluent": confluent}[client]()
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
