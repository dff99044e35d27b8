# A librdkafka (confluent-kafka) producer with librdkafka's defaults (acks
# all, retries until message.timeout.ms), run by TestFailoverBench
# (failover_bench_test.go) while it kills partition leaders.
#
# Usage: failover_confluent.py BOOTSTRAP TOPIC PARTITION
# Produces one record at a time to PARTITION, each after the previous one
# was delivered, and prints one JSON line per delivery: when the produce
# began and when its delivery report came (seconds since the epoch), and
# the delivery error if any. Runs until killed.
import json
import sys
import time

from confluent_kafka import Producer

bootstrap, topic, partition = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = Producer({"bootstrap.servers": bootstrap})
result = {}


def on_delivery(err, msg):
    result["err"] = str(err) if err else None
    result["ack"] = time.time()


while True:
    result.clear()
    start = time.time()
    p.produce(topic, value=b"x", partition=partition, on_delivery=on_delivery)
    while "ack" not in result:
        p.poll(0.001)
    print(json.dumps({"start": start, "ack": result["ack"], "err": result["err"]}), flush=True)
