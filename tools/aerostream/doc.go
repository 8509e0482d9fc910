// Command aerostream is AeroStream's single binary: `aerostream serve` runs
// a single-node broker, `aerostream store` a storage node serving the shard
// ring, `aerostream version` prints the version. The command tree lives in
// tools/cli; this package only calls it.
//
// Nothing may import this package.
package main
