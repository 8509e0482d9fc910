// Package client is the Go SDK of AeroStream's native protocol
// (gateways/native/PROTOCOL.md): a Client for admin calls and topic
// lookups, a Producer that batches per partition, compresses and retries
// idempotently, a Consumer that follows partitions from an offset, the
// log's start or end, or a time, and a GroupConsumer whose partitions the
// gateway assigns and whose commits Kafka consumers of the group share.
//
// Every call that does I/O takes a context. Errors the gateway answers are
// *Error values carrying Kafka's code; errors.Is matches them against
// franz-go's kerr values and against this package's sentinels
// (ErrUnknownTopic, ErrClosed, ErrUnreachable).
//
// A Producer sends, per connection, ProduceMany requests carrying a batch
// of every partition that has records, up to MaxInFlight of them out at
// once (pipelined, as the protocol's correlation ids allow), so a busier
// producer sends bigger requests rather than more of them; a partition's
// records land in order, and after a failure are resent in order. Its
// idempotent producer id comes from the cluster's allocator
// (Client.InitProducerID).
//
// A Consumer follows by long-polling Fetch, or with ConsumerOptions.Push
// by a server-push subscription whose credit it gives back as it hands
// records out.
//
// Consumed bytes are lent, not given: the slice Poll returns and every
// Message's Key, Value and Headers belong to the Consumer and stay valid
// only until its next Poll. With Push, each push is read into a buffer the
// subscription reuses, and the next Poll hands the last one back for a
// later push; so following a partition allocates nothing per push once
// those buffers have grown, and a caller that keeps a record past the next
// Poll must copy it (bytes.Clone, string(m.Value)). Seek and Close do not
// reclaim anything.
//
// A GroupConsumer can commit inside its next fetch
// (CommitOnNextPoll); Client.DescribeGroup, ListGroups and Lag ask the
// gateway about groups.
//
// Options.TLS and Options.SASL secure a connection as a Kafka client's
// security.protocol and sasl.mechanism do; SASL mechanisms are franz-go's
// (pkg/sasl/scram, pkg/sasl/plain), the ones Kafka clients in Go already
// hold.
//
// The package imports only the codec (gateways/native/wire) and franz-go's
// SASL mechanisms, never server code, so applications can import it
// alone.
package client
