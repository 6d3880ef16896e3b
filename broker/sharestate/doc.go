// Package sharestate is kbroker's share coordinator (KIP-932), as Apache
// Kafka 4.2's ShareCoordinatorService and ShareCoordinatorShard: the
// durable state of every share-partition (group, topic id, partition) -
// its share-partition start offset (SPSO), state epoch, leader epoch and
// the delivery state of its in-flight records - kept in the internal topic
// __share_group_state and served through the five state APIs the
// share-partition leaders and the group coordinator call:
//
//	key 83 InitializeShareGroupState  v0    group coordinator: a new state epoch and start offset
//	key 84 ReadShareGroupState        v0    share-partition leader on load (records its leader epoch)
//	key 85 WriteShareGroupState       v0-1  share-partition leader after acknowledgements
//	key 86 DeleteShareGroupState      v0    group coordinator: DeleteShareGroupOffsets, DeleteGroups
//	key 87 ReadShareGroupStateSummary v0-1  group coordinator: DescribeShareGroupOffsets
//
// # Model
//
// The coordinator of a key is the leader of its __share_group_state
// partition (PartitionFor: abs(javaHashCode("group:topicId:partition")) %
// share.coordinator.state.topic.num.partitions, the topic id in Kafka's
// base64 form). The broker tells the Coordinator which partitions it leads
// (BecomeLeader with the partition's records; Resign). Every state change
// is written to the partition through a StateLog (acks=all) before it
// takes effect; a new leader rebuilds the state by replaying the partition
// from its log start. There is no network, storage or replication code
// here.
//
// Each led partition has one goroutine (shard.loop) that owns its keys and
// runs the requests one batch at a time: the requests queued when a batch
// starts are decided in order against the state the earlier ones leave
// (decide.go, pure functions), their records are appended as one batch
// (group commit), and only then is memory changed and everybody answered.
// A failed append answers every request of the batch that touched a
// written key with the mapped error (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE) and leaves the state as it was.
//
//	request ──> shardFor(key) ──> shard.ops ──> decide(cur) ──> records ──> StateLog.Append
//	                 │                                                          │ ok
//	   NOT_COORDINATOR / LOAD_IN_PROGRESS                         apply (as replay does) ──> answer
//
// # Decisions (Kafka's ShareCoordinatorShard)
//
//	API         checks (in order)                               record written
//	Initialize  group, partition >= 0, topic/partition exist;    ShareSnapshot: snapshot epoch +1 (0 when new),
//	            recorded state epoch > request: FENCED_STATE_EPOCH  the state epoch and start offset, no batches,
//	                                                             delivery complete count 0 (-1 if start is -1)
//	Write       no state: INVALID_REQUEST (KAFKA-19338);          ShareSnapshot after UpdatesPerSnapshot
//	            leader epoch != -1 and recorded > request:       updates (merged state), else ShareUpdate
//	            FENCED_LEADER_EPOCH; state epoch likewise:        with the request's batches
//	            FENCED_STATE_EPOCH
//	Read        no state: INVALID_REQUEST (KAFKA-19338);          a record of the new leader epoch when the
//	            recorded leader epoch > request:                 reader's epoch is newer
//	            FENCED_LEADER_EPOCH
//	Delete      -                                                ShareSnapshot tombstone (none without state)
//	Summary     -                                                -
//
// A key has state only once the group coordinator initialized it (Kafka
// 4.1+): a share-partition leader may neither read nor write before, so
// that an initialization (a fresh start) never wipes acknowledgements
// written ahead of it.
//
// Batches merge as Kafka's PersisterStateBatchCombiner: offsets below the
// start offset drop, an overlap keeps the batch with the higher delivery
// count, then the higher state (a terminal state beats Available), and
// equal neighbours coalesce (combineBatches).
//
// # Records (__share_group_state)
//
// Kafka's formats, so Kafka's tools read the topic. Keys are not flexible;
// values are flexible version 0 (compact arrays, uvarint length + 1, and a
// tagged-field section closing every struct: uvarint count, then per field
// uvarint tag, uvarint size, bytes). Big endian.
//
//	key (both types):  | int16 type | int16 len | group | uuid topicId (16) | int32 partition |
//	                   type 0 ShareSnapshotKey, type 1 ShareUpdateKey; other types are skipped
//
//	ShareSnapshotValue v0:
//	  | int16 0 | int32 snapshotEpoch | int32 stateEpoch | int32 leaderEpoch | int64 startOffset |
//	  | int64 createTimestamp | int64 writeTimestamp | []StateBatch | tags{0: int32 deliveryCompleteCount} |
//	ShareUpdateValue v0:
//	  | int16 0 | int32 snapshotEpoch | int32 leaderEpoch | int64 startOffset | []StateBatch |
//	  | tags{0: int32 deliveryCompleteCount} |
//	StateBatch:
//	  | int64 firstOffset | int64 lastOffset | int8 deliveryState | int16 deliveryCount | tags |
//	  deliveryState: 0 Available, 2 Acknowledged, 4 Archived (Acquired is never persisted)
//
// A nil value on a snapshot key is a tombstone: the key's state is deleted.
// The delivery complete count (Kafka 4.2, KIP-1226) is written only when
// it is known (not -1).
//
// # Pruning
//
// The topic is created with cleanup.policy=delete and retention.ms=-1
// (StateTopic): compaction would keep only the last update of a key, and
// updates are deltas. Instead, every PruneInterval each partition deletes
// (StateLog.DeleteRecordsBefore) the records below the lowest offset of
// its keys' last snapshots; idle keys are snapshotted again first (cold
// snapshots) so that they do not hold the log (prune.go).
//
// # Wiring into the broker
//
//   - broker/shares.go: one Coordinator per broker; applyImage calls
//     BecomeLeader/Resign for the __share_group_state partitions it leads
//     or stops leading. The StateLog adapter appends with acks=all through
//     the partition's replication path; DeleteRecordsBefore is the
//     DeleteRecords path.
//   - The topic is created from Options.StateTopic on first use
//     (FindCoordinator key type 2, or the first state request).
//   - FindCoordinator v6 with KeyType 2: the key is "group:topicId:partition"
//     and the answer is the leader of PartitionFor.
//   - api_83 .. api_87 call the handlers of this package; keys this broker
//     does not lead get NOT_COORDINATOR per partition.
//   - The persister (broker/share_persister.go) used by the share-partition
//     leaders and the group coordinator calls this package directly for
//     local keys and sends requests 83-87 to the other brokers, retrying
//     NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
//     COORDINATOR_LOAD_IN_PROGRESS after a new lookup.
package sharestate
