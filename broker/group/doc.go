// Package group is kbroker's group coordinator: consumer groups of the
// classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, static
// membership), KIP-848 consumer groups (ConsumerGroupHeartbeat with
// server-side assignment), committed offsets, and the admin APIs on them.
//
// # Model
//
// The coordinator of a group is the leader of its __consumer_offsets
// partition (PartitionFor). The broker tells the Coordinator which
// partitions it leads (BecomeLeader, Resign); every state change is written
// to that partition through a Store (acks=all) before it takes effect, and
// a new leader rebuilds the state by replaying the partition. There is no
// network or replication code here.
//
// Each group has one goroutine that owns its state and runs the requests
// for it one at a time, Store.Append included; a request's records are
// committed before the group's memory changes (write-ahead), so a failed
// append leaves the group as it was and the client gets NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE. Timers (session, rebalance, join, sync,
// retention) are Options.AfterFunc callbacks that run on the group
// goroutine; tests drive them with a manual clock.
//
// # Classic groups
//
// State machine (classicState), as Kafka 4's ClassicGroup:
//
//	Empty -> PreparingRebalance -> CompletingRebalance -> Stable
//	           ^        |                  |                 |
//	           |        v (no member left) |                 |
//	           |      Empty                |                 |
//	           +---------------------------+-----------------+  (join, leave, expiry)
//
// A GroupMetadataValue record is written when a group is created, when the
// leader's SyncGroup brings the assignment (before anybody receives it),
// when a static member is replaced without a rebalance, and when the group
// becomes Empty.
//
// # KIP-848 consumer groups
//
// Group epoch, target assignment epoch, member epochs and reconciliation
// follow Kafka's GroupMetadataManager and CurrentAssignmentBuilder: a
// partition moves to a new owner only after its previous owner reported it
// revoked. Assignors "uniform" and "range" are in assign.go. Subscriptions
// by regular expression are resolved against Options.AllTopics (RE2,
// whole-name match, internal topics included as in Kafka 4.x; again at most
// every 10s) and are not persisted: the resolved topics enter the group's metadata hash
// (name, id and partition count of every subscribed topic), whose change
// bumps the group epoch, so new topics and partitions get assigned.
//
// # Records (__consumer_offsets)
//
// kbroker writes Kafka's own formats, so Kafka's tools can read the topic
// and compaction keeps the right records. Every key starts with an int16
// record type; strings in keys are int16-length prefixed (non-flexible).
// Values start with an int16 version.
//
//	type  key fields                      value                          written
//	   0  group, topic, partition int32   OffsetCommitValue              read only (legacy)
//	   1  group, topic, partition int32   OffsetCommitValue v3 (v1 when  on commit
//	                                      the commit has an expire time)
//	   2  group                           GroupMetadataValue v3          classic group changes
//	   3  group                           ConsumerGroupMetadataValue     group epoch bumps
//	   4  group                           ConsumerGroupPartitionMetadata read only; tombstoned on delete
//	   5  group, member                   ConsumerGroupMemberMetadata    member subscription
//	   6  group                           ConsumerGroupTargetAssignment- target assignment epoch
//	                                      MetadataValue
//	   7  group, member                   ConsumerGroupTargetAssignment- member's target
//	                                      MemberValue
//	   8  group, member                   ConsumerGroupCurrentMember-    member epoch, state,
//	                                      AssignmentValue                owned/revoking partitions
//	  16  group, regex                    ConsumerGroupRegularExpression read only
//
// Keys, byte by byte (big endian):
//
//	offset commit:  | int16 type=1 | int16 len | group | int16 len | topic | int32 partition |
//	group (2,3,6):  | int16 type   | int16 len | group |
//	member (5,7,8): | int16 type   | int16 len | group | int16 len | member id |
//
// Types 0-2 values are kmsg's OffsetCommitValue and GroupMetadataValue.
// KIP-848 values (types 3-8) are version 0 and flexible: compact strings
// and arrays (uvarint length+1), a tagged-field section (uvarint count, then
// uvarint tag, uvarint size, bytes) closing each struct:
//
//	3: | int16 0 | int32 epoch | tags{0: int64 metadataHash} |
//	5: | int16 0 | instanceId? | rackId? | clientId | clientHost | []topicName |
//	     topicRegex? | int32 rebalanceTimeoutMs | serverAssignor? | tags |
//	6: | int16 0 | int32 assignmentEpoch | tags |
//	7: | int16 0 | []TopicPartitions | tags |
//	8: | int16 0 | int32 memberEpoch | int32 previousMemberEpoch | int8 state |
//	     []TopicPartitions assigned | []TopicPartitions pendingRevocation | tags |
//	TopicPartitions: | uuid topicId | []int32 partitions | tags |
//
// A nil value is a tombstone. Unknown record types (share and streams
// groups) and unknown tagged fields are skipped when loading. Loading keeps
// the last value of every key and then assembles the groups, so it gives
// the same result before and after compaction.
package group
