package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Op names a file system call, for fault injection and cut points.
type Op int

// The calls CrashFS counts and lets an Injector fail.
const (
	OpOpen     Op = iota // OpenFile of an existing file
	OpCreate             // OpenFile that creates the file
	OpRead               // ReadAt, ReadDir, Stat
	OpWrite              // Write, WriteAt
	OpSync               // File.Sync (fsync)
	OpMsync              // FS.Msync
	OpSyncDir            // FS.SyncDir
	OpAllocate           // File.Allocate (fallocate)
	OpTruncate           // File.Truncate, FS.Truncate
	OpRename             // FS.Rename
	OpRemove             // FS.Remove, FS.RemoveAll
	OpMkdir              // FS.MkdirAll
	OpMmap               // File.Mmap
	OpChtimes            // FS.Chtimes
	OpSyncFS             // FS.SyncFS
)

var opNames = [...]string{"open", "create", "read", "write", "sync", "msync", "syncdir", "allocate",
	"truncate", "rename", "remove", "mkdir", "mmap", "chtimes", "syncfs"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// IsSync reports the calls that make data durable.
func (o Op) IsSync() bool { return o == OpSync || o == OpMsync || o == OpSyncDir || o == OpSyncFS }

// Injector decides whether a call fails: it returns the error to inject
// (syscall.EIO, syscall.ENOSPC, ...) or nil. path is the file or directory.
type Injector func(op Op, path string) error

// ErrPowerCut is wrapped by every call after the power was cut.
var ErrPowerCut = errors.New("vfs: power cut")

// entry is a name in a directory: a file or directory identity.
type entry struct {
	id  int
	dir bool
}

// Image is what a power cut left on disk: every directory and file (with
// its content) reachable from the root through synced directory entries.
// Paths are relative to the root.
type Image struct {
	Dirs  []string
	Files map[string][]byte
}

// CrashFS wraps the operating system's file system under root and models
// what survives a power cut (see the package doc). Paths outside root are
// passed through untracked. Safe for concurrent use.
type CrashFS struct {
	inner FS
	root  string

	mu sync.Mutex // guards the following
	// cur is the namespace now: path -> identity; curPath the reverse for
	// files.
	cur     map[string]entry
	curPath map[int]string
	// durable is the namespace on disk: directory id -> its entries as of
	// its last sync.
	durable map[int]map[string]entry
	// images is each file's content on disk.
	images map[int][]byte
	// lost marks files whose writeback failed: Linux drops the dirty pages
	// (and their error) after a failed fsync, so a later fsync succeeds
	// without writing them. Later syncs of such a file persist nothing.
	lost   map[int]bool
	nextID int
	inject Injector
	ops    int64
	cutAt  int64
	rng    *rand.Rand
	image  *Image // set at the cut
}

// NewCrashFS tracks root (an existing directory); what it holds now counts
// as on disk.
func NewCrashFS(root string) (*CrashFS, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := &CrashFS{inner: Default, root: root}
	if err := c.reset(); err != nil {
		return nil, err
	}
	return c, nil
}

// Root is the tracked directory.
func (c *CrashFS) Root() string { return c.root }

// reset makes the real tree under root the durable and current state.
func (c *CrashFS) reset() error {
	c.cur = map[string]entry{c.root: {id: 0, dir: true}}
	c.curPath = map[int]string{}
	c.durable = map[int]map[string]entry{0: {}}
	c.images = map[int][]byte{}
	c.lost = map[int]bool{}
	c.nextID = 1
	c.image = nil
	return filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == c.root {
			return err
		}
		e := entry{id: c.nextID, dir: d.IsDir()}
		c.nextID++
		c.cur[p] = e
		parent := c.cur[filepath.Dir(p)].id
		c.durable[parent][filepath.Base(p)] = e
		if e.dir {
			c.durable[e.id] = map[string]entry{}
			return nil
		}
		c.curPath[e.id] = p
		b, err := os.ReadFile(p)
		c.images[e.id] = b
		return err
	})
}

// SetInjector installs (or, with nil, removes) fault injection.
func (c *CrashFS) SetInjector(inj Injector) {
	c.mu.Lock()
	c.inject = inj
	c.mu.Unlock()
}

// CutAfter cuts the power at the n-th counted call from now (n >= 1): that
// call and all later ones fail. rng, if not nil, makes the cut keep a
// random part of the unsynced writes.
func (c *CrashFS) CutAfter(n int64, rng *rand.Rand) {
	c.mu.Lock()
	c.cutAt, c.rng = c.ops+n, rng
	c.mu.Unlock()
}

// Ops is the number of counted calls so far.
func (c *CrashFS) Ops() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ops
}

// Cut cuts the power now (if not already) and returns what the disk holds.
// Every later call fails with an error wrapping ErrPowerCut and EIO.
func (c *CrashFS) Cut(rng *rand.Rand) *Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.image == nil {
		c.rng = rng
		c.cutLocked()
	}
	return c.image
}

// IsCut reports whether the power was cut.
func (c *CrashFS) IsCut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.image != nil
}

// Restore replaces the real tree under root with img (the machine boots
// again) and tracks it as durable. Callers must have stopped using the
// files of before (closed, unmapped).
func (c *CrashFS) Restore(img *Image) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	des, err := os.ReadDir(c.root)
	if err != nil {
		return err
	}
	for _, d := range des {
		if err := os.RemoveAll(filepath.Join(c.root, d.Name())); err != nil {
			return err
		}
	}
	for _, d := range img.Dirs {
		if err := os.MkdirAll(filepath.Join(c.root, d), 0o755); err != nil {
			return err
		}
	}
	for p, b := range img.Files {
		if err := os.WriteFile(filepath.Join(c.root, p), b, 0o644); err != nil {
			return err
		}
	}
	c.ops, c.cutAt, c.inject = 0, 0, nil
	return c.reset()
}

// cutLocked builds the image: the durable tree, with (given an rng) some
// of the unsynced data of each file written back. Must be called with mu
// held.
func (c *CrashFS) cutLocked() {
	img := &Image{Files: map[string][]byte{}}
	var walk func(id int, rel string)
	walk = func(id int, rel string) {
		names := make([]string, 0, len(c.durable[id]))
		for name := range c.durable[id] {
			names = append(names, name)
		}
		sort.Strings(names) // the rng is drawn in a fixed order: seeds replay
		for _, name := range names {
			e := c.durable[id][name]
			p := filepath.Join(rel, name)
			if e.dir {
				img.Dirs = append(img.Dirs, p)
				walk(e.id, p)
				continue
			}
			img.Files[p] = c.fileOnDiskLocked(e.id)
		}
	}
	walk(0, "")
	sort.Strings(img.Dirs)
	c.image = img
}

// writebackUnit is the granularity of random writeback: a sector.
const writebackUnit = 512

// fileOnDiskLocked is file id's durable content, plus, with an rng, a
// random choice of the sectors written since and a random size between
// the durable and the current one. Must be called with mu held.
func (c *CrashFS) fileOnDiskLocked(id int) []byte {
	d := c.images[id]
	p, ok := c.curPath[id]
	if c.rng == nil || !ok || c.lost[id] || c.rng.IntN(3) == 0 {
		return append([]byte(nil), d...)
	}
	cur, err := os.ReadFile(p)
	if err != nil {
		return append([]byte(nil), d...)
	}
	lo, hi := min(len(d), len(cur)), max(len(d), len(cur))
	size := len(d)
	if hi > lo && c.rng.IntN(2) == 0 {
		size = lo + c.rng.IntN(hi-lo+1)
	}
	out := make([]byte, size)
	copy(out, d)
	for off := 0; off < size && off < len(cur); off += writebackUnit {
		end := min(off+writebackUnit, size, len(cur))
		if c.rng.IntN(2) == 0 {
			copy(out[off:end], cur[off:end])
		}
	}
	return out
}

// tracked reports whether p is under root.
func (c *CrashFS) tracked(p string) bool {
	return p == c.root || strings.HasPrefix(p, c.root+string(filepath.Separator))
}

// check counts a call on path and returns the error to fail it with, if
// any: after a cut, at the cut point, or from the injector.
func (c *CrashFS) check(op Op, path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkLocked(op, path)
}

func (c *CrashFS) checkLocked(op Op, path string) error {
	if c.image != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: fmt.Errorf("%w: %w", ErrPowerCut, syscall.EIO)}
	}
	c.ops++
	if c.cutAt > 0 && c.ops >= c.cutAt {
		c.cutLocked()
		return &os.PathError{Op: op.String(), Path: path, Err: fmt.Errorf("%w: %w", ErrPowerCut, syscall.EIO)}
	}
	if c.inject != nil {
		if err := c.inject(op, path); err != nil {
			if op.IsSync() {
				if e, ok := c.cur[path]; ok && !e.dir {
					c.lost[e.id] = true
				}
			}
			return &os.PathError{Op: op.String(), Path: path, Err: err}
		}
	}
	return nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// OpenFile opens name; a file it creates is on disk only once its
// directory is synced.
func (c *CrashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = abs(name)
	if !c.tracked(name) {
		return c.inner.OpenFile(name, flag, perm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, exists := c.cur[name]
	op := OpOpen
	if !exists && flag&os.O_CREATE != 0 {
		op = OpCreate
	}
	if err := c.checkLocked(op, name); err != nil {
		return nil, err
	}
	f, err := c.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !exists {
		e = entry{id: c.nextID}
		c.nextID++
		c.cur[name], c.curPath[e.id] = e, name
	}
	return &crashFile{File: f, fs: c, id: e.id, name: name}, nil
}

// Remove removes a file or an empty directory (on disk at the next sync of
// its directory).
func (c *CrashFS) Remove(name string) error {
	name = abs(name)
	if !c.tracked(name) {
		return c.inner.Remove(name)
	}
	if err := c.check(OpRemove, name); err != nil {
		return err
	}
	if err := c.inner.Remove(name); err != nil {
		return err
	}
	c.mu.Lock()
	c.forgetLocked(name)
	c.mu.Unlock()
	return nil
}

// RemoveAll removes path and everything under it.
func (c *CrashFS) RemoveAll(path string) error {
	path = abs(path)
	if !c.tracked(path) {
		return c.inner.RemoveAll(path)
	}
	if err := c.check(OpRemove, path); err != nil {
		return err
	}
	if err := c.inner.RemoveAll(path); err != nil {
		return err
	}
	c.mu.Lock()
	for p := range c.cur {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			c.forgetLocked(p)
		}
	}
	c.mu.Unlock()
	return nil
}

func (c *CrashFS) forgetLocked(p string) {
	if e, ok := c.cur[p]; ok {
		delete(c.cur, p)
		if !e.dir {
			delete(c.curPath, e.id)
		}
	}
}

// Rename renames a file or directory (on disk at the next sync of the
// directories involved).
func (c *CrashFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = abs(oldpath), abs(newpath)
	if !c.tracked(oldpath) || !c.tracked(newpath) {
		return c.inner.Rename(oldpath, newpath)
	}
	if err := c.check(OpRename, oldpath); err != nil {
		return err
	}
	if err := c.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(newpath)
	moved := map[string]entry{}
	for p, e := range c.cur {
		if p == oldpath || strings.HasPrefix(p, oldpath+string(filepath.Separator)) {
			moved[newpath+strings.TrimPrefix(p, oldpath)] = e
			delete(c.cur, p)
		}
	}
	for p, e := range moved {
		c.cur[p] = e
		if !e.dir {
			c.curPath[e.id] = p
		}
	}
	return nil
}

// MkdirAll creates directories (each on disk at the next sync of its
// parent).
func (c *CrashFS) MkdirAll(path string, perm os.FileMode) error {
	path = abs(path)
	if !c.tracked(path) {
		return c.inner.MkdirAll(path, perm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.cur[path]; ok && e.dir {
		return nil
	}
	if err := c.checkLocked(OpMkdir, path); err != nil {
		return err
	}
	if err := c.inner.MkdirAll(path, perm); err != nil {
		return err
	}
	for p := path; c.tracked(p); p = filepath.Dir(p) {
		if _, ok := c.cur[p]; ok {
			break
		}
		e := entry{id: c.nextID, dir: true}
		c.nextID++
		c.cur[p] = e
		c.durable[e.id] = map[string]entry{}
	}
	return nil
}

// ReadDir lists a directory.
func (c *CrashFS) ReadDir(name string) ([]os.DirEntry, error) {
	name = abs(name)
	if c.tracked(name) {
		if err := c.check(OpRead, name); err != nil {
			return nil, err
		}
	}
	return c.inner.ReadDir(name)
}

// Stat stats a file.
func (c *CrashFS) Stat(name string) (os.FileInfo, error) {
	name = abs(name)
	if c.tracked(name) {
		if err := c.check(OpRead, name); err != nil {
			return nil, err
		}
	}
	return c.inner.Stat(name)
}

// Truncate sets a file's size (on disk at its next sync).
func (c *CrashFS) Truncate(name string, size int64) error {
	name = abs(name)
	if c.tracked(name) {
		if err := c.check(OpTruncate, name); err != nil {
			return err
		}
	}
	return c.inner.Truncate(name, size)
}

// Chtimes sets a file's times (not modelled on disk).
func (c *CrashFS) Chtimes(name string, atime, mtime time.Time) error {
	name = abs(name)
	if c.tracked(name) {
		if err := c.check(OpChtimes, name); err != nil {
			return err
		}
	}
	return c.inner.Chtimes(name, atime, mtime)
}

// SyncDir makes dir's current entries its entries on disk.
func (c *CrashFS) SyncDir(dir string) error {
	dir = abs(dir)
	if !c.tracked(dir) {
		return c.inner.SyncDir(dir)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLocked(OpSyncDir, dir); err != nil {
		return err
	}
	// No real fsync: durability is what the model says (and real
	// fsyncs would make thousands of sequences take minutes).
	d, ok := c.cur[dir]
	if !ok || !d.dir {
		return &os.PathError{Op: "syncdir", Path: dir, Err: fs.ErrNotExist}
	}
	entries := map[string]entry{}
	for p, e := range c.cur {
		if p != dir && filepath.Dir(p) == dir {
			entries[filepath.Base(p)] = e
		}
	}
	c.durable[d.id] = entries
	return nil
}

// SyncFS is syncfs(2): every file and directory entry under dir is on
// disk (the model knows only the tracked tree; under dir is all it can
// promise). A file whose writeback failed earlier stays lost, as with
// fsync.
func (c *CrashFS) SyncFS(dir string) error {
	dir = abs(dir)
	if !c.tracked(dir) {
		return c.inner.SyncFS(dir)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLocked(OpSyncFS, dir); err != nil {
		return err
	}
	if d, ok := c.cur[dir]; !ok || !d.dir {
		return &os.PathError{Op: "syncfs", Path: dir, Err: fs.ErrNotExist}
	}
	entries := map[int]map[string]entry{}
	for p, e := range c.cur {
		if p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		if e.dir && entries[e.id] == nil {
			entries[e.id] = map[string]entry{}
		}
		if p != dir {
			parent := c.cur[filepath.Dir(p)].id
			if entries[parent] == nil {
				entries[parent] = map[string]entry{}
			}
			entries[parent][filepath.Base(p)] = e
		}
		if !e.dir && !c.lost[e.id] {
			if err := c.captureLocked(e.id, 0, -1); err != nil {
				return err
			}
		}
	}
	for id, es := range entries {
		c.durable[id] = es
	}
	return nil
}

// Msync writes back b[from:to] of a mapping of name; that range and the
// file's size are then on disk.
func (c *CrashFS) Msync(name string, b []byte, from, to int64) error {
	name = abs(name)
	if !c.tracked(name) {
		return c.inner.Msync(name, b, from, to)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLocked(OpMsync, name); err != nil {
		return err
	}
	e, ok := c.cur[name] // no real msync: see SyncDir
	if !ok || e.dir || c.lost[e.id] {
		return nil
	}
	return c.captureLocked(e.id, from/PageSize*PageSize, to)
}

// captureLocked copies [from, to) of file id (to < 0: all of it) and its
// size from the real file into its disk image. Must be called with mu held.
func (c *CrashFS) captureLocked(id int, from, to int64) error {
	p, ok := c.curPath[id]
	if !ok {
		return nil // removed while open: no name reaches it any more
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if to < 0 {
		from, to = 0, size
	}
	to = min(to, size)
	img := c.images[id]
	if int64(len(img)) > size {
		img = img[:size]
	} else if int64(len(img)) < size {
		img = append(img, make([]byte, size-int64(len(img)))...)
	}
	if to > from {
		if _, err := f.ReadAt(img[from:to], from); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	c.images[id] = img
	return nil
}

// crashFile is a file of a CrashFS.
type crashFile struct {
	File
	fs   *CrashFS
	id   int
	name string
}

func (f *crashFile) ReadAt(b []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(b, off)
}

func (f *crashFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(b, off)
}

func (f *crashFile) Write(b []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.Write(b)
}

func (f *crashFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *crashFile) Allocate(offset, length int64) error {
	if err := f.fs.check(OpAllocate, f.name); err != nil {
		return err
	}
	return f.File.Allocate(offset, length)
}

func (f *crashFile) Mmap(length int64, writable bool) ([]byte, error) {
	if err := f.fs.check(OpMmap, f.name); err != nil {
		return nil, err
	}
	return f.File.Mmap(length, writable)
}

// Sync is fsync: the whole file and its size are on disk.
func (f *crashFile) Sync() error {
	c := f.fs
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkLocked(OpSync, f.name); err != nil {
		if !errors.Is(err, ErrPowerCut) {
			c.lost[f.id] = true
		}
		return err
	}
	if c.lost[f.id] { // no real fsync: see SyncDir
		return nil
	}
	return c.captureLocked(f.id, 0, -1)
}
