// CompactFill writes MB MiB of 1 KiB records over KEYS keys ("key-N",
// round the keys in order) to one partition of a compacted topic, with the
// Java producer (acks=1), for compaction.sh. Run from source:
// java -cp 'LIB/*' CompactFill.java BS TOPIC MB KEYS
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class CompactFill {
	public static void main(String[] args) throws Exception {
		String bs = args[0], topic = args[1];
		long n = Long.parseLong(args[2]) * 1024; // 1 KiB records
		int keys = Integer.parseInt(args[3]);
		Properties p = new Properties();
		p.put("bootstrap.servers", bs);
		p.put("acks", "1");
		p.put("linger.ms", "5");
		p.put("batch.size", "1048576");
		byte[] value = new byte[1024];
		long start = System.nanoTime();
		try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
			for (long i = 0; i < n; i++)
				pr.send(new ProducerRecord<>(topic, 0, ("key-" + (i % keys)).getBytes(), value), (m, e) -> {
					if (e != null) { System.err.println("CompactFill: " + e); System.exit(1); }
				});
			pr.flush();
		}
		double s = (System.nanoTime() - start) / 1e9;
		System.out.printf("records %d secs %.1f MB/s %.1f%n", n, s, n / 1024.0 / s);
	}
}
