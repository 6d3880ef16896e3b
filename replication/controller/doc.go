// Package controller is kbroker's KRaft-like metadata quorum, in combined
// mode: every kbroker process runs a Node.
//
// # Model
//
// The cluster metadata (brokers, topics with ids, partitions with replicas,
// ISR, leader and epochs, configs, producer-id blocks) is a replicated state
// machine on hashicorp/raft. Every node applies the committed log into an
// immutable Image (copy on write: unchanged topics and brokers are shared
// between images) and publishes it; readers need no lock. The Raft leader is
// the active controller: after a barrier (the log of earlier terms is
// applied) and one committed entry of its own, it serves the controller APIs
// (CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterConfigs,
// IncrementalAlterConfigs, AlterPartition, AlterPartitionReassignments,
// ListPartitionReassignments, BrokerRegistration, BrokerHeartbeat,
// UnregisterBroker, AllocateProducerIds, DescribeQuorum, CreateAcls,
// DeleteAcls, AlterUserScramCredentials, AlterClientQuotas, Envelope).
// Each decision is a pure function of the latest image (and the clock);
// decisions are serialized and each one's records are committed and applied
// before the next starts, like Kafka's single-threaded QuorumController.
// Broker sessions (heartbeat times) live only in the active controller and
// start afresh on failover.
//
// Client quotas are ClientQuota records (records_quotas.go); the active
// controller measures controller_mutation_rate (KIP-599, mutation.go) for
// the client a request is made for: a broker forwarding a client's
// CreateTopics, DeleteTopics or CreatePartitions names it (WithCaller), and
// the request reaches a remote active controller in an Envelope (KIP-590,
// envelope.go) carrying the client's principal and client id.
//
// Elections follow Kafka 4.x's PartitionChangeBuilder with eligible leader
// replicas (KIP-966, elr.go): the ISR, then an unfenced member of the ELR
// when the ISR is empty, then the last known leader, then (unclean
// election only) any live replica; see election.go. Brokers register with
// the broker epoch of their last clean shutdown; any other value is an
// unclean shutdown, after which the broker leaves every ISR and ELR.
// Fencing, controlled shutdown and unfencing
// follow KIP-631 (api_brokers.go); AlterPartition follows KIP-497/KIP-841
// (isr.go). Partition reassignment follows KIP-455 as KRaft does it
// (reassign.go): the replicas grow to old plus new, the new ones catch up and
// join the ISR, and the change that brings the last of them in also drops
// the old ones.
//
// # Files under Options.DataDir
//
//	raft.db      Raft log and stable store (bbolt, raft-boltdb/v2)
//	snapshots/   Raft file snapshots, the last 2 kept; one is taken every
//	             8192 entries
//
// A log entry is one JSON record, or a batch applied atomically (records.go):
//
//	{"type":"RegisterBroker","v":1,"id":1,"incarnationId":"...","listeners":[...]}
//	{"type":"Batch","v":1,"records":[{"type":"FenceBroker",...},{"type":"PartitionChange",...}]}
//
// PartitionChange is version 3 when it sets the eligible leader replicas
// ("elr", "lastKnownElr"), else version 2 when it sets the replica
// assignment ("replicas", "adding", "removing") or "bumpLeaderEpoch"; other
// records and other PartitionChange records are version 1.
//
// A snapshot is one JSON document {"v":1,"clusterId":...,"brokers":[...],
// "topics":[...]} (fsm.go), version 2 when a partition has eligible leader
// replicas. A node refuses record and snapshot versions newer
// than it knows rather than misread them.
//
// # Controller listener
//
// One TCP port per node carries Raft and Kafka. A Raft dialer writes the
// byte 'R' (0x52) first; no Kafka frame can start with it under any request
// size limit below 1.3 GB. Other connections are Kafka requests, answered by
// the node itself (Handle) unless Options.ExternalKafkaServer hands them to
// the caller through KafkaListener.
//
// # Joining
//
// On first start every voter bootstraps the same configuration of all
// voters. A node not among the voters starts with an empty Raft state;
// when it registers as a broker with a CONTROLLER listener, the active
// controller adds it as a non-voter and it receives the log.
package controller
