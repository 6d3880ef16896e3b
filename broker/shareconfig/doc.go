// Package shareconfig holds the share-group configs of KIP-932: the
// group-level configs of the GROUP resource (share.*), their defaults and
// the broker-level bounds they are validated and clamped against, exactly as
// Apache Kafka's GroupConfig and ShareGroupConfig define them, and the
// parser of share.auto.offset.reset (earliest, latest, by_duration:<ISO-8601
// duration>).
//
// Both the share-group coordinator (broker/share: session timeout,
// heartbeat interval) and the share-partition leaders (broker/sharepartition:
// lock duration, delivery count limit, record locks, isolation level, offset
// reset) read a group's effective Config; the broker's DescribeConfigs and
// IncrementalAlterConfigs on the GROUP resource use Validate and Describe.
//
//	group config                      default       bound (broker config, default)
//	share.session.timeout.ms          45000         group.share.{min,max}.session.timeout.ms (45000, 60000)
//	share.heartbeat.interval.ms       5000          group.share.{min,max}.heartbeat.interval.ms (5000, 15000)
//	share.record.lock.duration.ms     30000         group.share.{min,max}.record.lock.duration.ms (15000, 60000)
//	share.delivery.count.limit        5             group.share.{min,max}.delivery.count.limit (2, 10)
//	share.partition.max.record.locks  2000          group.share.{min,max}.partition.max.record.locks (100, 10000)
//	share.auto.offset.reset           latest        earliest | latest | by_duration:PnDTnHnMn.nS (not negative)
//	share.isolation.level             read_uncommitted  read_committed | read_uncommitted
//	share.renew.acknowledge.enable    true          (KIP-1222)
//
// Validate refuses a value outside its bounds (Kafka's
// InvalidConfigurationException, INVALID_CONFIG on the wire) and a session
// timeout that is not greater than the heartbeat interval; Effective clamps
// a stored value into the bounds, as Kafka's GroupConfig.evaluate does when
// the broker bounds changed after the value was stored.
package shareconfig
