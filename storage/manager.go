package storage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ManagerOptions configure a Manager. Zero values take defaults.
type ManagerOptions struct {
	Logger *slog.Logger
	Now    func() time.Time
	// LogWorkersPerDir is how many logs of each log dir Close closes at
	// once (num.recovery.threads.per.data.dir; default DefaultLogWorkers).
	LogWorkersPerDir int
	// FlushCheckInterval: how often logs are checked for flush.ms and for
	// rolled segments to flush (default 1s).
	FlushCheckInterval time.Duration
	// RetentionCheckInterval: log.retention.check.interval.ms (default 5m).
	RetentionCheckInterval time.Duration
	// CheckpointInterval: how often the checkpoint files are written
	// (default 60s, Kafka's log.flush.offset.checkpoint.interval.ms).
	CheckpointInterval time.Duration
	// ProducerIDExpiration: producer.id.expiration.ms, applied with
	// retention (default 24h; negative disables).
	ProducerIDExpiration time.Duration
	// LogCleanerBackoff: how often the cleaner looks for compacted logs to
	// clean (log.cleaner.backoff.ms, default 15s).
	LogCleanerBackoff time.Duration
	// Fallocate, MaxMappedSegments and CleanerDedupeBufferBytes are passed
	// to every log (LogOptions).
	Fallocate func(f *os.File, offset, length int64) error
	// FS is the file system of the log dirs (default vfs.Default).
	FS                       vfs.FS
	MaxMappedSegments        int
	CleanerDedupeBufferBytes int64
	// MaxMappedSegmentsTotal bounds the inactive segments mapped for
	// reading across all logs (default 1024, three memory mappings each),
	// so that the map count stays within vm.max_map_count however many
	// partitions are read from their old segments.
	MaxMappedSegmentsTotal int
	// ResourceLimits reads the kernel limits that NewManager, and Open as
	// partitions grow, compare with what the partitions need (default
	// SystemResourceLimits, which first raises the soft open-file limit to
	// the hard one).
	ResourceLimits func() (lim ResourceLimits, raisedFrom uint64, err error)

	// OnGroupCommitRound, if set, is told of every group commit round: how
	// long its flushes took and how many logs it flushed (metrics). It
	// must not block.
	OnGroupCommitRound func(d time.Duration, logs int)

	// OnLogDirFailure, if set, is told once per log dir when an I/O error
	// takes it offline (a failed flush or fsync, or an I/O error opening a
	// log in it). It must not block: the broker decides what to do (Kafka
	// halts when it cannot move the dir's partitions elsewhere).
	OnLogDirFailure func(dir string, err error)

	// newTicker replaces time.NewTicker in tests.
	newTicker func(d time.Duration) (<-chan time.Time, func())
}

func (o ManagerOptions) withDefaults() ManagerOptions {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.LogWorkersPerDir <= 0 {
		o.LogWorkersPerDir = DefaultLogWorkers
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushCheckInterval <= 0 {
		o.FlushCheckInterval = time.Second
	}
	if o.RetentionCheckInterval <= 0 {
		o.RetentionCheckInterval = 5 * time.Minute
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Minute
	}
	if o.ProducerIDExpiration == 0 {
		o.ProducerIDExpiration = 24 * time.Hour
	}
	if o.LogCleanerBackoff <= 0 {
		o.LogCleanerBackoff = 15 * time.Second
	}
	if o.MaxMappedSegments <= 0 {
		o.MaxMappedSegments = LogOptions{}.withDefaults().MaxMappedSegments
	}
	if o.MaxMappedSegmentsTotal <= 0 {
		o.MaxMappedSegmentsTotal = defaultMaxMappedSegmentsTotal
	}
	if o.ResourceLimits == nil {
		o.ResourceLimits = SystemResourceLimits
	}
	if o.newTicker == nil {
		o.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	return o
}

// defaultMaxMappedSegmentsTotal is ManagerOptions.MaxMappedSegmentsTotal's
// default: 3,072 mappings, a twentieth of the usual vm.max_map_count.
const defaultMaxMappedSegmentsTotal = 1024

// PartitionDir is a partition directory found in a log dir at startup.
type PartitionDir struct {
	TopicPartition
	TopicID [16]byte // from partition.metadata; zero if absent
	Dir     string   // the partition directory
}

// dirState is what the manager knows of one log dir: the checkpoint
// values read at startup (kept for partitions not opened yet) and whether
// the previous shutdown was clean.
type dirState struct {
	path  string
	clean bool
	// cleanEpoch is the broker epoch the clean-shutdown marker held (-1:
	// none).
	cleanEpoch     int64
	recoveryPoints map[TopicPartition]int64
	highWatermarks map[TopicPartition]int64
	logStarts      map[TopicPartition]int64
	cleanerOffsets map[TopicPartition]int64
	// recoveryUnknown: the recovery point checkpoint was unreadable, so
	// every log of the dir is fully recovered.
	recoveryUnknown bool
	// failure, guarded by Manager.mu, is the I/O error that took the dir
	// offline (nil while online).
	failure error
	// syncer is the dir's group commit for durable logs (groupsync.go).
	syncer *groupSyncer
	// written is, by checkpoint file name, the offsets the file holds as
	// this run last wrote it (guarded by Manager.checkpointMu):
	// WriteCheckpoints rewrites only the files whose offsets changed.
	written map[string]map[TopicPartition]int64
}

// managedLog is an open log and the log dir holding it.
type managedLog struct {
	log *Log
	dir *dirState
	id  [16]byte
}

// Manager owns the log dirs: it opens, creates and deletes partition logs,
// writes Kafka's per-dir checkpoint files and the clean-shutdown marker,
// and runs two background goroutines (Run), stopped by Close: one for
// flush.ms, retention and checkpoints, one for log compaction (the
// cleaner, whose cleanings may take long).
//
// Locking: Open and Delete of one partition exclude each other (busy) and
// run concurrently with those of other partitions (the broker opens many
// at once: creating or loading a log is mostly waiting on fsyncs); each
// holds openMu shared, Close holds it exclusively (it does disk work). mu
// guards the maps and is held only briefly. Order: openMu -> mu;
// checkpointMu is taken without mu.
type Manager struct {
	opts   ManagerOptions
	logger *slog.Logger
	dirs   []*dirState
	maps   *mapCache // shared by every log

	openMu       sync.RWMutex
	checkpointMu sync.Mutex // serialises checkpoint file writes
	// checkpointDirty is set when an offset the checkpoint files hold may
	// have moved (a log's, or the set of logs) since the last pass began:
	// a pass without it writes nothing and reads no log.
	checkpointDirty atomic.Bool

	mu sync.Mutex // guards the following
	// busy marks the partitions an Open or Delete is working on; the
	// channel is closed when it is done.
	busy   map[TopicPartition]chan struct{}
	logs   map[TopicPartition]*managedLog
	onDisk map[TopicPartition]PartitionDir // found at startup, not open
	found  []PartitionDir                  // everything found at startup
	// offline lists the partitions whose log could not be opened
	// (health.go); offlineReportAt is the count at which the next one is
	// logged.
	offline         map[TopicPartition]*OfflineLog
	offlineReportAt int
	// limits are the kernel limits as last read; limitCheckAt is the
	// partition count at which Open checks them again.
	limits       ResourceLimits
	limitCheckAt int
	closed       bool
	// stopping is set by Close before it stops the loop; Run does not
	// start once it is set.
	stopping bool

	// brokerEpoch is written into the clean-shutdown markers (-1: none).
	brokerEpoch atomic.Int64
	// counters count flushes and syncs (syncstats.go).
	counters *syncCounters

	runOnce  sync.Once
	stopOnce sync.Once
	stop     chan struct{} // closed by Close
	done     chan struct{} // closed when both loops exit (if they ran)
	running  bool          // guarded by mu
}

// stopSyncers stops the group commit goroutines of the dirs.
func (m *Manager) stopSyncers() {
	for _, ds := range m.dirs {
		if ds.syncer != nil {
			ds.syncer.stop()
		}
	}
}

// syncFailed takes the log dir of a log whose flush failed offline, as
// Kafka does on an I/O error: the state of its page cache is unknown, a
// retried fsync could succeed without the data, so nothing more is
// acknowledged from it. Every log of the dir refuses writes from now on
// (KAFKA_STORAGE_ERROR), and the dir is reported offline (LogDirs).
func (m *Manager) syncFailed(ds *dirState, l *Log, err error) {
	m.dirFailed(ds, "flush of "+l.Dir(), err)
}

// dirFailed takes ds offline after an I/O error in what (Kafka's
// LogDirFailureChannel): every log in it refuses writes, its owner is told
// (OnLogDirFailure).
func (m *Manager) dirFailed(ds *dirState, what string, err error) {
	m.mu.Lock()
	first := ds.failure == nil
	if first {
		ds.failure = err
	}
	var logs []*Log
	for _, ml := range m.logs {
		if ml.dir == ds {
			logs = append(logs, ml.log)
		}
	}
	m.mu.Unlock()
	if first {
		m.logger.Error("storage: I/O error; log dir offline, its partitions refuse writes",
			"log_dir", ds.path, "during", what, "err", err)
	}
	for _, o := range logs {
		o.fail(fmt.Errorf("%w: %s: %w", ErrLogDirOffline, ds.path, err))
	}
	if first {
		m.notifyDirFailure(ds, err)
	}
}

// notifyDirFailure tells the owner (OnLogDirFailure) that ds went offline.
func (m *Manager) notifyDirFailure(ds *dirState, err error) {
	if m.opts.OnLogDirFailure != nil {
		m.opts.OnLogDirFailure(ds.path, err)
	}
}

// dirOf returns the dir state of an open log, nil if it is not open here.
func (m *Manager) dirOf(l *Log) *dirState {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ml := range m.logs {
		if ml.log == l {
			return ml.dir
		}
	}
	return nil
}

// GroupSyncStats sums the group commit rounds of every log dir.
func (m *Manager) GroupSyncStats() GroupSyncStats {
	var s GroupSyncStats
	for _, ds := range m.dirs {
		if ds.syncer != nil {
			s.Rounds += ds.syncer.rounds.Load()
			s.Syncs += ds.syncer.syncs.Load()
		}
	}
	return s
}

// NewManager opens the log dirs: reads their checkpoints, notes and
// removes the clean-shutdown marker, and lists the partition directories.
// Logs are opened by Open.
func NewManager(dirs []string, opts ManagerOptions) (*Manager, error) {
	if len(dirs) == 0 {
		return nil, errors.New("storage: no log dirs")
	}
	opts = opts.withDefaults()
	counters := &syncCounters{}
	opts.FS = countingFS{FS: opts.FS, c: counters}
	m := &Manager{counters: counters,
		opts: opts, logger: opts.Logger,
		logs: map[TopicPartition]*managedLog{}, onDisk: map[TopicPartition]PartitionDir{},
		busy: map[TopicPartition]chan struct{}{},
		stop: make(chan struct{}), done: make(chan struct{}),
		maps: newMapCache(opts.MaxMappedSegments, opts.MaxMappedSegmentsTotal),
	}
	m.brokerEpoch.Store(-1)
	m.checkpointDirty.Store(true) // the first pass writes every file, as Kafka does at startup
	m.offline = map[TopicPartition]*OfflineLog{}
	for _, d := range dirs {
		ds, err := m.loadDir(d)
		if err != nil {
			m.stopSyncers()
			return nil, err
		}
		m.dirs = append(m.dirs, ds)
		if err := m.scanPartitions(ds); err != nil {
			m.stopSyncers()
			return nil, err
		}
		ds.syncer = newGroupSyncer(func(l *Log, err error) { m.syncFailed(ds, l, err) }, opts.OnGroupCommitRound)
	}
	m.checkLimits(len(m.found), true)
	return m, nil
}

// loadDir reads the checkpoint files and the clean-shutdown marker of dir.
// An unreadable checkpoint is logged and replaced by a safe fallback:
// recovery point unknown means full recovery; HW and log start offsets
// default to 0 (the log start is then the first segment).
func (m *Manager) loadDir(path string) (*dirState, error) {
	if err := m.opts.FS.MkdirAll(path, 0o755); err != nil {
		return nil, diskError("create log dir", err)
	}
	ds := &dirState{path: path, cleanEpoch: -1}
	read := func(name string) map[TopicPartition]int64 {
		v, err := readOffsetCheckpoint(m.opts.FS, filepath.Join(path, name))
		if err != nil {
			m.logger.Warn("storage: unreadable checkpoint file; falling back", "file", filepath.Join(path, name), "err", err)
			if name == RecoveryPointCheckpointFile {
				ds.recoveryUnknown = true
			}
			return map[TopicPartition]int64{}
		}
		return v
	}
	ds.recoveryPoints = read(RecoveryPointCheckpointFile)
	ds.highWatermarks = read(ReplicationCheckpointFile)
	ds.logStarts = read(LogStartOffsetCheckpointFile)
	ds.cleanerOffsets = read(CleanerOffsetCheckpointFile)
	marker := filepath.Join(path, CleanShutdownFile)
	if _, err := m.opts.FS.Stat(marker); err == nil {
		ds.clean = !ds.recoveryUnknown
		if b, err := vfs.ReadFile(m.opts.FS, marker); err == nil {
			ds.cleanEpoch = parseCleanShutdown(b)
		}
		if err := m.opts.FS.Remove(marker); err != nil {
			return nil, fmt.Errorf("storage: remove clean shutdown marker: %w", err)
		}
		if err := syncDir(m.opts.FS, path); err != nil {
			return nil, err
		}
	}
	if ds.recoveryUnknown {
		m.logger.Warn("storage: recovery point unknown; every log in the dir will be fully recovered", "dir", path)
	}
	return ds, nil
}

// parsePartitionDirName splits "<topic>-<partition>". Names that do not
// parse (and Kafka's -delete/-future/-stray dirs, and the controller's
// __cluster_metadata-0) are not partition logs.
func parsePartitionDirName(name string) (TopicPartition, bool) {
	if name == "__cluster_metadata-0" {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	topic := name[:i]
	if len(topic) > 249 {
		return TopicPartition{}, false
	}
	for _, c := range topic {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return TopicPartition{}, false
		}
	}
	return TopicPartition{Topic: topic, Partition: int32(p)}, true
}

// scanPartitions lists the partition dirs of ds, removing leftovers of
// interrupted deletions (our "<name>.<hex>-delete" dirs).
func (m *Manager) scanPartitions(ds *dirState) error {
	des, err := m.opts.FS.ReadDir(ds.path)
	if err != nil {
		return diskError("list log dir", err)
	}
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		full := filepath.Join(ds.path, name)
		if strings.HasSuffix(name, "-delete") && strings.Contains(name, ".") {
			m.logger.Info("storage: removing partition dir left by an interrupted delete", "dir", full)
			if err := m.opts.FS.RemoveAll(full); err != nil {
				return fmt.Errorf("storage: remove %s: %w", full, err)
			}
			continue
		}
		tp, ok := parsePartitionDirName(name)
		if !ok {
			continue
		}
		if prev, dup := m.onDisk[tp]; dup {
			return fmt.Errorf("storage: partition %s found in both %s and %s", tp, prev.Dir, full)
		}
		id, err := readPartitionMetadata(m.opts.FS, full)
		if err != nil {
			m.logger.Warn("storage: unreadable partition.metadata", "dir", full, "err", err)
		}
		pd := PartitionDir{TopicPartition: tp, TopicID: id, Dir: full}
		m.onDisk[tp] = pd
		m.checkpointDirty.Store(true)
		m.found = append(m.found, pd)
	}
	return nil
}

// OnDisk lists the partitions found in the log dirs at startup, with their
// topic ids (zero when partition.metadata is absent).
func (m *Manager) OnDisk() []PartitionDir {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]PartitionDir(nil), m.found...)
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// TopicID returns the topic id recorded for an open or on-disk partition.
func (m *Manager) TopicID(tp TopicPartition) ([16]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ml, ok := m.logs[tp]; ok {
		return ml.id, true
	}
	pd, ok := m.onDisk[tp]
	return pd.TopicID, ok
}

// Get returns the open log of tp.
func (m *Manager) Get(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.logs[tp]
	if !ok {
		return nil, false
	}
	return ml.log, true
}

// All returns every open log.
func (m *Manager) All() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, ml := range m.logs {
		out = append(out, ml.log)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}

// allUnsorted is All in no particular order: the flush check runs every
// second, and sorting 10,000 logs each time was most of an idle broker's
// storage cost (issue 20, part 3).
func (m *Manager) allUnsorted() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, ml := range m.logs {
		out = append(out, ml.log)
	}
	return out
}

// Open returns the log of tp, opening it from disk (with recovery) or
// creating it in the online log dir holding the fewest partitions. A new
// log gets a partition.metadata file with topicID (unless zero); an
// existing one whose file names another topic id fails with
// ErrInconsistentTopicID (a stale log of a deleted topic of the same name).
// Opening an open log applies cfg and returns it. A failure leaves the
// partition offline with its reason (OfflineLogs) until an Open succeeds;
// an I/O error takes its log dir offline (ErrLogDirOffline from then on).
func (m *Manager) Open(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	m.openMu.RLock()
	defer m.openMu.RUnlock()
	m.lockPartition(tp)
	defer m.unlockPartition(tp)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrLogClosed
	}
	if ml, ok := m.logs[tp]; ok {
		m.mu.Unlock()
		if !sameTopicID(ml.id, topicID) {
			return nil, fmt.Errorf("%w: %s has topic id %x, asked for %x", ErrInconsistentTopicID, tp, ml.id, topicID)
		}
		return ml.log, ml.log.UpdateConfig(cfg)
	}
	ds, dir := m.placeLocked(tp)
	failure := ds.failure
	m.mu.Unlock()
	l, id, err := m.openIn(ds, dir, failure, tp, topicID, cfg)
	if err != nil {
		m.noteOpenFailure(tp, ds, dir, err)
		return nil, err
	}
	m.mu.Lock()
	m.logs[tp] = &managedLog{log: l, dir: ds, id: id}
	delete(m.onDisk, tp)
	m.checkpointDirty.Store(true)
	m.mu.Unlock()
	m.noteOpened(tp)
	m.maybeCheckLimits()
	return l, nil
}

// lockPartition waits until no Open or Delete of tp is in progress and
// marks tp busy; unlockPartition ends that.
func (m *Manager) lockPartition(tp TopicPartition) {
	for {
		m.mu.Lock()
		done, busy := m.busy[tp]
		if !busy {
			m.busy[tp] = make(chan struct{})
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		<-done
	}
}

func (m *Manager) unlockPartition(tp TopicPartition) {
	m.mu.Lock()
	done := m.busy[tp]
	delete(m.busy, tp)
	m.mu.Unlock()
	close(done)
}

// openIn opens or creates tp's log in dir of ds, unless ds is offline.
func (m *Manager) openIn(ds *dirState, dir string, failure error, tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, [16]byte, error) {
	if failure != nil {
		return nil, topicID, fmt.Errorf("%w: %s (%w)", ErrLogDirOffline, ds.path, failure)
	}
	id, err := m.ensurePartitionMetadata(dir, topicID)
	if err != nil {
		return nil, id, err
	}
	lo := m.logOptions()
	lo.syncer = ds.syncer
	l, err := OpenLog(dir, cfg, m.stateFor(ds, tp), lo)
	return l, id, err
}

func sameTopicID(a, b [16]byte) bool { return a == b || a == [16]byte{} || b == [16]byte{} }

// placeLocked picks the dir of tp: where it is on disk or last failed to
// open, else the online log dir with the fewest partitions (an offline one
// if none is online).
// Must be called with mu held.
func (m *Manager) placeLocked(tp TopicPartition) (*dirState, string) {
	if o, ok := m.offline[tp]; ok {
		// Where it failed (its dir may exist there): never a second copy.
		for _, ds := range m.dirs {
			if ds.path == o.LogDir {
				return ds, o.Dir
			}
		}
	}
	if pd, ok := m.onDisk[tp]; ok {
		for _, ds := range m.dirs {
			if filepath.Dir(pd.Dir) == filepath.Clean(ds.path) {
				return ds, pd.Dir
			}
		}
	}
	if len(m.dirs) == 1 {
		// Nothing to choose: counting every partition held (below) on each
		// creation made creating N partitions cost O(N^2).
		return m.dirs[0], filepath.Join(m.dirs[0].path, tp.String())
	}
	count := map[*dirState]int{}
	for _, ml := range m.logs {
		count[ml.dir]++
	}
	for _, pd := range m.onDisk {
		for _, ds := range m.dirs {
			if filepath.Dir(pd.Dir) == filepath.Clean(ds.path) {
				count[ds]++
			}
		}
	}
	best := m.dirs[0]
	for _, ds := range m.dirs[1:] {
		if (best.failure != nil && ds.failure == nil) || (count[ds] < count[best] && (ds.failure == nil) == (best.failure == nil)) {
			best = ds
		}
	}
	return best, filepath.Join(best.path, tp.String())
}

// stateFor builds the LogState of tp from the dir's checkpoints.
func (m *Manager) stateFor(ds *dirState, tp TopicPartition) LogState {
	st := LogState{
		RecoveryPoint:  ds.recoveryPoints[tp],
		LogStartOffset: ds.logStarts[tp],
		HighWatermark:  ds.highWatermarks[tp],
		CleanShutdown:  ds.clean,

		CleanerCheckpoint: ds.cleanerOffsets[tp],
	}
	if ds.recoveryUnknown {
		st.RecoveryPoint, st.CleanShutdown = 0, false
	}
	return st
}

func (m *Manager) logOptions() LogOptions {
	return LogOptions{Now: m.opts.Now, Logger: m.logger, FS: m.opts.FS, Fallocate: m.opts.Fallocate, MaxMappedSegments: m.opts.MaxMappedSegments,
		CleanerDedupeBufferBytes: m.opts.CleanerDedupeBufferBytes, mapCache: m.maps, recoveryPointLowered: m.WriteCheckpoints,
		counters: m.counters, checkpointDirty: &m.checkpointDirty}
}

// ensurePartitionMetadata checks or writes dir/partition.metadata and
// returns the topic id in force.
func (m *Manager) ensurePartitionMetadata(dir string, topicID [16]byte) ([16]byte, error) {
	if err := mkdirDurable(m.opts.FS, dir); err != nil {
		return topicID, err
	}
	have, err := readPartitionMetadata(m.opts.FS, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.logger.Warn("storage: rewriting unreadable partition.metadata", "dir", dir, "err", err)
	}
	if have != [16]byte{} && topicID != [16]byte{} && have != topicID {
		return have, fmt.Errorf("%w: %s holds topic id %s, asked for %s", ErrInconsistentTopicID, dir,
			encodeTopicID(have), encodeTopicID(topicID))
	}
	if have != [16]byte{} || topicID == [16]byte{} {
		return have, nil
	}
	data := fmt.Sprintf("version: 0\ntopic_id: %s\n", encodeTopicID(topicID))
	return topicID, writeFileAtomic(m.opts.FS, filepath.Join(dir, PartitionMetadataFile), []byte(data))
}

// encodeTopicID renders a UUID as Kafka does (URL-safe base64, no padding).
func encodeTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// readPartitionMetadata parses Kafka's partition.metadata:
//
//	version: 0
//	topic_id: <base64url uuid>
func readPartitionMetadata(fsys vfs.FS, dir string) ([16]byte, error) {
	var id [16]byte
	data, err := vfs.ReadFile(fsys, filepath.Join(dir, PartitionMetadataFile))
	if err != nil {
		return id, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != "version: 0" || !strings.HasPrefix(lines[1], "topic_id: ") {
		return id, fmt.Errorf("%w: partition.metadata %q", ErrCorruptCheckpoint, data)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(strings.TrimPrefix(lines[1], "topic_id: ")))
	if err != nil || len(raw) != 16 {
		return id, fmt.Errorf("%w: partition.metadata topic id %q", ErrCorruptCheckpoint, lines[1])
	}
	copy(id[:], raw)
	return id, nil
}

// Delete closes and removes the log of tp (open or only on disk). The
// directory is first renamed to "<name>.<random>-delete" so that a crash
// cannot leave a half-deleted log that looks alive. Unknown partitions are
// a no-op.
func (m *Manager) Delete(tp TopicPartition) error {
	m.openMu.RLock()
	defer m.openMu.RUnlock()
	m.lockPartition(tp)
	defer m.unlockPartition(tp)
	m.mu.Lock()
	ml, open := m.logs[tp]
	pd, onDisk := m.onDisk[tp]
	off, offline := m.offline[tp]
	delete(m.logs, tp)
	delete(m.onDisk, tp)
	m.checkpointDirty.Store(true)
	delete(m.offline, tp)
	m.found = removePartitionDir(m.found, tp)
	for _, ds := range m.dirs {
		delete(ds.recoveryPoints, tp)
		delete(ds.highWatermarks, tp)
		delete(ds.logStarts, tp)
		delete(ds.cleanerOffsets, tp)
	}
	m.mu.Unlock()
	var dir string
	var errs []error
	switch {
	case open:
		dir = ml.log.Dir()
		if err := ml.log.Close(); err != nil && !errors.Is(err, ErrLogFailed) {
			errs = append(errs, err)
		}
	case onDisk:
		dir = pd.Dir
	case offline:
		dir = off.Dir // a new log that failed to open may have left its dir
		if _, err := m.opts.FS.Stat(dir); err != nil {
			return nil
		}
	default:
		return nil
	}
	var suffix [8]byte
	rand.Read(suffix[:])
	tomb := fmt.Sprintf("%s.%s-delete", dir, hex.EncodeToString(suffix[:]))
	if err := m.opts.FS.Rename(dir, tomb); err != nil {
		return errors.Join(append(errs, fmt.Errorf("storage: rename %s for deletion: %w", dir, err))...)
	}
	if err := syncDir(m.opts.FS, filepath.Dir(dir)); err != nil {
		errs = append(errs, err)
	}
	if err := m.opts.FS.RemoveAll(tomb); err != nil {
		errs = append(errs, fmt.Errorf("storage: remove %s: %w", tomb, err))
	}
	m.logger.Info("storage: deleted partition log", "partition", tp.String())
	return errors.Join(errs...)
}

func removePartitionDir(list []PartitionDir, tp TopicPartition) []PartitionDir {
	out := list[:0:0]
	for _, pd := range list {
		if pd.TopicPartition != tp {
			out = append(out, pd)
		}
	}
	return out
}

// WriteCheckpoints writes the recovery point, replication (HW), log start
// offset and cleaner offset checkpoints of every log dir. Partitions found
// at startup and not opened keep the values read then; the cleaner
// checkpoint lists the logs the cleaner has a position for. A file whose
// offsets are those this run last wrote to it is left as it is, and a pass
// after which no checkpointed offset moved (LogOptions.checkpointDirty)
// reads nothing: an idle broker's pass costs nothing per partition (Kafka
// rewrites every file at each interval; the content would be the same).
func (m *Manager) WriteCheckpoints() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	// Cleared before the offsets are read: a move while they are read
	// sets it again, for the next pass.
	if !m.checkpointDirty.Swap(false) {
		return nil
	}
	byDir := m.checkpointValues()
	var errs []error
	for _, ds := range m.dirs {
		v := byDir[ds]
		for _, f := range [...]struct {
			name    string
			offsets map[TopicPartition]int64
		}{{RecoveryPointCheckpointFile, v.rp}, {ReplicationCheckpointFile, v.hw}, {LogStartOffsetCheckpointFile, v.lso},
			{CleanerOffsetCheckpointFile, v.cleaner}} {
			if last, ok := ds.written[f.name]; ok && maps.Equal(last, f.offsets) {
				continue
			}
			if err := writeOffsetCheckpoint(m.opts.FS, filepath.Join(ds.path, f.name), f.offsets); err != nil {
				errs = append(errs, err)
				if isLogDirFailure(err) {
					m.dirFailed(ds, "checkpoint "+f.name, err)
				}
				delete(ds.written, f.name)
				m.checkpointDirty.Store(true) // try again next pass
				continue
			}
			if ds.written == nil {
				ds.written = make(map[string]map[TopicPartition]int64)
			}
			ds.written[f.name] = f.offsets
		}
	}
	return errors.Join(errs...)
}

// checkpointValues are one log dir's checkpoint offsets.
type checkpointValues struct{ rp, hw, lso, cleaner map[TopicPartition]int64 }

// checkpointValues collects every dir's checkpoint offsets: the open logs'
// and, for partitions found at startup and not opened, those read then.
func (m *Manager) checkpointValues() map[*dirState]*checkpointValues {
	m.mu.Lock()
	defer m.mu.Unlock()
	byDir := make(map[*dirState]*checkpointValues, len(m.dirs))
	byPath := make(map[string]*dirState, len(m.dirs))
	for _, ds := range m.dirs {
		byDir[ds] = &checkpointValues{rp: map[TopicPartition]int64{}, hw: map[TopicPartition]int64{},
			lso: map[TopicPartition]int64{}, cleaner: map[TopicPartition]int64{}}
		byPath[filepath.Clean(ds.path)] = ds
	}
	for tp, pd := range m.onDisk {
		ds := byPath[filepath.Dir(pd.Dir)]
		if ds == nil {
			continue
		}
		v := byDir[ds]
		if rp, ok := ds.recoveryPoints[tp]; ok && !ds.recoveryUnknown {
			v.rp[tp] = rp
		}
		if hw, ok := ds.highWatermarks[tp]; ok {
			v.hw[tp] = hw
		}
		if lso, ok := ds.logStarts[tp]; ok {
			v.lso[tp] = lso
		}
		if off, ok := ds.cleanerOffsets[tp]; ok {
			v.cleaner[tp] = off
		}
	}
	for tp, ml := range m.logs {
		v := byDir[ml.dir]
		v.rp[tp], v.hw[tp], v.lso[tp] = ml.log.RecoveryPoint(), ml.log.HighWatermark(), ml.log.LogStartOffset()
		if off := ml.log.cleanerOffset.Load(); off > 0 {
			v.cleaner[tp] = off
		}
	}
	return byDir
}

// Start runs the background loop until Close: Run(context.Background()).
func (m *Manager) Start() { m.Run(context.Background()) }

// Run starts the manager's background goroutines (once; later calls do
// nothing). One flushes logs whose flush.ms elapsed (and rolled segments),
// applies retention every RetentionCheckInterval and writes checkpoints
// every CheckpointInterval; the cleaner compacts the logs that are due
// every LogCleanerBackoff. Both run until ctx is done or Close is called.
func (m *Manager) Run(ctx context.Context) {
	m.runOnce.Do(func() {
		m.mu.Lock()
		if m.stopping {
			m.mu.Unlock()
			return
		}
		m.running = true
		m.mu.Unlock()
		flushC, stopFlush := m.opts.newTicker(m.opts.FlushCheckInterval)
		retentionC, stopRetention := m.opts.newTicker(m.opts.RetentionCheckInterval)
		checkpointC, stopCheckpoint := m.opts.newTicker(m.opts.CheckpointInterval)
		cleanerC, stopCleaner := m.opts.newTicker(m.opts.LogCleanerBackoff)
		var wg sync.WaitGroup
		wg.Go(func() {
			defer stopFlush()
			defer stopRetention()
			defer stopCheckpoint()
			m.loop(ctx, flushC, retentionC, checkpointC)
		})
		wg.Go(func() {
			defer stopCleaner()
			m.cleanerLoop(ctx, cleanerC)
		})
		go func() {
			wg.Wait()
			close(m.done)
		}()
	})
}

// cleanerLoop runs a cleaner pass every LogCleanerBackoff.
func (m *Manager) cleanerLoop(ctx context.Context, cleanerC <-chan time.Time) {
	stopped := func() bool {
		select {
		case <-ctx.Done():
			return true
		case <-m.stop:
			return true
		default:
			return false
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.stop:
			return
		case <-cleanerC:
			m.cleanerPass(m.opts.Now(), stopped)
		}
	}
}

// cleanerPass cleans every compacted log Kafka's cleaner would pick now,
// dirtiest first, then writes the checkpoints (the cleaner offsets moved).
// stopped aborts a cleaning in progress.
func (m *Manager) cleanerPass(now time.Time, stopped func() bool) {
	type candidate struct {
		l     *Log
		ratio float64
	}
	var due []candidate
	for _, l := range m.All() {
		if cfg := l.Config(); !cfg.compacted() {
			continue
		}
		if p, err := l.planCleaning(now); err == nil && p.due() {
			due = append(due, candidate{l, p.ratio()})
		}
	}
	sort.SliceStable(due, func(i, j int) bool { return due[i].ratio > due[j].ratio })
	cleaned := false
	for _, c := range due {
		if stopped() {
			return
		}
		st, _ := c.l.compact(now, stopped, true) // failures are logged by the log
		cleaned = cleaned || st.Cleaned
	}
	if cleaned {
		if err := m.WriteCheckpoints(); err != nil {
			m.logger.Error("storage: writing checkpoints failed", "err", err)
		}
	}
}

func (m *Manager) loop(ctx context.Context, flushC, retentionC, checkpointC <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.stop:
			return
		case <-flushC:
			m.flushPass(m.opts.Now())
		case <-retentionC:
			m.retentionPass(m.opts.Now())
		case <-checkpointC:
			if err := m.WriteCheckpoints(); err != nil {
				m.logger.Error("storage: writing checkpoints failed", "err", err)
			}
		}
	}
}

// flushPass flushes every log whose flush is due. A failed flush takes the
// log's dir offline, as a failed group commit does: after a failed fsync the
// kernel may have dropped the dirty pages, so nothing in the dir can be
// trusted to reach the disk.
func (m *Manager) flushPass(now time.Time) {
	for _, l := range m.allUnsorted() {
		if err := l.flushIfDue(now); err != nil && !errors.Is(err, ErrLogClosed) {
			if ds := m.dirOf(l); ds != nil {
				m.syncFailed(ds, l, err)
			} else {
				m.logger.Error("storage: flush failed", "log", l.Dir(), "err", err)
			}
		}
	}
}

// retentionPass applies retention and producer id expiration to every log.
func (m *Manager) retentionPass(now time.Time) {
	for _, l := range m.All() {
		if _, err := l.DeleteOldSegments(now); err != nil && !errors.Is(err, ErrLogClosed) {
			m.logger.Error("storage: retention failed", "log", l.Dir(), "err", err)
		}
		if m.opts.ProducerIDExpiration > 0 {
			l.ProducerIDExpire(now, m.opts.ProducerIDExpiration)
		}
	}
}

// Close stops the background loop, closes every log (flush, trim,
// producer snapshot), writes the checkpoints and, in each log dir whose logs
// all closed cleanly, the clean-shutdown marker.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.stopping = true
	running := m.running
	m.mu.Unlock()
	m.stopOnce.Do(func() { close(m.stop) })
	if running {
		<-m.done
	}
	m.openMu.Lock()
	defer m.openMu.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	logs := make([]*managedLog, 0, len(m.logs))
	for _, ml := range m.logs {
		logs = append(logs, ml)
	}
	unclean := map[*dirState]bool{}
	for _, ds := range m.dirs {
		if ds.failure != nil {
			unclean[ds] = true
		}
	}
	m.mu.Unlock()
	m.stopSyncers() // logs still queued are flushed by their Close
	var errs []error
	for _, f := range closeLogs(logs, m.opts.LogWorkersPerDir*len(m.dirs)) {
		errs = append(errs, f.err)
		unclean[f.ml.dir] = true
	}
	// The logs closed without syncing (Log.closeUnsynced): one syncfs per
	// log dir makes all of it durable before any checkpoint or marker
	// vouches for it. Should one fail, no checkpoint is written (the last
	// ones on disk are behind, which recovery copes with) and no dir is
	// declared clean.
	var ckErr error
	for _, ds := range m.dirs {
		if ds.failure != nil {
			continue
		}
		if err := m.opts.FS.SyncFS(ds.path); err != nil {
			ckErr = errors.Join(ckErr, diskError("syncfs "+ds.path, err))
		}
	}
	if ckErr == nil {
		ckErr = m.WriteCheckpoints()
	}
	if ckErr != nil {
		errs = append(errs, ckErr)
	}
	m.mu.Lock()
	for _, pd := range m.onDisk {
		// Never opened (so never recovered) in this run: only a dir that was
		// clean at startup may be declared clean again.
		for _, ds := range m.dirs {
			if filepath.Dir(pd.Dir) == filepath.Clean(ds.path) && !ds.clean {
				unclean[ds] = true
			}
		}
	}
	m.mu.Unlock()
	for _, ds := range m.dirs {
		if unclean[ds] || ckErr != nil {
			continue
		}
		if err := writeFileAtomic(m.opts.FS, filepath.Join(ds.path, CleanShutdownFile), encodeCleanShutdown(m.brokerEpoch.Load())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DefaultLogWorkers is how many logs of a log dir are opened or closed at
// once unless num.recovery.threads.per.data.dir says otherwise. Opening a
// log is mostly waiting on its fsyncs, and so was closing one before Close
// deferred them to one syncfs per dir (closeUnsynced); one after the other,
// 10,000 partitions took over a minute to close (make bench-scale: SIGTERM
// to exit 60 s, the harness's kill deadline). Kafka closes (and loads) a dir's logs on a pool of
// num.recovery.threads.per.data.dir threads (default 2; 1 before Kafka
// 4.0); the disk, not the CPU, bounds this, and concurrent fsyncs of one
// file system share its journal commits: opening 1,000 new logs on this
// machine took 11-18 ms each one at a time, 2.1-4.0 ms with 8 at once,
// 1.4-2.6 ms with 16, no better with 32 (broker/metadata.go).
const DefaultLogWorkers = 16

// closeFailure is a log whose Close failed.
type closeFailure struct {
	ml  *managedLog
	err error
}

// closeLogs closes logs, workers at a time, and returns the failures.
func closeLogs(logs []*managedLog, workers int) []closeFailure {
	var (
		mu       sync.Mutex
		failures []closeFailure
		wg       sync.WaitGroup
	)
	next := make(chan *managedLog)
	for range min(workers, len(logs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ml := range next {
				if err := ml.log.closeUnsynced(); err != nil {
					mu.Lock()
					failures = append(failures, closeFailure{ml, err})
					mu.Unlock()
				}
			}
		}()
	}
	for _, ml := range logs {
		next <- ml
	}
	close(next)
	wg.Wait()
	return failures
}
