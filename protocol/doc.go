// Package protocol is kbroker's Kafka wire layer: TCP listeners, size-prefixed
// framing, request headers, and per-connection ordered pipelining. It decodes
// request bodies with kmsg and hands them to a Handler; it knows nothing about
// what the APIs mean.
//
// Frame (request):
//
//	+-----------+---------+---------+---------------+-------------------+--------------+------+
//	| size i32  | key i16 | ver i16 | correlation   | client id         | tagged flds  | body |
//	| (excl.)   |         |         | id i32        | nullable string   | (header v2)  |      |
//	+-----------+---------+---------+---------------+-------------------+--------------+------+
//
// Request header v1 is used for non-flexible versions, v2 (with tagged fields)
// for flexible ones (KIP-482). Response header v0 is the correlation id alone;
// v1 adds an empty tagged-field section. ApiVersions responses always use header
// v0 so that a client can parse the answer before it knows our versions.
//
// Ordering: Kafka answers the requests of one connection in the order they
// arrived. A connection's reader goroutine decodes and handles requests one at a
// time (so appends of pipelined produce requests happen in order); a handler that
// must wait (acks=all, fetch long-poll) returns a deferred Response and the
// reader moves on. The writer goroutine writes responses strictly in request
// order, waiting on a deferred response when it reaches it.
//
// Quotas: a handler mutes a connection over a quota with
// ConnInfo.Throttle; the reader handles nothing more from it until the
// mute ends (KIP-219, mute.go). ServerOptions.ThrottleConnection holds a
// new connection over its address's connection rate unserved, then closes
// it (KIP-612, connthrottle.go).
package protocol
