# librdkafka (confluent-kafka) transactional producer and read_committed /
# read_uncommitted consumers, run by TestTxnConfluent (txn_clients_test.go).
#
# Usage: txn_confluent.py BOOTSTRAP TOPIC
# Three transactions over partitions 0..2 (record i to partition i%3):
# commit-0..99 committed, abort-0..49 aborted, commit-100..199 committed.
# Prints one JSON line: per isolation level the records read
# ([partition, offset, value]), the partitions that reached EOF, and errors.
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

bootstrap, topic = sys.argv[1], sys.argv[2]
out = {"produce_errors": []}


def on_delivery(err, msg):
    if err:
        out["produce_errors"].append(str(err))


p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "confluent-txn",
              "linger.ms": 5, "transaction.timeout.ms": 60000})
p.init_transactions(30)


def txn(values, commit):
    p.begin_transaction()
    for i, v in values:
        p.produce(topic, value=v.encode(), partition=i % 3, on_delivery=on_delivery)
        p.poll(0)
    # Everything is in the log before the transaction ends, so that an
    # aborted transaction's records are really there to be skipped.
    p.flush(30)
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


txn([(i, "commit-%d" % i) for i in range(100)], True)
txn([(i, "abort-%d" % i) for i in range(50)], False)
txn([(i, "commit-%d" % i) for i in range(100, 200)], True)


def consume(level):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-unused-" + level,
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": level})
    c.assign([TopicPartition(topic, part, 0) for part in range(3)])
    records, eof, errors = [], set(), []
    deadline = time.time() + 30
    while len(eof) < 3 and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(m.partition())
            else:
                errors.append(str(m.error()))
            continue
        records.append([m.partition(), m.offset(), m.value().decode()])
    watermarks = {str(part): list(c.get_watermark_offsets(TopicPartition(topic, part), 10)) for part in range(3)}
    c.close()
    return {"records": records, "eof": sorted(eof), "errors": errors, "watermarks": watermarks}


out["read_committed"] = consume("read_committed")
out["read_uncommitted"] = consume("read_uncommitted")
print(json.dumps(out))
