// Package config owns aerostream.toml: the Config struct, its defaults, and
// how a value is chosen for each key (defaults < file < environment < flag).
//
// Every key is declared once, as a tagged field of Config. The file decoder,
// the AEROSTREAM_* environment variables, the --section.key flags, the key
// list used by the README and the tests all come from those tags by
// reflection, so adding a field adds its env var and its flag.
//
// config is a leaf of tools/: it must not import any other aerostream
// package. Turning a Config into logstore.Options and the like is the job of
// tools/cli, the one place that wires packages together.
package config
