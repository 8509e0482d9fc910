// Package grafana holds AeroStream's Grafana dashboard (aerostream.json)
// and the test that keeps it honest: every series a panel queries must be
// one the code registers. It has no code of its own and imports nothing of
// AeroStream's; the test reads the repository's sources as text.
package grafana
