// Package atomicfile replaces small files (checkpoints, meta.properties,
// bootstrap credentials, certificates) so that a crash or a concurrent
// reader sees either the old content or the new, never half of it, and so
// that the new content is durable when WriteFile returns: write path.tmp,
// fsync it, rename it over path, fsync the directory. The one copy of that
// sequence: storage, the controller and kbroker's commands all use it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, created with perm. On failure path
// is untouched and the temporary file is removed; a crash may leave a
// stray path.tmp, which the next WriteFile truncates. Errors wrap the
// system's (errors.Is finds ENOSPC and the like).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, so that creations, renames and deletions in
// it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s for sync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
