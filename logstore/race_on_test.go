//go:build race

package logstore

// raceEnabled: the race detector is on, and slows CPU-heavy tests severalfold.
const raceEnabled = true
