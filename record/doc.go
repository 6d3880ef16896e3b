// Package record owns Kafka's record batch format (magic v2): the batch
// header view and its in-place setters, the framing of a byte stream into
// whole batches, CRC-32C, the validation of a producer's batch, records and
// their encoding, compression, and control records (transaction markers).
// It is a leaf: it knows nothing of logs, requests or replication.
//
// # Record batch v2, big-endian
//
//	offset size field
//	     0    8 baseOffset            set by the leader (SetBaseOffset; not in CRC)
//	     8    4 batchLength           bytes after this field (size = batchLength+12)
//	    12    4 partitionLeaderEpoch  set by the leader (not in CRC)
//	    16    1 magic                 must be 2
//	    17    4 crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21    2 attributes            bits 0-2 compression (0 none, 1 gzip,
//	                                  2 snappy, 3 lz4, 4 zstd), bit 3 timestamp
//	                                  type (1 = LogAppendTime), bit 4
//	                                  transactional, bit 5 control, bit 6
//	                                  delete horizon (set by the cleaner)
//	    23    4 lastOffsetDelta
//	    27    8 baseTimestamp         with bit 6: the delete horizon (ms)
//	    35    8 maxTimestamp          LogAppendTime: the broker's time, and the
//	                                  timestamp of every record
//	    43    8 producerId            -1 if not idempotent
//	    51    2 producerEpoch
//	    53    4 baseSequence          -1 without a sequence; the last record's
//	                                  is baseSequence+lastOffsetDelta, wrapping
//	                                  past MaxInt32 to 0
//	    57    4 recordCount
//	    61    - records               recordCount records, compressed as a
//	                                  whole with the attributes' codec (snappy:
//	                                  raw blocks, or the Java client's xerial
//	                                  framing)
//
// # Record (inside the records section)
//
//	varint    length             bytes of the record after this field
//	int8      attributes         unused
//	varlong   timestampDelta     timestamp - baseTimestamp
//	varint    offsetDelta        offset - baseOffset, in [0, lastOffsetDelta]
//	varint    keyLength          -1: null key
//	bytes     key
//	varint    valueLength        -1: null value (a tombstone)
//	bytes     value
//	varint    headerCount
//	headers   headerCount x (varint keyLength, key (never null),
//	                         varint valueLength (-1: null), value)
//
// Varints are zigzag-encoded (Go's binary.AppendVarint).
//
// # Control records (attributes bit 5; one record per batch)
//
//	key    int16 version (0), int16 type (0 ABORT, 1 COMMIT; Kafka's
//	       KRaft types 2-6 read as ControlUnknown)
//	value  of ABORT and COMMIT (EndTxnMarker): int16 version (0),
//	       int32 coordinatorEpoch
//
// Transaction markers are written in transactional control batches without
// a sequence (NewEndTxnMarkerBatch). Readers accept newer key and value
// versions by reading the version 0 fields, and refuse negative ones, as
// Kafka does.
//
// # Contract
//
//   - Nothing here copies or re-encodes a batch it did not build: headers,
//     iterators and Batch values alias the caller's bytes, and the setters
//     write into them. baseOffset and partitionLeaderEpoch lie outside the
//     CRC; the other setters recompute it.
//   - A Batch is validated (ParseProduce) or built here (NewBatch,
//     EmptyBatch, NewEndTxnMarkerBatch), and carries its parsed header: the
//     layers below the validation use Header and the setters and never parse
//     the bytes again. The header is parsed once per batch on the produce
//     path; a test under the recordcount build tag counts it.
//   - Framing (Frame, Batches, VerifiedBatches, WholeBatches) checks the
//     structure every later step relies on: the length within the buffer,
//     magic 2, lastOffsetDelta not negative; VerifiedBatches and Validate
//     check the CRC too. Records are decoded only on request (Records,
//     Batch.Records), strictly as Kafka does.
//   - Decompression is bounded (256 MiB per batch). Every error of parsing,
//     framing, validation and decoding wraps one of the sentinels
//     (errors.go); Decompress and Compressor.Compress return the codec's own
//     errors, which the record iterator wraps in ErrCorruptBatch. Nothing
//     panics on any input (see the fuzz targets and their corpora in
//     testdata/fuzz).
//   - Everything is safe for concurrent use on distinct buffers, except a
//     Compressor, which belongs to one goroutine.
package record
