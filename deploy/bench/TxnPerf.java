// TxnPerf measures produce throughput with the Java producer (kafka-clients),
// transactional (committing every TXN records) or not (TXN 0), for
// eos-share.sh. Run from source: java -cp 'LIB/*' TxnPerf.java BS TOPIC SECS TXN
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RoundRobinPartitioner;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnPerf {
	public static void main(String[] args) throws Exception {
		String bs = args[0], topic = args[1];
		long secs = Long.parseLong(args[2]);
		int perTxn = Integer.parseInt(args[3]);
		Properties p = new Properties();
		p.put("bootstrap.servers", bs);
		p.put("acks", "all");
		p.put("linger.ms", "5");
		p.put("batch.size", "1048576");
		// Round-robin spreads every transaction over all the partitions, so
		// each commit writes a marker to each: the cost being measured.
		p.put("partitioner.class", RoundRobinPartitioner.class.getName());
		if (perTxn > 0) p.put("transactional.id", "txnperf-" + System.nanoTime());
		byte[] value = new byte[1024];
		AtomicLong acked = new AtomicLong();
		long txns = 0, committed = 0;
		try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
			if (perTxn > 0) pr.initTransactions();
			long start = System.nanoTime(), end = start + secs * 1_000_000_000L;
			while (System.nanoTime() < end) {
				if (perTxn > 0) pr.beginTransaction();
				// Without transactions, bursts of 100 keep the clock checks
				// cheap; send blocks when buffer.memory is full.
				for (int i = 0; i < 100 || i < perTxn; i++)
					pr.send(new ProducerRecord<>(topic, value), (m, e) -> { if (e == null) acked.incrementAndGet(); });
				if (perTxn > 0) {
					pr.commitTransaction(); // flushes first; throws if any send failed
					txns++;
				}
			}
			pr.flush();
			committed = acked.get();
			double s = (System.nanoTime() - start) / 1e9;
			System.out.printf("records %d txns %d secs %.1f rec/s %.0f MB/s %.1f%n", committed, txns, s, committed / s, committed * 1024 / s / 1e6);
		}
	}
}
