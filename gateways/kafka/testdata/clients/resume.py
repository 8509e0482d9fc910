"""Produce, consume in a group and commit, restart the consumer, resume.

Usage: resume.py BOOTSTRAP {kafka-python|confluent-kafka} TOPIC GROUP

Produces N records keyed 0..N-1 to TOPIC, consumes about half of them in
GROUP committing exactly what it processed, closes the consumer, starts a
new one in the same group and consumes until every key is seen. Exits 0
when every key was consumed exactly once (nothing missing, nothing
doubled), 1 otherwise, printing what went wrong. Run by clients_test.go
(make test-kafka).
"""

import sys
import time

N = 1000
FIRST = 400  # records the first consumer processes before it stops
DEADLINE = 60  # seconds per consumer


def kafka_python(bootstrap, topic, group):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(N):
        producer.send(topic, key=str(i).encode(), value=b"v%d" % i)
    producer.flush()
    producer.close()

    def consume(limit):
        c = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        keys = []
        end = time.time() + DEADLINE
        while len(keys) < limit and time.time() < end:
            batches = c.poll(timeout_ms=500, max_records=50)
            offsets = {}
            for tp, records in batches.items():
                for r in records:
                    keys.append(int(r.key))
                offsets[TopicPartition(tp.topic, tp.partition)] = OffsetAndMetadata(records[-1].offset + 1, "", -1)
            if offsets:
                c.commit(offsets)
        c.close()
        return keys

    return consume(FIRST), consume


def confluent(bootstrap, topic, group):
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(N):
        producer.produce(topic, key=str(i).encode(), value=b"v%d" % i)
        producer.poll(0)
    if producer.flush(30) != 0:
        raise SystemExit("confluent-kafka: records left unflushed")

    def consume(limit):
        c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        })
        c.subscribe([topic])
        keys = []
        end = time.time() + DEADLINE
        while len(keys) < limit and time.time() < end:
            msgs = c.consume(num_messages=50, timeout=0.5)
            good = []
            for m in msgs:
                if m.error():
                    raise SystemExit("confluent-kafka consume error: %s" % m.error())
                good.append(m)
                keys.append(int(m.key()))
            if good:
                c.commit(asynchronous=False)
        c.close()
        return keys

    return consume(FIRST), consume


def main():
    bootstrap, client, topic, group = sys.argv[1:5]
    run = {"kafka-python": kafka_python, "confluent-kafka": confluent}[client]
    first, consume = run(bootstrap, topic, group)
    if len(first) < FIRST:
        print("%s: first consumer got only %d records" % (client, len(first)))
        return 1
    rest = consume(N - len(first))
    seen = {}
    for k in first + rest:
        seen[k] = seen.get(k, 0) + 1
    missing = [k for k in range(N) if k not in seen]
    doubled = sorted(k for k, c in seen.items() if c > 1)
    print("%s: first consumer %d records, second %d; missing %d, doubled %d"
          % (client, len(first), len(rest), len(missing), len(doubled)))
    if missing or doubled:
        print("missing:", missing[:20], "doubled:", doubled[:20])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
