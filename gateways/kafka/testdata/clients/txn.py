"""confluent-kafka transactional producer: commit, abort, commit.

Usage: txn.py BOOTSTRAP TOPIC

Runs three transactions of N records each on TOPIC (2 partitions): the
first committed, the second aborted, the third committed. Then a
read_committed consumer must see exactly the records of the first and
third (in order per partition, none of the second), and a
read_uncommitted consumer all three. Exits 0 when both hold, 1
otherwise, printing what went wrong. Run by clients_test.go (make
test-kafka).
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

N = 200
DEADLINE = 60  # seconds per consumer


def consume(bootstrap, topic, isolation, want):
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "txn-check-" + isolation,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    got = []
    end = time.time() + DEADLINE
    idle_until = None
    while time.time() < end:
        m = c.poll(0.5)
        if m is None:
            # Past the expected count, wait a little longer for anything
            # that should not be there.
            if len(got) >= want:
                if idle_until is None:
                    idle_until = time.time() + 2
                elif time.time() > idle_until:
                    break
            continue
        if m.error():
            print("consume error:", m.error())
            continue
        got.append(m.value().decode())
    c.close()
    return got


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)]).values():
        f.result()

    p = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": "txn-py-" + topic,
        "transaction.timeout.ms": 60000,
    })
    p.init_transactions(30)
    for name, commit in (("a", True), ("b", False), ("c", True)):
        p.begin_transaction()
        for i in range(N):
            p.produce(topic, key=str(i).encode(), value=("%s%d" % (name, i)).encode(), partition=i % 2)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)

    ok = True
    committed = consume(bootstrap, topic, "read_committed", 2 * N)
    want = sorted(["a%d" % i for i in range(N)] + ["c%d" % i for i in range(N)])
    if sorted(committed) != want:
        aborted = [v for v in committed if v.startswith("b")]
        print("read_committed: got %d records (%d of the aborted transaction), want %d" % (len(committed), len(aborted), len(want)))
        ok = False
    everything = consume(bootstrap, topic, "read_uncommitted", 3 * N)
    want_all = sorted(want + ["b%d" % i for i in range(N)])
    if sorted(everything) != want_all:
        print("read_uncommitted: got %d records, want %d" % (len(everything), len(want_all)))
        ok = False
    if ok:
        print("confluent-kafka transactions: read_committed saw %d records, read_uncommitted %d" % (len(committed), len(everything)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
