// Package admin reads and changes a Kafka cluster for an operator: typed
// views (cluster, health, topics with offsets and sizes, groups with lag,
// reassignments, the partitions at risk under acks=1 and acks=all) and
// operations (create, delete, alter configs, add partitions, seek a group,
// move replicas, read records), all on franz-go's kadm and kgo, so that
// they work against any Kafka-compatible cluster, not only kbroker.
//
// The kbroker CLI (package cli) and the web console (package console) are
// its two users; both print what it returns.
//
// Errors are for people: a Kafka error code comes back as a [KafkaError]
// naming the subject, the code's name and meaning and the broker that
// answered; a cluster none of whose seed brokers can be dialled is an
// [UnreachableError] as soon as every seed has refused twice (see
// [Client.Watch]), not after the deadline; a missing topic or group is a
// [NotFoundError].
//
// Connection settings use Kafka's client config names ([Config.Set]):
// bootstrap.servers, security.protocol, sasl.mechanism, sasl.username,
// sasl.password (or the Java client's sasl.jaas.config), ssl.ca.location,
// ssl.certificate.location, ssl.key.location,
// ssl.endpoint.identification.algorithm, client.id, request.timeout.ms.
package admin
