// Package vfs is the seam through which package storage reaches every file
// of a log dir: opening, writing, syncing, mapping, renaming and removing.
// Default is the operating system. CrashFS (crash.go) wraps it for tests:
// it keeps, beside the real files, the image of what a power cut would
// leave on disk, and injects I/O errors by predicate (Pebble's vfs.MemFS
// CrashClone and errorfs, adapted to a store that maps its files).
//
// # Why the crash model wraps real files
//
// Storage writes segment and index data through MAP_SHARED mappings as
// well as with write(2). A purely in-memory file system would have to
// emulate mappings; instead CrashFS lets the kernel keep the page cache
// (real files, real mappings, so the bytes a mapping holds are the bytes a
// pread returns) and models only durability. Every path to durability goes
// through this package: File.Sync (fsync), FS.Msync (msync of a range of a
// mapping, named by its file), FS.SyncDir (the directory's entries) and
// FS.SyncFS (syncfs(2): every file and directory under a dir, as far as the
// model knows the file system; a clean shutdown's one sync per log dir). At
// each of them CrashFS copies what the call made durable from the real
// file into its disk image: the whole file for fsync, the synced range and
// the file size for msync (Linux's msync(MS_SYNC) is fdatasync of the
// range, which persists the size needed to read it), the directory's
// current entries for a directory sync. So a byte written through a
// mapping is durable exactly when the storage code synced its range, as on
// a real disk, and a file created, renamed or removed is so on disk only
// after its directory was synced.
//
// A power cut (CrashFS.Cut) takes a copy of the image and turns every later
// call into EIO; Restore writes the copy back over the real directory. With
// a random source the cut also keeps a random part of what was written but
// not synced (whole 4 KiB pages, and a random file size between the synced
// and the current one), as the kernel may have written back any of it: this
// is what produces torn batches and holes for recovery to deal with.
package vfs
