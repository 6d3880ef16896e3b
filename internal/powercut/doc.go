// Package powercut turns the kill of a broker process into a power loss,
// for tests of real brokers (compat-tests, the chaos suite).
//
// # Why
//
// kill -9 loses a process but not the page cache: whatever the broker wrote
// is still read back after a restart, synced or not. A power loss (or a
// kernel crash) keeps only what reached the disk: what was fsynced or
// msynced, and directory entries whose directory was synced. KIP-966 (an
// ISR member that lost its unflushed tail must not lead) and durable acks
// (flush.messages=1: acknowledged means on disk on every ISR member) are
// about that difference, so their tests need it.
//
// # How: the broker's own fsync bookkeeping, replayed
//
// A broker started with KBTEST_POWERCUT_JOURNAL=<file> in its environment
// reaches its log dirs through a Recorder (a vfs.FS over the operating
// system's): every call that changes what is durable, or what a directory
// names, appends one line to the journal file before it returns: files
// created, opened for the first time (with their size then), truncated,
// renamed or removed, directories created, and every fsync, msync (the
// range and the file size) and directory sync. The journal is written with
// write(2), so it survives the kill (it is in the page cache like
// everything else; only the test reads it).
//
// After SIGKILL the test calls Apply with the journal: it replays it and
// rewrites each log dir to what the disk would hold after a power cut that
// wrote back nothing unsynced (the worst case):
//
//   - a file or directory created since the recorder started whose name
//     its directory never synced is deleted (with everything under it);
//   - a file's size is cut to the size its last fsync or msync saw (or to
//     its current size if that is smaller: the truncation may have been
//     written back), and every byte past what was synced contiguously
//     from its start is zeroed (never written back);
//   - files that existed when the recorder started and were never opened
//     are left as they are, and so are removals and renames (the disk may
//     have them already; their old content is gone from the page cache
//     anyway).
//
// Every state Apply produces is one a real disk could be in after a power
// cut: it only drops writes that were never synced. It assumes the files
// in the log dirs at start were on disk (a clean start, or an earlier
// Apply). The metadata log (the controller's raft.db and snapshots, not
// written through storage) is left as the kill left it: bbolt syncs every
// commit, so what the quorum acknowledged is on disk either way.
//
// # Failing disks
//
// KBTEST_FAIL_SYNC_IF=<file>: while that file exists, every fsync, msync
// and directory sync in the log dirs fails with EIO, as a failing disk's
// would (the broker must take the dir offline and halt).
//
// # Journal format
//
// One event a line, fields separated by a tab, paths absolute:
//
//	exist	<path>	<size>        first open of a file that was there at start
//	create	<path>                a new file
//	mkdir	<path>                a new directory
//	trunc	<path>	<size>        File.Truncate, FS.Truncate, open with O_TRUNC
//	sync	<path>	<size>        fsync: the file is on disk at that size
//	msync	<path>	<from>	<to>	<size>   msync of [from, to) and the size
//	syncdir	<path>                the directory's entries are on disk
//	rename	<old>	<new>	<1 if it replaced a file, else 0>
//	remove	<path>                Remove or RemoveAll
package powercut
