// Package kcode owns the one mapping from the store's and the controller's
// sentinel errors to the Kafka error codes every gateway answers with. The
// Kafka and native gateways both speak Kafka's codes; each adds only its
// own sentinels (Table's argument), so a store or controller error reads
// the same on both ports and a new sentinel gets its code in one place.
//
// Imports: logstore/ring and controller for their sentinels, franz-go's
// kerr for the codes; nothing else of ours.
package kcode
