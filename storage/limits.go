package storage

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The cost of a partition in kernel resources (doc.go, "Descriptors and
// mappings per partition"), and what the rest of the broker needs.
const (
	filesPerPartition    = 1 // the active segment's .log
	mapsPerPartition     = 3 // the active .log, .index and .timeindex
	mapsPerMappedSegment = 3 // an inactive segment mapped for reading
	// reservedFiles are the descriptors of everything else: listeners,
	// client and replica connections, the metadata log, and files opened
	// for a moment (recovery, rolls, index growth, the cleaner,
	// checkpoints).
	reservedFiles = 1024
	// reservedMaps are the mappings of everything else: the binary, the Go
	// runtime's heap and stacks, the metadata log.
	reservedMaps = 1024
)

// ResourceLimits are the kernel limits that decide how many partitions a
// broker can hold. Zero means unknown (not checked).
type ResourceLimits struct {
	OpenFiles     uint64 // RLIMIT_NOFILE soft limit (what open(2) is held to)
	OpenFilesHard uint64 // RLIMIT_NOFILE hard limit
	MaxMapCount   uint64 // vm.max_map_count
}

// ResourceNeed is what a number of partitions costs, with the rest of the
// broker's share.
type ResourceNeed struct {
	Partitions int
	Files      uint64 // open descriptors
	Maps       uint64 // memory mappings
	// MappedSegments is the budget of inactive segments mapped for reading
	// (ManagerOptions.MaxMappedSegmentsTotal) that Maps includes.
	MappedSegments int
}

// EstimateNeed is what partitions cost with a budget of mappedSegments
// inactive segments mapped for reading.
func EstimateNeed(partitions, mappedSegments int) ResourceNeed {
	p, m := uint64(max(partitions, 0)), uint64(max(mappedSegments, 0))
	return ResourceNeed{
		Partitions: partitions, MappedSegments: mappedSegments,
		Files: filesPerPartition*p + reservedFiles,
		Maps:  mapsPerPartition*p + mapsPerMappedSegment*m + reservedMaps,
	}
}

// PartitionsThatFit is how many partitions the limits hold with a budget of
// mappedSegments mapped inactive segments (-1: no known limit).
func (lim ResourceLimits) PartitionsThatFit(mappedSegments int) int {
	fit := -1
	room := func(limit, reserved, per uint64) {
		if limit == 0 {
			return
		}
		n := 0
		if limit > reserved {
			n = int((limit - reserved) / per)
		}
		if fit < 0 || n < fit {
			fit = n
		}
	}
	room(lim.OpenFiles, reservedFiles, filesPerPartition)
	room(lim.MaxMapCount, reservedMaps+mapsPerMappedSegment*uint64(max(mappedSegments, 0)), mapsPerPartition)
	return fit
}

// LimitProblem is a limit too low for a need.
type LimitProblem struct {
	Limit string // "RLIMIT_NOFILE" or "vm.max_map_count"
	Have  uint64
	Need  uint64
	// Message says what to raise, to what and how, in one line.
	Message string
}

// CheckResourceLimits returns the limits too low for need (nil when they
// fit or are unknown). RLIMIT_NOFILE is compared with the hard limit when
// that is higher, since SystemResourceLimits raises the soft one to it.
func CheckResourceLimits(lim ResourceLimits, need ResourceNeed) []LimitProblem {
	var out []LimitProblem
	if files := max(lim.OpenFiles, lim.OpenFilesHard); files > 0 && need.Files > files {
		out = append(out, LimitProblem{Limit: "RLIMIT_NOFILE", Have: files, Need: need.Files, Message: fmt.Sprintf(
			"storage: the open-file limit (RLIMIT_NOFILE) of %d is too low for %d partitions: they need about %d descriptors "+
				"(%d per partition + %d for connections and files opened briefly); partitions beyond it go offline with %q. "+
				"Raise the soft and hard limit to at least %d (LimitNOFILE=%d in the systemd unit, ulimit -n %d, docker --ulimit nofile=%d:%d)",
			files, need.Partitions, need.Files, filesPerPartition, reservedFiles, "too many open files",
			need.Files, need.Files, need.Files, need.Files, need.Files)})
	}
	if lim.MaxMapCount > 0 && need.Maps > lim.MaxMapCount {
		out = append(out, LimitProblem{Limit: "vm.max_map_count", Have: lim.MaxMapCount, Need: need.Maps, Message: fmt.Sprintf(
			"storage: vm.max_map_count of %d is too low for %d partitions: they need about %d memory mappings "+
				"(%d per partition + %d for %d old segments mapped for reading + %d for the runtime); partitions beyond it go offline "+
				"and reads of old segments fail. Raise it to at least %d (sysctl -w vm.max_map_count=%d, and a file in /etc/sysctl.d to keep it)",
			lim.MaxMapCount, need.Partitions, need.Maps, mapsPerPartition, mapsPerMappedSegment*need.MappedSegments,
			need.MappedSegments, reservedMaps, need.Maps, need.Maps)})
	}
	return out
}

// SystemResourceLimits raises the soft RLIMIT_NOFILE to the hard limit (as
// many servers do; Go's runtime already does it at start on Linux, so this
// is usually a no-op) and reads the limits. raisedFrom is the soft limit
// before, when it was raised (0 otherwise).
func SystemResourceLimits() (lim ResourceLimits, raisedFrom uint64, err error) {
	soft, hard, raisedFrom, err := raiseOpenFileLimit()
	lim.OpenFiles, lim.OpenFilesHard = soft, hard
	lim.MaxMapCount = readMaxMapCount()
	return lim, raisedFrom, err
}

// readMaxMapCount reads vm.max_map_count (0 where there is none).
func readMaxMapCount() uint64 {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
