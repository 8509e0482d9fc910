// TxnEos drives Kafka's own Java clients (kafka-clients 4.4.0) through a
// transactional consume-transform-produce loop for TestClientJavaTxnEos:
//
//   produce <bootstrap> <in> <out> <n>: creates in and out (2 partitions
//     each) and writes n records "0".."n-1" to in.
//   loop <bootstrap> <in> <out> <group> <n>: read in (read_committed, in
//     group), write "out-"+value to out and commit the read offsets in the
//     same transaction (sendOffsetsToTransaction), printing "committed K"
//     after each transaction; exits once the group's offsets cover all n.
//     The test kills it with kill -9 between transactions and mid-way, and
//     starts it again: the new producer fences the old one and aborts its
//     open transaction, and the loop resumes from the committed offsets.
//   verify <bootstrap> <out> <n>: a read_committed consumer of out must see
//     every "out-i" exactly once.
//
// It prints one line per check and exits non-zero on failure.
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnEos {
    static void fail(String msg) {
        System.err.println("FAIL: " + msg);
        System.exit(1);
    }

    static Properties producerProps(String bootstrap) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    static Properties consumerProps(String bootstrap, String group) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        // Static membership: a restarted loop takes over its partitions at
        // once instead of waiting out the killed one's session.
        c.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, group + "-member");
        return c;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[1];
        switch (args[0]) {
            case "produce": {
                String in = args[2], out = args[3];
                int n = Integer.parseInt(args[4]);
                Properties ap = new Properties();
                ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
                try (Admin admin = Admin.create(ap)) {
                    admin.createTopics(List.of(new NewTopic(in, 2, (short) 1), new NewTopic(out, 2, (short) 1))).all().get();
                }
                try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps(bootstrap))) {
                    for (int i = 0; i < n; i++) {
                        p.send(new ProducerRecord<>(in, Integer.toString(i), Integer.toString(i)));
                    }
                    p.flush();
                }
                System.out.println("OK produce " + n);
                break;
            }
            case "loop": {
                String in = args[2], out = args[3], group = args[4];
                int n = Integer.parseInt(args[5]);
                Properties pp = producerProps(bootstrap);
                pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "eos-" + group);
                pp.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
                try (KafkaProducer<String, String> p = new KafkaProducer<>(pp);
                     KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, group))) {
                    p.initTransactions();
                    c.subscribe(List.of(in));
                    long done = 0;
                    long deadline = System.currentTimeMillis() + 120_000;
                    while (System.currentTimeMillis() < deadline) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                        if (recs.isEmpty()) {
                            long committed = 0;
                            Set<TopicPartition> parts = c.assignment();
                            if (!parts.isEmpty()) {
                                for (OffsetAndMetadata om : c.committed(parts).values()) {
                                    if (om != null) committed += om.offset();
                                }
                            }
                            if (committed >= n) {
                                System.out.println("OK loop committed " + committed);
                                return;
                            }
                            continue;
                        }
                        p.beginTransaction();
                        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                        for (ConsumerRecord<String, String> r : recs) {
                            p.send(new ProducerRecord<>(out, r.key(), "out-" + r.value()));
                            offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        }
                        p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                        p.commitTransaction();
                        done += recs.count();
                        System.out.println("committed " + done);
                        System.out.flush();
                    }
                    fail("loop did not finish within 120s");
                }
                break;
            }
            case "verify": {
                String out = args[2];
                int n = Integer.parseInt(args[3]);
                Map<String, Integer> seen = new HashMap<>();
                try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap, "eos-verify"))) {
                    c.subscribe(List.of(out));
                    long deadline = System.currentTimeMillis() + 60_000;
                    long idleSince = -1;
                    while (System.currentTimeMillis() < deadline) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(500));
                        for (ConsumerRecord<String, String> r : recs) {
                            seen.merge(r.value(), 1, Integer::sum);
                        }
                        if (seen.size() >= n) {
                            if (idleSince < 0) idleSince = System.currentTimeMillis();
                            if (System.currentTimeMillis() - idleSince > 3000) break;
                        }
                    }
                }
                int missing = 0, twice = 0;
                for (int i = 0; i < n; i++) {
                    Integer k = seen.get("out-" + i);
                    if (k == null) missing++;
                    else if (k > 1) twice++;
                }
                int total = seen.values().stream().mapToInt(Integer::intValue).sum();
                System.out.println("verify: " + total + " records read_committed, " + missing + " missing, " + twice + " more than once");
                if (missing > 0 || twice > 0 || seen.size() != n) fail("not exactly once");
                System.out.println("OK verify " + n);
                break;
            }
            default:
                fail("unknown mode " + args[0]);
        }
    }
}
