// Package bytebudget bounds the request bytes a server holds at once over
// all its connections (Kafka's queued.max.request.bytes): a frame reserves
// its size after its header and before its body is read, and gives it back
// once served. Both the gateways' listener and the shard ring's server use
// it. It is a leaf: it imports only the standard library.
package bytebudget
