"""confluent-kafka's SchemaRegistryClient and its Avro, Protobuf and JSON
Schema serializers against AeroStream: produce and consume through the
Kafka port with schemas registered in AeroStream's registry, then the
registry's compatibility answers, then broker-side validation.

Usage: confluent_clients.py BOOTSTRAP REGISTRY_URL RUN_ID
Prints "OK <check>" per check; exits non-zero on the first failure.
"""
import struct
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

bootstrap, url, run = sys.argv[1], sys.argv[2], sys.argv[3]
sr = SchemaRegistryClient({"url": url})
admin = AdminClient({"bootstrap.servers": bootstrap})


def ok(what):
    print("OK", what, flush=True)


def create_topic(name, config=None):
    fs = admin.create_topics([NewTopic(name, 1, 1, config=config or {})])
    fs[name].result(30)


def produce(topic, values):
    p = Producer({"bootstrap.servers": bootstrap})
    errors = []

    def report(err, _msg):
        if err is not None:
            errors.append(err)

    for v in values:
        p.produce(topic, value=v, on_delivery=report)
    p.flush(30)
    return errors


def consume(topic, n):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    out, deadline = [], time.time() + 60
    while len(out) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        out.append(m.value())
    c.close()
    if len(out) != n:
        raise SystemExit("consumed %d of %d records from %s" % (len(out), n, topic))
    return out


def roundtrip(topic, ser, de, objs):
    create_topic(topic)
    ctx = SerializationContext(topic, MessageField.VALUE)
    errs = produce(topic, [ser(o, ctx) for o in objs])
    if errs:
        raise SystemExit("produce to %s: %s" % (topic, errs))
    return [de(v, ctx) for v in consume(topic, len(objs))]


# Avro: serializer registers v1; consumer decodes with the registry.
user_v1 = ('{"type":"record","name":"User","namespace":"t","fields":'
           '[{"name":"name","type":"string"},{"name":"n","type":"int"}]}')
user_v2 = ('{"type":"record","name":"User","namespace":"t","fields":'
           '[{"name":"name","type":"string"},{"name":"n","type":"int"},'
           '{"name":"email","type":"string","default":""}]}')
user_bad = ('{"type":"record","name":"User","namespace":"t","fields":'
            '[{"name":"name","type":"string"},{"name":"n","type":"int"},'
            '{"name":"phone","type":"string"}]}')
topic = "avro-" + run
got = roundtrip(topic, AvroSerializer(sr, user_v1), AvroDeserializer(sr),
                [{"name": "ada", "n": 1}, {"name": "bob", "n": 2}])
assert got == [{"name": "ada", "n": 1}, {"name": "bob", "n": 2}], got
ok("avro produce/consume")

subject = topic + "-value"
latest = sr.get_latest_version(subject)
assert latest.version == 1, latest
try:
    sr.register_schema(subject, Schema(user_bad, "AVRO"))
    raise SystemExit("an incompatible Avro schema registered under BACKWARD")
except SchemaRegistryError as e:
    assert e.http_status_code == 409 and e.error_code == 409, (e.http_status_code, e.error_code)
ok("avro incompatible change gets 409")
assert not sr.test_compatibility(subject, Schema(user_bad, "AVRO"))
assert sr.test_compatibility(subject, Schema(user_v2, "AVRO"))
sid = sr.register_schema(subject, Schema(user_v2, "AVRO"))
# A fresh client: the first one caches the latest version it saw.
latest = SchemaRegistryClient({"url": url}).get_latest_version(subject)
assert latest.version == 2 and latest.schema_id == sid, latest
ok("avro compatible change registers version 2")
# A v2 writer, read by the registry's schema of each record.
ctx = SerializationContext(topic, MessageField.VALUE)
errs = produce(topic, [AvroSerializer(sr, user_v2)({"name": "cy", "n": 3, "email": "c@x"}, ctx)])
assert not errs, errs
vals = consume(topic, 3)
assert AvroDeserializer(sr)(vals[2], ctx) == {"name": "cy", "n": 3, "email": "c@x"}
ok("avro v2 record read back")

# Protobuf: a message class built from a descriptor (no protoc needed).
fdp = descriptor_pb2.FileDescriptorProto(name="order_%s.proto" % run, package="shop", syntax="proto3")
m = fdp.message_type.add(name="Order")
m.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
m.field.add(name="qty", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
            label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
pool = descriptor_pool.DescriptorPool()
pool.Add(fdp)
Order = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
topic = "proto-" + run
got = roundtrip(topic, ProtobufSerializer(Order, sr, {"use.deprecated.format": False}),
                ProtobufDeserializer(Order, {"use.deprecated.format": False}),
                [Order(id="a", qty=2), Order(id="b", qty=5)])
assert [(o.id, o.qty) for o in got] == [("a", 2), ("b", 5)], got
reg = sr.get_latest_version(topic + "-value")
assert reg.schema.schema_type == "PROTOBUF", reg.schema.schema_type
ok("protobuf produce/consume")

# JSON Schema.
js = ('{"type":"object","properties":{"city":{"type":"string"},"temp":{"type":"number"}},'
      '"required":["city"]}')
topic = "json-" + run
got = roundtrip(topic, JSONSerializer(js, sr), JSONDeserializer(js, schema_registry_client=sr),
                [{"city": "Oslo", "temp": 3.5}, {"city": "Rome", "temp": 18}])
assert got == [{"city": "Oslo", "temp": 3.5}, {"city": "Rome", "temp": 18}], got
ok("json schema produce/consume")

# Broker-side validation: a record with an id not registered under the
# topic's subject is refused with INVALID_RECORD; a registered one passes.
topic = "validated-" + run
create_topic(topic, {"confluent.value.schema.validation": "true"})
sid = sr.register_schema(topic + "-value", Schema('"string"', "AVRO"))
good = struct.pack(">bI", 0, sid) + b"\x06abc"
errs = produce(topic, [good])
assert not errs, errs
errs = produce(topic, [struct.pack(">bI", 0, sid + 1000) + b"\x06abc"])
assert len(errs) == 1 and errs[0].name() == "INVALID_RECORD", errs
errs = produce(topic, [b"no prefix"])
assert len(errs) == 1 and errs[0].name() == "INVALID_RECORD", errs
ok("broker-side validation refuses a wrong id")
