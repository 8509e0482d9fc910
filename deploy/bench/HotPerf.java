// HotPerf sends 1 KiB records at a fixed rate to partition 0 of a topic
// with the Java producer (acks=1, linger.ms=1) and prints the latency of
// each send to its acknowledgement in us (p50, p99, p99.9, max), for
// compaction.sh; ProducerPerformance prints whole milliseconds only.
// Run from source: java -cp 'LIB/*' HotPerf.java BS TOPIC RATE SECS [GO]
// It first sends for WARM_SECS unmeasured. With GO, a path, it then waits
// for that file to exist before it starts, so that the JVM's start is not
// in the measured window.
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class HotPerf {
	static final int WARM_SECS = 3;

	// send sends n records at rate, each one's send-to-ack latency in lat.
	static void send(KafkaProducer<byte[], byte[]> pr, String topic, byte[] value, int rate, int n, long[] lat, int[] failed) {
		long start = System.nanoTime();
		for (int i = 0; i < n; i++) {
			long due = start + (long) i * 1_000_000_000L / rate, now;
			while ((now = System.nanoTime()) < due) LockSupport.parkNanos(due - now);
			final int k = i;
			final long sent = System.nanoTime();
			pr.send(new ProducerRecord<>(topic, 0, null, value), (m, e) -> {
				if (e != null) failed[0]++;
				lat[k] = (System.nanoTime() - sent) / 1000;
			});
		}
	}

	public static void main(String[] args) throws Exception {
		String bs = args[0], topic = args[1];
		int rate = Integer.parseInt(args[2]), n = rate * Integer.parseInt(args[3]);
		Properties p = new Properties();
		p.put("bootstrap.servers", bs);
		p.put("acks", "1");
		p.put("linger.ms", "1");
		p.put("batch.size", "1048576");
		byte[] value = new byte[1024];
		long[] lat = new long[n];
		int[] failed = new int[1];
		long start;
		try (KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
			pr.partitionsFor(topic); // metadata before the clock starts
			// The send path compiled before the clock starts: a cold JIT
			// stalls the first second's sends by tens of ms on 2 cores.
			send(pr, topic, value, rate, rate * WARM_SECS, new long[rate * WARM_SECS], failed);
			pr.flush();
			failed[0] = 0;
			if (args.length > 4) {
				System.err.println("HotPerf: ready");
				while (!new java.io.File(args[4]).exists()) Thread.sleep(10);
			}
			start = System.nanoTime();
			send(pr, topic, value, rate, n, lat, failed);
			pr.flush();
		}
		double s = (System.nanoTime() - start) / 1e9;
		Arrays.sort(lat);
		System.out.printf("records %d failed %d rec/s %.0f p50 %d us p99 %d us p99.9 %d us max %d us%n",
			n, failed[0], n / s, lat[n / 2], lat[(int) (n * 0.99)], lat[(int) (n * 0.999)], lat[n - 1]);
	}
}
