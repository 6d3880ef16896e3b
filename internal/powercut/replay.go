package powercut

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// node is one file or directory the journal named: its identity survives
// renames.
type node struct {
	dir bool
	// created: made after the recorder started; on disk only once its
	// directory was synced with it in (durable names, below).
	created bool
	// nameDurable: renamed over a name that was on disk (an atomic
	// replace): the name survives whether or not the rename did.
	nameDurable bool
	// synced is the file size as of its last fsync or msync; prefix the
	// length synced contiguously from its start (files only).
	synced, prefix int64
	// durable are a directory's entries as of its last sync (name ->
	// node); nil: never synced since the recorder started, so the entries
	// it had then are its durable ones.
	durable map[string]*node
}

// state is the journal replayed: what each current path is.
type state struct {
	paths map[string]*node
	// named are the paths the whole journal names: a directory entry it
	// never names was there at start and never touched.
	named map[string]bool
}

func (s *state) nodeFor(path string, dir bool) *node {
	n := s.paths[path]
	if n == nil {
		// Named first by a rename or removal: it was there at start and
		// never opened, so its content is what is on disk.
		n = &node{dir: dir, synced: -1, prefix: -1}
		s.paths[path] = n
	}
	return n
}

// Plan is what a power cut leaves of the recorded dirs: Apply carries it
// out.
type Plan struct {
	// Delete are paths to remove, with everything under them: created and
	// never made durable in their directory.
	Delete []string
	// Files are the files to cut to their synced state.
	Files map[string]Cut
}

// Cut is the on-disk state of one file: Size bytes, of which those from
// Keep on are zero (never written back).
type Cut struct {
	Size, Keep int64
}

// Replay reads a journal and returns what a power cut now would leave of
// the files it names (see the package doc).
func Replay(journal string) (*Plan, error) {
	f, err := os.Open(journal)
	if err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	defer f.Close()
	var events [][]string
	s := &state{paths: map[string]*node{}, named: map[string]bool{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ev := strings.Split(sc.Text(), "\t")
		events = append(events, ev)
		for i, field := range ev[1:] {
			if i < 2 && filepath.IsAbs(field) {
				s.named[field] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	for i, ev := range events {
		if err := s.apply(ev); err != nil {
			return nil, fmt.Errorf("powercut: %s:%d: %w", journal, i+1, err)
		}
	}
	return s.plan(), nil
}

func ints(fields []string) ([]int64, error) {
	out := make([]int64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// want checks an event's field count.
func want(ev []string, n int) error {
	if len(ev) != n {
		return fmt.Errorf("event %q: %d fields, want %d", ev[0], len(ev), n)
	}
	return nil
}

func (s *state) apply(ev []string) error {
	counts := map[string]int{"exist": 3, "create": 2, "mkdir": 2, "trunc": 3, "sync": 3, "msync": 5,
		"syncdir": 2, "rename": 4, "remove": 2}
	n, ok := counts[ev[0]]
	if !ok {
		return fmt.Errorf("unknown event %q", ev[0])
	}
	if err := want(ev, n); err != nil {
		return err
	}
	path := ev[1]
	var nums []int64
	if ev[0] != "rename" && len(ev) > 2 {
		var err error
		if nums, err = ints(ev[2:]); err != nil {
			return err
		}
	}
	switch ev[0] {
	case "exist":
		s.paths[path] = &node{synced: nums[0], prefix: nums[0]}
	case "create":
		s.paths[path] = &node{created: true}
	case "mkdir":
		s.paths[path] = &node{dir: true, created: true}
	case "trunc":
		nd := s.nodeFor(path, false)
		if nd.prefix >= 0 {
			nd.prefix = min(nd.prefix, nums[0])
		}
	case "sync":
		nd := s.nodeFor(path, false)
		nd.synced, nd.prefix = nums[0], nums[0]
	case "msync":
		nd := s.nodeFor(path, false)
		from, to, size := nums[0], nums[1], nums[2]
		nd.synced = size
		if nd.prefix >= 0 && from <= nd.prefix {
			nd.prefix = max(nd.prefix, min(to, size))
		}
	case "syncdir":
		s.syncDir(path)
	case "rename":
		s.rename(path, ev[2], ev[3] == "1")
	case "remove":
		for p := range s.paths {
			if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
				delete(s.paths, p)
			}
		}
	}
	return nil
}

// syncDir makes dir's current entries its durable ones.
func (s *state) syncDir(dir string) {
	d := s.nodeFor(dir, true)
	d.durable = map[string]*node{}
	for p, nd := range s.paths {
		if p != dir && filepath.Dir(p) == dir {
			d.durable[filepath.Base(p)] = nd
		}
	}
	// Entries the journal never names were there at start and are still
	// there (never removed or renamed through the recorder): durable too.
	if des, err := os.ReadDir(dir); err == nil {
		for _, de := range des {
			if !s.named[filepath.Join(dir, de.Name())] {
				d.durable[de.Name()] = nil
			}
		}
	}
}

func (s *state) rename(oldpath, newpath string, replaced bool) {
	// The name it takes was on disk if the file it replaced was.
	if target, ok := s.paths[newpath]; ok {
		replaced = s.durableIn(newpath, target)
	}
	for p := range s.paths {
		if p == newpath || strings.HasPrefix(p, newpath+string(filepath.Separator)) {
			delete(s.paths, p) // replaced
		}
	}
	moved := map[string]*node{}
	for p, nd := range s.paths {
		if p == oldpath || strings.HasPrefix(p, oldpath+string(filepath.Separator)) {
			moved[newpath+strings.TrimPrefix(p, oldpath)] = nd
			delete(s.paths, p)
		}
	}
	if len(moved) == 0 {
		// Never named before: there at start, never opened.
		moved[newpath] = &node{synced: -1, prefix: -1}
	}
	if nd := moved[newpath]; nd != nil && replaced {
		nd.nameDurable = true
	}
	for p, nd := range moved {
		s.paths[p] = nd
	}
}

// durableIn reports whether the entry path is on disk. One the recorder did
// not create was on disk at start: under this name or, if it was renamed,
// an older one (keeping it here is one of the states a disk may be in).
// One it created is on disk if its directory's last sync named it, whatever
// it pointed to then: a rename over a durable name may have been written
// back.
func (s *state) durableIn(path string, nd *node) bool {
	if !nd.created {
		return true
	}
	parent := s.paths[filepath.Dir(path)]
	if parent == nil || parent.durable == nil {
		return nd.nameDurable
	}
	_, ok := parent.durable[filepath.Base(path)]
	return ok
}

func (s *state) plan() *Plan {
	p := &Plan{Files: map[string]Cut{}}
	paths := make([]string, 0, len(s.paths))
	for path := range s.paths {
		paths = append(paths, path)
	}
	sort.Strings(paths) // parents first
	var deleted []string
	under := func(path string) bool {
		for _, d := range deleted {
			if strings.HasPrefix(path, d+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	for _, path := range paths {
		nd := s.paths[path]
		if under(path) {
			continue
		}
		if !s.durableIn(path, nd) {
			deleted = append(deleted, path)
			continue
		}
		if !nd.dir && nd.synced >= 0 {
			p.Files[path] = Cut{Size: nd.synced, Keep: max(nd.prefix, 0)}
		}
	}
	p.Delete = deleted
	return p
}

// Apply cuts the power: it replays the journal and rewrites the files it
// names to their state on disk (the process that wrote them must be dead).
// It returns the plan it carried out.
func Apply(journal string) (*Plan, error) {
	plan, err := Replay(journal)
	if err != nil {
		return nil, err
	}
	for _, path := range plan.Delete {
		if err := os.RemoveAll(path); err != nil {
			return nil, fmt.Errorf("powercut: %w", err)
		}
	}
	for path, cut := range plan.Files {
		if err := cutFile(path, cut); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// cutFile sets path's size to min(cut.Size, its size) and zeroes what lies
// past cut.Keep.
func cutFile(path string, cut Cut) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since (not through the recorder)
	}
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	size := min(cut.Size, st.Size())
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	if cut.Keep < size {
		// Punch no holes: write zeros, as never-written blocks read.
		zeros := make([]byte, min(size-cut.Keep, 1<<20))
		for off := cut.Keep; off < size; off += int64(len(zeros)) {
			n := min(int64(len(zeros)), size-off)
			if _, err := f.WriteAt(zeros[:n], off); err != nil {
				return fmt.Errorf("powercut: %w", err)
			}
		}
	}
	return nil
}
