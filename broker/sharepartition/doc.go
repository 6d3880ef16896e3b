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
// # Wiring into the broker
//
//   - broker/shares.go: one Manager per broker (the StateStore is the
//     persister in share_persister.go, OnAvailable wakes the share fetch
//     waiters in share_wake.go); applyImage calls LeadershipLost for every
//     partition the broker stops leading, the connection close hook calls
//     ConnectionClosed.
//   - api_78_share_fetch.go with share_fetch.go: the session
//     (SessionCache.NewFetchContext), acknowledgements first
//     (share_ack.go: StartAcknowledge makes their transitions; their
//     write goes on while the fetch acquires, and the response waits for
//     it), then for each session partition this broker leads
//     (else NOT_LEADER_OR_FOLLOWER with CurrentLeader and NodeEndpoints)
//     the log read from NextFetchOffset (share_log.go; read_committed
//     reads up to the LSO with the aborted transactions) and Acquire with
//     the request's MaxRecords budget, the start partition rotated by
//     session epoch. With nothing acquired it long-polls up to
//     MaxWaitMillis, woken by appends, high watermark moves and
//     OnAvailable; when every partition's window is full of the member's
//     own acquired records (WaitsOn) it returns within a few milliseconds
//     instead, since only that member's acknowledgements can free them and
//     prefetching clients send those on the next fetch.
//   - api_79_share_acknowledge.go: SessionCache.AcknowledgeContext, then
//     Acknowledge per partition, then ReleaseSession when final.
//   - metrics: Manager.Stats per share-partition and SessionCache.Len
//     (broker/metrics_share.go).
package sharepartition
