package main

// What a broker process holds, read from /proc: its resident memory now (not
// the peak procWatch reports), its open descriptors against the limit it runs
// with, and its memory maps against vm.max_map_count. The scale workloads
// report these because the first thing 10,000 partitions broke on this
// machine was the open-file limit (issue 20, part 3).

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procHold is one reading of what a process holds.
type procHold struct {
	Pid      int
	RSS      int64 // VmRSS, bytes (mapped segment and index pages included)
	Anon     int64 // RssAnon, bytes (heap and stacks: page cache aside)
	FDs      int   // entries in /proc/<pid>/fd
	FDLimit  int64 // the soft "Max open files" of /proc/<pid>/limits (-1: unlimited)
	FDHard   int64 // its hard limit
	Maps     int   // lines of /proc/<pid>/maps
	Err      string
	Sockets  int // of FDs, the sockets
	Segments int // of FDs, files whose name ends in .log, .index or .timeindex
}

// readHold reads what pid holds; a field it cannot read stays zero and
// the first error is kept in Err.
func readHold(pid int) procHold {
	h := procHold{Pid: pid}
	note := func(err error) {
		if err != nil && h.Err == "" {
			h.Err = err.Error()
		}
	}
	st, err := readStatus(pid)
	note(err)
	h.RSS, h.Anon = st["VmRSS"], st["RssAnon"]
	h.FDs, h.Sockets, h.Segments, err = countFDs(pid)
	note(err)
	h.FDLimit, h.FDHard, err = openFileLimit(pid)
	note(err)
	h.Maps, err = countLines(fmt.Sprintf("/proc/%d/maps", pid))
	note(err)
	return h
}

// readStatus returns the kB fields of /proc/<pid>/status in bytes.
func readStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(v, " kB") {
			out[k] = parseKB(v)
		}
	}
	return out, nil
}

// countFDs counts pid's open descriptors, and of them the sockets and the
// segment files (.log, .index, .timeindex).
func countFDs(pid int) (all, sockets, segments int, err error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	es, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, e := range es {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		all++
		switch {
		case strings.HasPrefix(target, "socket:"):
			sockets++
		case strings.HasSuffix(target, ".log"), strings.HasSuffix(target, ".index"), strings.HasSuffix(target, ".timeindex"):
			segments++
		}
	}
	return all, sockets, segments, nil
}

// openFileLimit reads pid's soft and hard "Max open files".
func openFileLimit(pid int) (soft, hard int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, 0, err
	}
	return parseLimit(string(b), "Max open files")
}

// parseLimit finds the named row of a /proc/<pid>/limits text ("Max open
// files  20000  20000  files") and returns its soft and hard limits, -1 for
// "unlimited".
func parseLimit(limits, name string) (soft, hard int64, err error) {
	for line := range strings.SplitSeq(limits, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if soft, err = parseLimitValue(f[0]); err == nil {
			hard, err = parseLimitValue(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("no %q row in the limits", name)
}

func parseLimitValue(s string) (int64, error) {
	if s == "unlimited" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}

func countLines(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "\n"), nil
}

// maxMapCount is vm.max_map_count (0 if unreadable).
func maxMapCount() int {
	b, _ := os.ReadFile("/proc/sys/vm/max_map_count")
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// String is one line for a report: fds against the limit, maps, memory.
func (h procHold) String() string {
	if h.Err != "" && h.FDs == 0 {
		return fmt.Sprintf("pid %d: %s", h.Pid, h.Err)
	}
	return fmt.Sprintf("pid %d: %d fds (%d sockets, %d segment/index files) of limit %s (hard %s), %d maps, RSS %s (anon %s)",
		h.Pid, h.FDs, h.Sockets, h.Segments, limitText(h.FDLimit), limitText(h.FDHard), h.Maps, fmtBytes(h.RSS), fmtBytes(h.Anon))
}

func limitText(n int64) string {
	if n < 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}

// readHolds reads every pid.
func readHolds(pids []int) []procHold {
	var out []procHold
	for _, p := range pids {
		out = append(out, readHold(p))
	}
	return out
}
