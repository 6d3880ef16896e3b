// Package share is kbroker's share-group coordinator (KIP-932), the share
// part of Apache Kafka 4.2's GroupMetadataManager: share group membership
// with server-side assignment (ShareGroupHeartbeat v0-v1), member epochs,
// session timeouts, ShareGroupDescribe v0-v1, the share-state
// initialization that decides which partitions may be assigned, the admin
// APIs on share group offsets (DescribeShareGroupOffsets v0-v1,
// AlterShareGroupOffsets v0, DeleteShareGroupOffsets v0), and the share
// groups' part of ListGroups, DescribeGroups and DeleteGroups.
//
// # Model
//
// Share groups live beside classic and consumer groups (broker/group) on
// the same __consumer_offsets partitions: the coordinator of a group is
// the leader of PartitionFor(group id), the broker hands each led
// partition to both coordinators (BecomeLeader with the partition's
// records; each skips the other's record types), and a group id is of one
// type only (Options.OtherGroupType here, GroupType for broker/group).
// Every state change is written through the Store (acks=all) before it
// takes effect; a new leader replays the partition. Each group has one
// goroutine that owns its state and runs its requests one at a time;
// calls to the share coordinator (Options.State) run off it.
//
// # Heartbeat (Kafka's shareGroupHeartbeat)
//
//	epoch 0   join (client-generated member id) or rejoin with the current state
//	epoch n   heartbeat: n must be the member's epoch or its previous one,
//	          else FENCED_MEMBER_EPOCH; unknown member: UNKNOWN_MEMBER_ID;
//	          unknown group: GROUP_ID_NOT_FOUND
//	epoch -1  leave
//
// A heartbeat updates the member (a subscription record when it changed),
// bumps the group epoch when the subscription, the subscribed topics'
// metadata (MetadataHash) or the set of initialized share partitions
// changed, computes a new target assignment with the simple assignor
// (assign.go) when the group epoch passed the assignment epoch, and moves
// the member to its target at once (share partitions are never revoked
// first). The assignment is in the response when the member joined,
// sent its subscription, or got a new one. A member that leaves or misses
// share.session.timeout.ms is removed: its records are tombstoned, the
// group epoch bumped and the others reassigned in the same batch.
//
// Group states (Kafka's ShareGroupState): Empty (no members), Stable,
// Dead (deleted); see group.go.
//
// # Share state initialization
//
// Only partitions whose share state the share coordinator holds are
// assigned (initialize.go): the first heartbeat that subscribes to a
// topic records its partitions as initializing, InitializeShareGroupState
// (state epoch = group epoch, start offset -1: share.auto.offset.reset
// decides on the partition leader) runs off the group goroutine, and its
// outcome moves them to initialized (or drops them for a retry after
// group.share.initialize.retry.interval.ms). The next heartbeat sees
// initialized partitions that are not assigned, bumps the epoch and
// assigns them. AlterShareGroupOffsets initializes at a bumped epoch with
// the given start offsets, which fences the share-partition leaders'
// older state; DeleteShareGroupOffsets and DeleteGroups take topics
// through deleting while DeleteShareGroupState runs.
//
// # Records (__consumer_offsets)
//
// Kafka's formats (Kafka's CoordinatorRecordType), so Kafka's tools read
// them and compaction keeps the right ones. Keys: | int16 type | int16 len
// | group | (member-keyed types) int16 len | member |. Values: int16
// version 0, flexible (compact strings and arrays, tagged fields closing
// each struct). A nil value is a tombstone.
//
//	type  key             value
//	   9  group           ShareGroupPartitionMetadata: read only (pre-4.1), skipped
//	  10  group, member   ShareGroupMemberMetadata: | rackId? | clientId | clientHost | []subscribedTopicNames | tags |
//	  11  group           ShareGroupMetadata: | int32 epoch | int64 metadataHash | tags |
//	  12  group           ShareGroupTargetAssignmentMetadata: | int32 assignmentEpoch | tags |
//	  13  group, member   ShareGroupTargetAssignmentMember: | []TopicPartitions | tags |
//	  14  group, member   ShareGroupCurrentMemberAssignment: | int32 memberEpoch | int32 previousMemberEpoch |
//	                      int8 state (0 STABLE) | []TopicPartitions | tags |
//	  15  group           ShareGroupStatePartitionMetadata: | []TopicPartitionsInfo initializing |
//	                      []TopicPartitionsInfo initialized | []TopicInfo deleting | tags |
//	TopicPartitions:      | uuid topicId | []int32 partitions | tags |
//	TopicPartitionsInfo:  | uuid topicId | topicName | []int32 partitions | int64 createTimestamp | tags |
//	TopicInfo:            | uuid topicId | topicName | tags |
//
// Loading keeps the last value of every key and then assembles the groups
// (replay.go), so it gives the same result before and after compaction.
//
// # Wiring into the broker
//
// The packages broker/share, broker/sharepartition and broker/sharestate
// are self-contained; the broker's files call them:
//
//   - broker/shares.go builds one sharestate.Coordinator, one
//     sharepartition.Manager and one share.Coordinator (Options: the
//     partition count of __consumer_offsets, group.share.max.size, Config
//     = shareconfig.Effective(the group's GROUP configs from the metadata
//     image, the broker bounds), OtherGroupType from broker/group and the
//     reverse hook in broker/group, State = the persister
//     (share_persister.go), MemberLeft releasing the member's sessions).
//     Its applyImage drives the __share_group_state partitions
//     (BecomeLeader/Resign) and LeadershipLost; groups.go feeds the
//     __consumer_offsets records to this coordinator as to broker/group.
//   - FindCoordinator key type 2 (SHARE, v6+) answers the leader of
//     sharestate.PartitionFor, creating __share_group_state on first use;
//     share groups themselves use key type 0 (GROUP).
//   - api_76, 77, 90, 91, 92 call this package; api_78 and api_79 (with
//     share_fetch.go, share_ack.go, share_log.go, share_wake.go) call
//     broker/sharepartition; api_83 .. api_87 call broker/sharestate.
//   - ListGroups, DescribeGroups and DeleteGroups include share groups;
//     GROUP config resources (share_configs.go) are validated with
//     shareconfig.Validate and stored in the controller's metadata.
//   - metrics_share.go: kbroker_share_* (groups by state, members, records
//     by event, lag, in-flight records, sessions, the state topic).
package share
