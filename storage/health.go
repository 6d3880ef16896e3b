package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// Why a partition's log is offline (OfflineLog.Reason), as metric labels.
const (
	ReasonTooManyOpenFiles = "too_many_open_files" // ErrTooManyOpenFiles
	ReasonTooManyMappings  = "too_many_mappings"   // ErrTooManyMappings
	ReasonDiskFull         = "disk_full"           // ErrDiskFull
	ReasonLogDirFailure    = "log_dir_failure"     // an I/O error; the dir is offline (ErrLogDirOffline)
	ReasonStorageError     = "storage_error"       // anything else (corrupt files, inconsistent topic id, ...)
)

// OfflineReasons lists the reasons, for metrics that show each one.
func OfflineReasons() []string {
	return []string{ReasonTooManyOpenFiles, ReasonTooManyMappings, ReasonDiskFull, ReasonLogDirFailure, ReasonStorageError}
}

// OfflineReason classifies an error of Manager.Open.
func OfflineReason(err error) string {
	switch {
	case errors.Is(err, ErrTooManyOpenFiles):
		return ReasonTooManyOpenFiles
	case errors.Is(err, ErrTooManyMappings):
		return ReasonTooManyMappings
	case errors.Is(err, ErrDiskFull):
		return ReasonDiskFull
	case isLogDirFailure(err):
		return ReasonLogDirFailure
	}
	return ReasonStorageError
}

// isLogDirFailure reports errors that say the disk (not the process) is
// broken, after which Kafka takes the whole log dir offline.
func isLogDirFailure(err error) bool {
	return errors.Is(err, ErrLogDirOffline) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EROFS)
}

// OfflineLog is a partition whose log could not be opened, and why. It
// stays offline until an Open of it succeeds (the broker retries with every
// metadata image) or it is deleted.
type OfflineLog struct {
	TopicPartition
	Dir      string // the partition directory
	LogDir   string // the log dir holding it
	Reason   string // one of the Reason constants
	Err      error  // the last failure
	Since    time.Time
	Attempts int
}

// LogDirState is one log dir's health.
type LogDirState struct {
	Path string
	// Offline: an I/O error (Err) took the dir offline; no log is created
	// or opened in it until restart. Its open logs are left as they are:
	// the broker decides what to do with them.
	Offline     bool
	Err         error
	Logs        int // open logs
	OfflineLogs int // partitions of the dir whose log could not be opened
}

// ManagerStats describe the manager for metrics.
type ManagerStats struct {
	Logs           int            // open logs
	OfflineLogs    map[string]int // partitions whose log could not be opened, by reason
	OfflineLogDirs int
	// MappedSegments is how many inactive segments hold read mappings
	// (at most ManagerOptions.MaxMappedSegmentsTotal).
	MappedSegments int
	// Limits are the kernel limits as last read, and PartitionsThatFit
	// how many partitions they hold (-1: unknown).
	Limits            ResourceLimits
	PartitionsThatFit int
}

// OfflineLogs lists the partitions whose log could not be opened.
func (m *Manager) OfflineLogs() []OfflineLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]OfflineLog, 0, len(m.offline))
	for _, o := range m.offline {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// OfflineLogOf reports whether tp's log could not be opened, and why.
func (m *Manager) OfflineLogOf(tp TopicPartition) (OfflineLog, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.offline[tp]; ok {
		return *o, true
	}
	return OfflineLog{}, false
}

// LogDirs reports each log dir's health, in configuration order.
func (m *Manager) LogDirs() []LogDirState {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LogDirState, len(m.dirs))
	index := map[*dirState]int{}
	for i, ds := range m.dirs {
		index[ds] = i
		out[i] = LogDirState{Path: ds.path, Offline: ds.failure != nil, Err: ds.failure}
	}
	for _, ml := range m.logs {
		out[index[ml.dir]].Logs++
	}
	for _, o := range m.offline {
		if ds := m.dirOfLocked(o.Dir); ds != nil {
			out[index[ds]].OfflineLogs++
		}
	}
	return out
}

// Stats describe the manager (for metrics; cheap).
func (m *Manager) Stats() ManagerStats {
	st := ManagerStats{OfflineLogs: map[string]int{}, MappedSegments: m.maps.mappedSegments()}
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Logs = len(m.logs)
	for _, o := range m.offline {
		st.OfflineLogs[o.Reason]++
	}
	for _, ds := range m.dirs {
		if ds.failure != nil {
			st.OfflineLogDirs++
		}
	}
	st.Limits, st.PartitionsThatFit = m.limits, m.limits.PartitionsThatFit(m.opts.MaxMappedSegmentsTotal)
	return st
}

// partitionsLocked counts the partitions held: open, on disk, or offline.
// Must be called with mu held.
func (m *Manager) partitionsLocked() int {
	n := len(m.logs) + len(m.onDisk)
	for tp := range m.offline {
		if _, ok := m.onDisk[tp]; !ok {
			n++
		}
	}
	return n
}

// dirOfLocked is the log dir holding partition directory dir, or nil.
// Must be called with mu held.
func (m *Manager) dirOfLocked(dir string) *dirState {
	for _, ds := range m.dirs {
		if filepath.Dir(dir) == filepath.Clean(ds.path) {
			return ds
		}
	}
	return nil
}

// noteOpenFailure records that tp's log in dir could not be opened: the
// partition is offline with the reason, and an I/O error takes the log dir
// offline too. A resource limit is logged with what to raise, at the first
// offline partition and then at each doubling of their number.
func (m *Manager) noteOpenFailure(tp TopicPartition, ds *dirState, dir string, err error) {
	reason := OfflineReason(err)
	m.mu.Lock()
	o, ok := m.offline[tp]
	if !ok {
		o = &OfflineLog{TopicPartition: tp, Dir: dir, LogDir: ds.path, Since: m.opts.Now()}
		m.offline[tp] = o
	}
	o.Reason, o.Err = reason, err
	o.Attempts++
	dirFailed := reason == ReasonLogDirFailure && ds.failure == nil
	if dirFailed {
		ds.failure = err
	}
	n, partitions := len(m.offline), m.partitionsLocked()
	report := !ok && n >= m.offlineReportAt
	if report {
		m.offlineReportAt = 2 * n
	}
	m.mu.Unlock()
	if dirFailed {
		m.logger.Error("storage: log dir offline after an I/O error: no log is created or opened in it until restart",
			"log_dir", ds.path, "partition", tp.String(), "err", err)
		m.notifyDirFailure(ds, err)
	}
	if report {
		m.logger.Error("storage: partition offline: its log cannot be opened", "partition", tp.String(), "reason", reason,
			"offline_partitions", n, "err", err)
		if errors.Is(err, ErrResourceLimit) {
			m.checkLimits(partitions, false)
		}
	}
}

// noteOpened clears tp's offline state.
func (m *Manager) noteOpened(tp TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.offline[tp]; ok {
		delete(m.offline, tp)
		m.logger.Info("storage: offline partition opened", "partition", tp.String())
	}
	if len(m.offline) == 0 {
		m.offlineReportAt = 0
	}
}

// checkLimits reads the kernel limits and compares them with what
// partitions need: an INFO line at start, an ERROR line per limit that is
// too low (with what to raise it to), a WARN line when nine tenths are
// used. Later calls (more partitions) log only problems.
func (m *Manager) checkLimits(partitions int, start bool) {
	lim, raisedFrom, err := m.opts.ResourceLimits()
	if err != nil {
		m.logger.Warn("storage: cannot read the open-file limit", "err", err)
	}
	if raisedFrom > 0 {
		m.logger.Info("storage: raised the soft open-file limit to the hard limit", "from", raisedFrom, "to", lim.OpenFiles)
	}
	need := EstimateNeed(partitions, m.opts.MaxMappedSegmentsTotal)
	fit := lim.PartitionsThatFit(m.opts.MaxMappedSegmentsTotal)
	if start {
		m.logger.Info("storage: resource limits", "open_files", lim.OpenFiles, "open_files_hard", lim.OpenFilesHard,
			"max_map_count", lim.MaxMapCount, "partitions", partitions, "need_files", need.Files, "need_maps", need.Maps,
			"partitions_that_fit", fit)
	}
	problems := CheckResourceLimits(lim, need)
	for _, p := range problems {
		m.logger.Error(p.Message)
	}
	if len(problems) == 0 && fit >= 0 && partitions > fit*9/10 {
		m.logger.Warn(fmt.Sprintf("storage: %d partitions use nine tenths of what the open-file limit and vm.max_map_count hold (%d); "+
			"raise them before adding more (about %d descriptors and %d mappings per 1,000 partitions)",
			partitions, fit, 1000*filesPerPartition, 1000*mapsPerPartition))
	}
	m.mu.Lock()
	m.limits, m.limitCheckAt = lim, nextLimitCheck(partitions, fit)
	m.mu.Unlock()
}

// nextLimitCheck is the partition count at which the limits are checked
// again: past nine tenths of what fits, past what fits, then every tenth
// more.
func nextLimitCheck(partitions, fit int) int {
	next := partitions + max(partitions/10, 1)
	switch {
	case fit < 0:
	case partitions < fit*9/10+1:
		next = fit*9/10 + 1
	case partitions <= fit:
		next = min(next, fit+1)
	}
	return next
}

// maybeCheckLimits re-checks the limits when the partitions grew past the
// next check point (Open calls it; cheap otherwise).
func (m *Manager) maybeCheckLimits() {
	m.mu.Lock()
	n := m.partitionsLocked()
	due := m.limits != (ResourceLimits{}) && n >= m.limitCheckAt
	m.mu.Unlock()
	if due {
		m.checkLimits(n, false)
	}
}
