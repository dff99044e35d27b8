# librdkafka (confluent-kafka) in the three roles of Kafka's ACL
# documentation, each as its own user with only that role's ACLs; run by
# TestConfluentLeastPrivilege (acl_clients_test.go):
#
#   acl_confluent.py '{"bootstrap": "...", "security": {...}, "n": 50,
#                      "producer": ["user", "password"], "transactional": [...],
#                      "consumer": [...], "input": "...", "output": "...",
#                      "etl_group": "...", "txn_id": "...", "reader_group": "..."}'
#
# The idempotent producer writes n records to input; the transactional
# read-process-write loop (consumer group etl_group, transactional id
# txn_id) copies them to output, committing its offsets in each transaction
# (send_offsets_to_transaction); the consumer group member (reader_group)
# reads output read_committed and commits. "security" holds the librdkafka
# properties every client shares. The last line printed is JSON:
# {"version", "produced", "copied", "transactions", "read": [...]}, with
# "error" when a client failed.
import json
import sys
import time

spec = json.loads(sys.argv[1])
n = spec["n"]
out = {"produced": 0, "copied": 0, "transactions": 0, "read": []}


def conf(role, **more):
    user, password = spec[role]
    c = dict(spec["security"], **{"bootstrap.servers": spec["bootstrap"],
                                  "sasl.username": user, "sasl.password": password})
    c.update(more)
    return c


def run():
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

    out["version"] = "%s (librdkafka %s)" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0])
    errors = []

    # The idempotent producer.
    p = Producer(conf("producer", **{"enable.idempotence": True, "error_cb": errors.append}))

    def delivered(err, msg):
        if err:
            errors.append(err)
        else:
            out["produced"] += 1

    for i in range(n):
        p.produce(spec["input"], key=b"k%d" % i, value=b"v%03d" % i, on_delivery=delivered)
    deadline = time.time() + 30
    while len(p) > 0 and time.time() < deadline and not errors:
        p.flush(0.2)
    if len(p) or errors:
        raise RuntimeError("producer: %d undelivered, errors %s" % (len(p), [str(e) for e in errors]))

    # The transactional read-process-write loop.
    c = Consumer(conf("transactional", **{"group.id": spec["etl_group"], "enable.auto.commit": False,
                                          "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                          "error_cb": errors.append}))
    c.subscribe([spec["input"]])
    tp = Producer(conf("transactional", **{"transactional.id": spec["txn_id"], "error_cb": errors.append}))
    tp.init_transactions(30)
    deadline = time.time() + 60
    while out["copied"] < n and time.time() < deadline and not errors:
        msgs = c.consume(num_messages=20, timeout=0.5)
        batch = []
        for m in msgs:
            if m.error():
                raise KafkaException(m.error())
            batch.append(m)
        if not batch:
            continue
        tp.begin_transaction()
        for m in batch:
            tp.produce(spec["output"], key=m.key(), value=m.value())
        tp.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        tp.commit_transaction(30)
        out["copied"] += len(batch)
        out["transactions"] += 1
    c.close()
    if errors or out["copied"] < n:
        raise RuntimeError("read-process-write: %d of %d copied, errors %s" % (out["copied"], n, [str(e) for e in errors]))

    # The consumer group member.
    r = Consumer(conf("consumer", **{"group.id": spec["reader_group"], "enable.auto.commit": False,
                                     "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                     "error_cb": errors.append}))
    r.subscribe([spec["output"]])
    deadline = time.time() + 30
    while len(out["read"]) < n and time.time() < deadline and not errors:
        m = r.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            raise KafkaException(m.error())
        out["read"].append(m.value().decode())
    r.commit(asynchronous=False)
    r.close()
    if errors:
        raise RuntimeError("consumer: errors %s" % [str(e) for e in errors])


try:
    run()
except Exception as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(out))
