// Package topicconfig is the one registry of Kafka topic configs: for each
// config its Kafka name, the broker-level name that sets its cluster
// default, its type, default, range, whether it may change on a live topic,
// and which layer of AeroStream applies it. The controller validates and
// describes from it, and the layers that apply a config (logstore for the
// segment, retention and size limits) read its values through it, so a
// default or a range is written once, here.
//
// Kafka's special values keep Kafka's meaning: -1 is unlimited for the
// retention configs, and -2 for local.retention.ms / local.retention.bytes
// means "as retention.ms / retention.bytes". A local retention of 0 removes
// the local copy of a segment as soon as the segment is in the cold tier,
// and retention.ms = 0 deletes a segment as soon as it is sealed.
//
// Adding a config is adding a row to defs (defs.go); a row whose Layer is
// Logstore must also be mapped by logstore, which its tests check.
//
// The package is a leaf at the top level rather than under controller/:
// controller, logstore, tierd and the gateways all import it, and logstore
// sits below the controller in the dependency direction (DESIGN §2), so it
// may not depend on the controller's subtree. It imports no other
// aerostream package (layout_test.go holds it to that).
package topicconfig
