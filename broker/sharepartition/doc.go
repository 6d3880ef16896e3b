// Package sharepartition is the partition-leader side of share groups
// (KIP-932), as Apache Kafka 4.2's SharePartition and
// SharePartitionManager: for each (share group, topic-partition) this
// broker leads, the in-flight records with their delivery state, delivery
// count and acquisition lock, the acquisition of records for ShareFetch,
// the acknowledgements of ShareFetch and ShareAcknowledge, the share
// sessions, and the writes of the durable state to the share coordinator
// (broker/sharestate).
//
// # The window
//
//	          SPSO                                           SPEO
//	offsets:   │ 10  11  12  13  14  15  16  17  18  19  20  21 │ 22 ...
//	state:     │ Acq Ack Avl Acq Arc Ack Acq Acq Avl Avl Acq Acq│ (never fetched)
//	           └── in-flight window (≤ share.partition.max.record.locks) ──┘
//
// The share-partition start offset (SPSO) is the first record not yet
// done with; every offset before it is acknowledged or archived. The end
// offset (SPEO) is the last record ever acquired. When the record at the
// SPSO becomes terminal the SPSO moves past every terminal record
// (window.advance). The record states and their transitions are in
// state.go (RecordState); the partition's own lifecycle (Empty,
// Initializing, Active, Failed, Fenced) too.
//
// # Acquire (ShareFetch)
//
// The broker reads the log from NextFetchOffset (the first Available
// record, or SPEO+1) and passes the batch headers; Acquire takes the
// Available records among them, and new records past the SPEO while the
// window is smaller than share.partition.max.record.locks, below the high
// watermark (the last stable offset for share.isolation.level
// read_committed), up to MaxRecords (whole batches in BATCH_OPTIMIZED mode,
// KIP-1206). Each gets delivery count + 1 and a lock until now +
// share.record.lock.duration.ms. Offsets the log does not have (compacted
// away) enter the window archived; records of aborted transactions are
// archived and never handed out (read_committed); a record whose count
// reached share.delivery.count.limit is archived instead of acquired.
//
// # Acknowledge (ShareFetch piggy-backed, ShareAcknowledge)
//
//	type      0 GAP    1 ACCEPT       2 RELEASE                        3 REJECT  4 RENEW (v2, IsRenewAck)
//	new state Archived Acknowledged   Available (Archived at the limit) Archived  Acquired, lock extended
//
// A partition's batches are validated as a whole (ValidateAckBatches:
// INVALID_REQUEST for malformed ones; planAcks: INVALID_RECORD_STATE for a
// record not Acquired by the member or below the SPSO, INVALID_REQUEST past
// the SPEO) and any error leaves the partition unchanged. The transitions
// then wait, pending, for their WriteShareGroupState; the acknowledgement
// answers once it is written, and a failed write rolls it back (the member
// still holds the records). Lock timeouts and session releases go the same
// way. One write is in flight per partition and carries everything queued
// meanwhile (persist.go), so the share coordinator sees the SPSO only move
// forward. Acquisitions are not written, as in Kafka: after a failover a
// record that was acquired but never acknowledged is Available with its
// last written delivery count.
//
// A write answered FENCED_STATE_EPOCH or FENCED_LEADER_EPOCH fences the
// partition (a newer leader or a reset of the group's state owns it); the
// Manager replaces fenced and failed partitions on the next request, which
// reads the state again.
//
// # Share sessions
//
// See session.go: epochs 0 (open), n (the session's), -1 (close);
// SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH,
// SHARE_SESSION_LIMIT_REACHED (group.share.max.share.sessions) and
// INVALID_REQUEST exactly as Kafka's SharePartitionManager. Closing a
// session (epoch -1, the connection closing, the member leaving) releases
// the member's records on the session's partitions.
//
// # Wiring into the broker (the next step)
//
//   - broker/: one Manager per broker (NewManager with the StateStore,
//     the group configs from shareconfig.Effective, OnAvailable waking the
//     share-fetch wait queue, and group.share.max.share.sessions). The
//     replica layer's leadership changes call Manager.LeadershipLost; the
//     connection layer's close calls Manager.ConnectionClosed.
//   - api_78_share_fetch.go (v0-v2): validate group id and member id (non
//     empty, at most 36 characters: INVALID_REQUEST); the session
//     (SessionCache.NewFetchContext with Add = Topics, Forget =
//     ForgottenTopicsData, HasAcks, HasFetchData = a partition without
//     acknowledgements); for each partition with acknowledgement batches,
//     Manager.Existing + Acknowledge (allowRenew = v2 IsRenewAck) into
//     AcknowledgeErrorCode; with IsRenewAck all fetch fields must be zero
//     (INVALID_REQUEST) and nothing is fetched. Then for each session
//     partition this broker leads (else NOT_LEADER_OR_FOLLOWER with
//     CurrentLeader and NodeEndpoints), Manager.Partition(leader epoch),
//     read the log from NextFetchOffset (PartitionMaxBytes, the request's
//     MaxBytes; read_committed: up to the LSO with the aborted
//     transactions), Acquire with the request's MaxRecords budget (rotating
//     the start partition by session epoch for fairness), and return the
//     raw batches overlapping the acquired ranges with AcquiredRecords and
//     AcquisitionLockTimeoutMillis (v1+, the lock duration). With nothing
//     acquired it long-polls up to MaxWaitMillis on CanAcquire, woken by
//     appends, high watermark moves and OnAvailable. Incremental responses
//     list what SessionCache.Respond says; a final fetch (epoch -1)
//     releases the member's records (Manager.ReleaseSession) after its
//     acknowledgements.
//   - api_79_share_acknowledge.go (v0-v2): SessionCache.AcknowledgeContext,
//     then Acknowledge per partition (errors per partition, NOT_LEADER with
//     CurrentLeader), then ReleaseSession when final.
//   - StateStore: the persister of broker/sharestate's doc (routes by
//     sharestate.PartitionFor; local keys call the Coordinator directly).
//   - metrics: Manager.Stats per share-partition (acquired, accepted,
//     released, archived, lock timeouts, lag) and SessionCache.Len.
package sharepartition
