// Package bench is the load generator behind `aerostream bench`. It drives
// any Kafka-compatible broker through franz-go (kgo for producing and
// consuming, kadm for creating and deleting the topics) and follows
// OpenMessaging Benchmark's workload model:
//
//   - a workload has Topics topics of Partitions partitions each;
//   - each topic has Producers producers (one kgo client each) and
//     Subscriptions subscriptions of Consumers consumers each;
//   - producers share a target rate (messages per second over all of them,
//     0 = as fast as the broker takes them), paced by a token schedule;
//   - a warmup phase runs first and its figures are discarded, then the
//     measured phase runs for Duration.
//
// A subscription is a Kafka consumer group (ConsumeGroup, the OMB model),
// or, with ConsumeAssign, a set of consumers that split the partitions
// among themselves by direct assignment, for brokers without groups and
// for measurements that must not include a rebalance.
//
// Every message carries its send time (unix nanoseconds, big-endian, in its
// first 8 bytes), so that the consumer measures end-to-end latency against
// the producer's clock; both run in this process. Latencies go into
// HdrHistograms (1 µs to 60 s, 3 significant digits); each producer and
// consumer owns its recorders, and the reporter swaps them once a second to
// print the progress line and add them to the run's totals.
//
// kgo's hooks count every client's produce requests and fetch responses,
// so a result also says how many messages each request carried: on a
// machine the client shares with the broker, that is part of what the
// client's CPU depends on. The same hooks time each produce request's round
// trip, the broker's share of the publish latency.
//
// bench imports no aerostream package: it is a client, and it must measure
// AeroStream and its peers the same way.
package bench
