package broker

import (
	"context"
	"reflect"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

func apiName(key int16) string {
	if name := kmsg.NameForKey(key); name != "" {
		return name
	}
	return strconv.Itoa(int(key))
}

func errorName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return strconv.Itoa(int(code))
}

// responseErrorCodes lists the non-zero error codes of a response: per
// partition for the data APIs, the top-level one otherwise.
func (m *metrics) responseErrorCodes(resp kmsg.Response) []int16 {
	var out []int16
	add := func(c int16) {
		if c != 0 {
			out = append(out, c)
		}
	}
	switch r := resp.(type) {
	case vectorFetch:
		return m.responseErrorCodes(r.FetchResponse)
	case *kmsg.ProduceResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		add(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			add(t.ErrorCode)
		}
	case *kmsg.OffsetCommitResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	default:
		add(m.topLevelErrorCode(resp))
	}
	return out
}

// topLevelErrorCode reads a response's ErrorCode field by reflection; the
// field's index per response type is cached in m.errorCodeField.
func (m *metrics) topLevelErrorCode(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0
	}
	t := v.Elem().Type()
	idx, ok := m.errorCodeField.Load(t)
	if !ok {
		i := -1
		if f, found := t.FieldByName("ErrorCode"); found && f.Type.Kind() == reflect.Int16 && len(f.Index) == 1 {
			i = f.Index[0]
		}
		m.errorCodeField.Store(t, i)
		idx = i
	}
	if idx.(int) < 0 {
		return 0
	}
	return int16(v.Elem().Field(idx.(int)).Int())
}

// stateCollector computes the state gauges at scrape time.
type stateCollector struct {
	b *Broker

	underReplicated, underMinISR, offline, leaders, partitions *prometheus.Desc
	offlineWaiting, withELR                                    *prometheus.Desc
	followerLag, logSize, logSegments                          *prometheus.Desc
	activeController, raftTerm, raftCommit, raftApplied        *prometheus.Desc
	connections, groups                                        *prometheus.Desc
	offlineLogs, offlineLogDirs, mappedSegments, capacity      *prometheus.Desc
	groupCommitRounds, groupCommitFlushes, logFlushes, syncs   *prometheus.Desc
}

func newStateCollector(b *Broker) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{
		b:               b,
		underReplicated: d("kbroker_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set."),
		underMinISR:     d("kbroker_under_min_isr_partitions", "Partitions led here whose ISR is smaller than min.insync.replicas."),
		offline:         d("kbroker_offline_partitions", "Partitions without a leader (cluster-wide, from the metadata image)."),
		offlineWaiting: d("kbroker_offline_partitions_waiting",
			"Partitions without a leader by what they wait for (cluster-wide): an eligible leader replica (elr, KIP-966), "+
				"their last known leader (last_known_leader, ISR and ELR empty) or an ISR member (isr).", "waiting_for"),
		withELR: d("kbroker_eligible_leader_replicas_partitions",
			"Partitions with eligible leader replicas (cluster-wide): their ISR is below min.insync.replicas and replicas that left it can still lead."),
		leaders:          d("kbroker_leader_partitions", "Partitions this broker leads."),
		partitions:       d("kbroker_partitions", "Partition replicas this broker holds."),
		followerLag:      d("kbroker_follower_lag_messages", "How far a follower's log end is behind the leader's, for partitions led here.", "topic", "partition", "follower"),
		logSize:          d("kbroker_log_size_bytes", "Size of a partition's log on disk.", "topic", "partition"),
		logSegments:      d("kbroker_log_segments", "Segments of a partition's log.", "topic", "partition"),
		activeController: d("kbroker_controller_active", "1 if this node is the active controller."),
		raftTerm:         d("kbroker_raft_term", "Current Raft term of the metadata quorum."),
		raftCommit:       d("kbroker_raft_commit_index", "Raft commit index of the metadata log."),
		raftApplied:      d("kbroker_raft_applied_index", "Raft index applied to this node's metadata image."),
		connections:      d("kbroker_connections", "Open client connections."),
		groups:           d("kbroker_groups", "Groups this broker coordinates, by state.", "state"),
		offlineLogs: d("kbroker_storage_offline_partitions",
			"Partition replicas here whose log cannot be opened, by reason (too_many_open_files, too_many_mappings, disk_full, log_dir_failure, storage_error).", "reason"),
		offlineLogDirs: d("kbroker_storage_offline_log_dirs", "Log dirs taken offline by an I/O error."),
		mappedSegments: d("kbroker_storage_mapped_segments", "Inactive segments mapped for reading (three memory mappings each)."),
		capacity: d("kbroker_storage_partition_capacity",
			"Partitions the open-file limit and vm.max_map_count hold (-1: unknown)."),
		groupCommitRounds: d("kbroker_storage_group_commit_rounds_total",
			"Group commit rounds (flush.messages=1): each flushes every durable log appended since the last one."),
		groupCommitFlushes: d("kbroker_storage_group_commit_log_flushes_total", "Logs flushed by group commit rounds."),
		logFlushes: d("kbroker_storage_log_flushes_total",
			"Log flushes of any kind that completed (group commit, flush.ms, segment rolls, truncation, close)."),
		syncs: d("kbroker_storage_syncs_total",
			"Syncs storage issued to the file system: data (fsync of a file, msync of a mapped range) and dir (a directory's fsync).", "kind"),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.underReplicated, c.underMinISR, c.offline, c.offlineWaiting, c.withELR, c.leaders, c.partitions,
		c.followerLag, c.logSize, c.logSegments, c.activeController, c.raftTerm, c.raftCommit, c.raftApplied,
		c.connections, c.groups, c.offlineLogs, c.offlineLogDirs, c.mappedSegments, c.capacity,
		c.groupCommitRounds, c.groupCommitFlushes, c.logFlushes, c.syncs} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if b.replicas != nil {
		var underRep, underMin, leaders, total float64
		for _, p := range b.replicas.Partitions() {
			s := p.Snapshot()
			total++
			part := strconv.Itoa(int(p.Index))
			gauge(c.logSize, float64(s.LogSize), p.Topic, part)
			gauge(c.logSegments, float64(s.Segments), p.Topic, part)
			if s.Role != replication.RoleLeader {
				continue
			}
			leaders++
			if len(s.ISR) < len(s.Replicas) {
				underRep++
			}
			if int32(len(s.ISR)) < s.MinISR {
				underMin++
			}
			for id, leo := range s.FollowerLEOs {
				lag := s.LogEndOffset
				if leo >= 0 {
					lag = s.LogEndOffset - leo
				}
				gauge(c.followerLag, float64(lag), p.Topic, part, strconv.Itoa(int(id)))
			}
		}
		gauge(c.underReplicated, underRep)
		gauge(c.underMinISR, underMin)
		gauge(c.leaders, leaders)
		gauge(c.partitions, total)
	}
	if b.logs != nil {
		c.collectStorage(ch, gauge)
	}
	c.collectOffline(gauge)
	if b.ctrl != nil {
		active := 0.0
		if b.ctrl.IsActive() {
			active = 1
		}
		gauge(c.activeController, active)
		rs := b.ctrl.RaftStats()
		gauge(c.raftTerm, float64(rs.Term))
		gauge(c.raftCommit, float64(rs.CommitIndex))
		gauge(c.raftApplied, float64(rs.AppliedIndex))
	}
	if b.server != nil {
		gauge(c.connections, float64(b.server.NumConns()))
	}
	if b.groups != nil {
		counts := map[string]float64{}
		req := kmsg.NewPtrListGroupsRequest()
		req.SetVersion(5)
		for _, g := range b.groups.coord.ListGroups(context.Background(), req).Groups {
			counts[g.GroupState]++
		}
		for state, n := range counts {
			gauge(c.groups, n, state)
		}
	}
}

// collectStorage reports the log manager's health: partitions whose log
// cannot be opened (every reason, zeros included, for alerts), offline log
// dirs, mapped segments and how many partitions the limits hold.
func (c *stateCollector) collectStorage(ch chan<- prometheus.Metric, gauge func(*prometheus.Desc, float64, ...string)) {
	st := c.b.logs.Stats()
	for _, reason := range storage.OfflineReasons() {
		gauge(c.offlineLogs, float64(st.OfflineLogs[reason]), reason)
	}
	gauge(c.offlineLogDirs, float64(st.OfflineLogDirs))
	gauge(c.mappedSegments, float64(st.MappedSegments))
	gauge(c.capacity, float64(st.PartitionsThatFit))
	ss := c.b.logs.SyncStats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.groupCommitRounds, ss.GroupCommitRounds)
	counter(c.groupCommitFlushes, ss.GroupCommitLogFlushes)
	counter(c.logFlushes, ss.LogFlushes)
	counter(c.syncs, ss.DataSyncs, "data")
	counter(c.syncs, ss.DirSyncs, "dir")
}

// collectOffline reports the partitions without a leader, and what each
// waits for, and those with eligible leader replicas, from the image.
func (c *stateCollector) collectOffline(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	var offline, withELR float64
	waiting := map[string]float64{"elr": 0, "last_known_leader": 0, "isr": 0}
	for _, t := range c.b.view().img.Topics {
		for _, p := range t.Partitions {
			if len(p.ELR) > 0 {
				withELR++
			}
			if p.Leader >= 0 {
				continue
			}
			offline++
			switch {
			case len(p.ISR) == 0 && len(p.ELR) > 0:
				waiting["elr"]++
			case len(p.ISR) == 0 && len(p.LastKnownELR) > 0:
				waiting["last_known_leader"]++
			default:
				waiting["isr"]++
			}
		}
	}
	gauge(c.offline, offline)
	gauge(c.withELR, withELR)
	for reason, n := range waiting {
		gauge(c.offlineWaiting, n, reason)
	}
}
