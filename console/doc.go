// Package console is kbroker's read-only web console, served by every
// broker under /ui on its metrics listener: the cluster overview (brokers,
// controller, partition and leader counts, under-replicated, under-min-ISR
// and offline partitions, this broker's produce and fetch throughput), the
// topics and each partition's leader, replicas, ISR, offsets and size with
// the topic's configs, the consumer groups with their lag per partition
// over time, a message browser, and the partitions at risk under acks=1 and
// acks=all. Pages are Go templates rendered on the server with a small
// script for the live charts (static/app.js), all embedded: it needs no
// internet. Every read goes through package admin (franz-go's kadm), as a
// Kafka client of the cluster.
//
// Who reads: without Options.Login, one connection for everyone (the
// broker's PLAINTEXT listener). With it (a broker whose clients use SASL),
// each viewer logs in with HTTP Basic credentials that are a Kafka user's
// SASL user and password; the console opens that viewer's own connection
// with them, so the broker authenticates the viewer and its ACLs decide
// what the viewer sees; the charts' samples are taken per viewer and never
// shared (viewers.go). Only GET is served.
package console
