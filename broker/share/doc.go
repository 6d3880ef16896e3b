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
// # Wiring into the broker (the next step)
//
// The packages broker/share, broker/sharepartition and broker/sharestate
// are self-contained; the broker's API files call them. In order:
//
//  1. broker.go: build one sharestate.Coordinator, one sharepartition.Manager
//     and one share.Coordinator. The share coordinator's Options:
//     NumPartitions from offsets.topic.num.partitions, MaxGroupSize
//     group.share.max.size, Config = shareconfig.Effective(the group's
//     stored GROUP configs, the broker bounds), TopicByName/TopicByID from
//     the metadata image, OtherGroupType from broker/group (and
//     broker/group needs the reverse hook: an Options.OtherGroupType that
//     calls this package's GroupType, so a JoinGroup or
//     ConsumerGroupHeartbeat for a share group id gets
//     GROUP_ID_NOT_FOUND / INCONSISTENT_GROUP_PROTOCOL as Kafka), State =
//     the persister (broker/sharestate's doc), LatestOffset from the
//     partition leaders (ListOffsets latest), MemberLeft =
//     sharepartition.Manager's sessions RemoveMember + ReleaseSession.
//  2. groups.go applyImage: for each __consumer_offsets partition led,
//     BecomeLeader on both coordinators with the same records (read the
//     partition once and feed both, or read it twice), Resign on both when
//     leadership goes. Likewise the __share_group_state partitions for
//     sharestate, and LeadershipLost on the sharepartition.Manager for
//     every partition this broker stops leading.
//  3. api_10_find_coordinator.go: key type 2 (SHARE) answers the leader of
//     sharestate.PartitionFor for the "group:topicId:partition" key
//     (creating __share_group_state from sharestate.Options.StateTopic on
//     first use); share groups themselves use key type 0 (GROUP).
//  4. New API files, one each, versions in the dispatch table and
//     ApiVersions: api_76_share_group_heartbeat.go (v0-v1, Later on the
//     writer as api_68), api_77_share_group_describe.go (v0-v1),
//     api_78_share_fetch.go (v0-v2) and api_79_share_acknowledge.go (v0-v2)
//     per broker/sharepartition's doc, api_83 .. api_87 (the state APIs,
//     sharestate), api_90_describe_share_group_offsets.go (v0-v1),
//     api_91_alter_share_group_offsets.go (v0),
//     api_92_delete_share_group_offsets.go (v0). Routing: 76, 77, 90-92 go
//     to the group coordinator (NOT_COORDINATOR elsewhere), 78-79 to the
//     partition leaders, 83-87 to the share coordinator.
//  5. api_16_list_groups.go: append ListGroups(states, types) to
//     broker/group's answer (max of the codes); api_15_describe_groups.go:
//     DescribeGroup for share group ids; api_42_delete_groups.go:
//     DeleteGroup first, broker/group for the rest; api_69
//     ConsumerGroupDescribe of a share group id: GROUP_ID_NOT_FOUND.
//  6. GROUP configs (api_32, api_44): shareconfig.Validate on the merged
//     share.* values (INVALID_CONFIG with its message), shareconfig.Describe
//     for DescribeConfigs (source GROUP_CONFIG when set, else
//     DEFAULT_CONFIG), stored with the other group configs in the
//     controller's metadata.
//  7. Metrics: per share group members (ShareGroupDescribe), per
//     share-partition the sharepartition.Stats counters and lag,
//     sessions, sharestate.Stats.
package share
