// Package compat holds kbroker's compatibility tests: they start real
// kbroker processes on free loopback ports (or use a live cluster named by
// KBROKER_SEEDS=host:port,...) and drive them over the wire with real clients
// (franz-go kgo/kadm, kcat). They import nothing of kbroker's: the built
// binary is the only thing under test.
package compat
