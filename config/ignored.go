package config

import (
	"slices"
	"strings"
)

// ignoredKeys are Apache Kafka 3.x/4.x server configs that kbroker accepts
// and does not use: thread pools, socket buffers, quotas, metrics
// reporters, ZooKeeper, tiered storage, share groups, and the internal topics it manages itself. A file may keep
// them; the broker logs them as ignored.
var ignoredKeys = []string{
	"alter.config.policy.class.name", "alter.log.dirs.replication.quota.window.num",
	"alter.log.dirs.replication.quota.window.size.seconds",
	"auto.include.jmx.reporter", "background.threads", "broker.id.generation.enable",
	"client.quota.callback.class", "client.telemetry.max.bytes",
	"control.plane.listener.name", "controlled.shutdown.max.retries",
	"controlled.shutdown.retry.backoff.ms", "controller.quorum.append.linger.ms",
	"controller.quorum.auto.join.enable", "controller.quorum.election.backoff.max.ms",
	"controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
	"controller.socket.timeout.ms", "create.topic.policy.class.name",
	"delete.records.purgatory.purge.interval.requests", "early.start.listeners",
	"eligible.leader.replicas.enable", "fetch.max.bytes", "fetch.purgatory.purge.interval.requests",
	"inter.broker.protocol.version", "kafka.metrics.polling.interval.secs", "kafka.metrics.reporters",
	"log.dir.failure.timeout.ms", "log.initial.task.delay.ms", "log.message.format.version",
	"log.message.timestamp.difference.max.ms", "max.connection.creation.rate",
	"max.connections.per.ip", "max.connections.per.ip.overrides",
	"max.request.partition.size.limit",
	"metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
	"metadata.log.segment.bytes", "metadata.log.segment.ms", "metadata.max.idle.interval.ms",
	"metadata.max.retention.bytes", "metadata.max.retention.ms", "metric.reporters",
	"metrics.num.samples", "metrics.recording.level", "metrics.sample.window.ms",
	"num.io.threads", "num.network.threads",
	"num.replica.alter.log.dirs.threads", "offsets.commit.required.acks", "offsets.commit.timeout.ms",
	"offsets.load.buffer.size", "offsets.topic.compression.codec", "principal.builder.class",
	"producer.id.expiration.check.interval.ms", "producer.purgatory.purge.interval.requests",
	"queued.max.request.bytes", "remote.fetch.max.wait.ms", "remote.list.offsets.request.timeout.ms",
	"request.timeout.ms", "reserved.broker.max.id",
	"security.providers", "server.max.startup.time.ms",
	"socket.connection.setup.timeout.max.ms", "socket.connection.setup.timeout.ms",
	"socket.listen.backlog.size", "socket.receive.buffer.bytes", "socket.send.buffer.bytes",
	"telemetry.max.bytes",
	"transaction.partition.verification.enable",
	"transaction.two.phase.commit.enable", "unstable.api.versions.enable",
	"unstable.feature.versions.enable",
}

// ignoredPrefixes are families of Kafka configs kbroker ignores. A key of
// the key table is never ignored, even if a prefix matches it
// (log.cleaner.delete.retention.ms, group.max.size).
var ignoredPrefixes = []string{
	"config.providers", "delegation.token.", "group.", "log.cleaner.",
	"password.encoder.", "remote.log.", "share.", "transaction.state.log.",
	"zookeeper.",
}

// keyClass is what a key name is to kbroker.
type keyClass int

const (
	classKnown    keyClass = iota // in the key table
	classSecurity                 // an ssl.*, sasl.* or listener.name.* property (security.go)
	classIgnored                  // a Kafka config kbroker does not use
	classUnknown                  // nobody's
)

func classify(name string) keyClass {
	switch {
	case keyByName(name) != nil:
		return classKnown
	case isSecurityProperty(name):
		return classSecurity
	case slices.Contains(ignoredKeys, name):
		return classIgnored
	case slices.ContainsFunc(ignoredPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }):
		return classIgnored
	}
	return classUnknown
}
