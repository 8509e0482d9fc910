// GroupsCheck drives Kafka's own Java clients (kafka-clients 4.4.0)
// against a broker for TestClientJavaGroups:
//
//   consumer <bootstrap> <topic> <group> <n>: two KafkaConsumers with
//     group.protocol=consumer (KIP-848, server-side "uniform" assignor)
//     read n records between them, committing; every key exactly once.
//   share <bootstrap> <topic> <group> <n> <rejectBelow> <dlq>: two
//     KafkaShareConsumers share the topic's one partition, rejecting keys
//     below rejectBelow and accepting the rest; every record is handled
//     exactly once, both members get records, and the rejected ones reach
//     the group's dead-letter topic dlq with the __dlq.errors.* headers.
//
// It prints one line per check and exits non-zero on the first failure.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class GroupsCheck {
    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    static void produce(String bootstrap, String topic, int n) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                // One record a batch, so that the share consumers can split them.
                pr.send(new ProducerRecord<>(topic, 0, Integer.toString(i), "v" + i)).get();
            }
        }
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2], group = args[3];
        int n = Integer.parseInt(args[4]);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            if (mode.equals("consumer")) {
                createTopic(admin, topic, 4);
                produce(bootstrap, topic, n);
                consumerGroup(bootstrap, topic, group, n);
            } else {
                createTopic(admin, topic, 1);
                String dlq = args[6];
                ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
                admin.incrementalAlterConfigs(Map.of(res, List.of(
                        new AlterConfigOp(new org.apache.kafka.clients.admin.ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new org.apache.kafka.clients.admin.ConfigEntry("errors.deadletterqueue.topic.name", dlq), AlterConfigOp.OpType.SET)))).all().get();
                produce(bootstrap, topic, n);
                share(bootstrap, topic, group, n, Integer.parseInt(args[5]), dlq);
            }
        }
        System.out.println("OK " + mode);
    }

    static void consumerGroup(String bootstrap, String topic, String group, int n) throws Exception {
        ConcurrentHashMap<String, Integer> seen = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService ex = Executors.newFixedThreadPool(2);
        List<Future<Integer>> fs = new ArrayList<>();
        for (int m = 0; m < 2; m++) {
            fs.add(ex.submit(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "uniform");
                p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "20");
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                int mine = 0;
                try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                    c.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 60_000;
                    while (!stop.get() && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            seen.merge(r.key(), 1, Integer::sum);
                            mine++;
                        }
                        c.commitSync();
                        if (seen.size() >= n) {
                            stop.set(true);
                        }
                    }
                }
                return mine;
            }));
        }
        int a = fs.get(0).get(), b = fs.get(1).get();
        ex.shutdown();
        for (int i = 0; i < n; i++) {
            Integer k = seen.get(Integer.toString(i));
            if (k == null || k != 1) {
                fail("consumer group: key " + i + " consumed " + k + " times");
            }
        }
        System.out.println("consumer group: " + n + " records once each, members took " + a + " and " + b);
    }

    static void share(String bootstrap, String topic, String group, int n, int rejectBelow, String dlq) throws Exception {
        ConcurrentHashMap<String, Integer> accepted = new ConcurrentHashMap<>(), rejected = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService ex = Executors.newFixedThreadPool(2);
        List<Future<Integer>> fs = new ArrayList<>();
        for (int m = 0; m < 2; m++) {
            fs.add(ex.submit(() -> {
                Properties p = new Properties();
                p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                p.put("share.acknowledgement.mode", "explicit");
                p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
                p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
                int mine = 0;
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 60_000;
                    while (!stop.get() && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            int k = Integer.parseInt(r.key());
                            if (k < rejectBelow) {
                                rejected.merge(r.key(), 1, Integer::sum);
                                c.acknowledge(r, AcknowledgeType.REJECT);
                            } else {
                                accepted.merge(r.key(), 1, Integer::sum);
                                c.acknowledge(r, AcknowledgeType.ACCEPT);
                            }
                            mine++;
                            Thread.sleep(2); // some work, so the other member gets its turn
                        }
                        c.commitSync();
                        if (accepted.size() + rejected.size() >= n) {
                            stop.set(true);
                        }
                    }
                }
                return mine;
            }));
        }
        int a = fs.get(0).get(), b = fs.get(1).get();
        ex.shutdown();
        for (int i = 0; i < n; i++) {
            String k = Integer.toString(i);
            int acc = accepted.getOrDefault(k, 0), rej = rejected.getOrDefault(k, 0);
            if (i < rejectBelow ? (rej != 1 || acc != 0) : (acc != 1 || rej != 0)) {
                fail("share group: key " + i + " accepted " + acc + " and rejected " + rej + " times");
            }
        }
        if (a == 0 || b == 0) {
            fail("share group: one member got every record (" + a + " and " + b + ")");
        }
        System.out.println("share group: " + n + " records once each, members took " + a + " and " + b);

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Set<String> offsets = new HashSet<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.assign(List.of(new org.apache.kafka.common.TopicPartition(dlq, 0)));
            c.seekToBeginning(c.assignment());
            long deadline = System.currentTimeMillis() + 30_000;
            while (offsets.size() < rejectBelow && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    Map<String, String> h = new HashMap<>();
                    for (Header x : r.headers()) {
                        h.put(x.key(), new String(x.value(), StandardCharsets.UTF_8));
                    }
                    if (!topic.equals(h.get("__dlq.errors.topic")) || !"0".equals(h.get("__dlq.errors.partition"))
                            || !"1".equals(h.get("__dlq.errors.delivery.count"))) {
                        fail("DLQ record headers " + h);
                    }
                    offsets.add(h.get("__dlq.errors.offset"));
                }
            }
        }
        for (int i = 0; i < rejectBelow; i++) {
            if (!offsets.contains(Integer.toString(i))) {
                fail("DLQ: offset " + i + " missing; got " + offsets);
            }
        }
        System.out.println("dead-letter topic: the " + rejectBelow + " rejected records with their headers");
    }
}
