package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// shareCollector computes the share group metrics (KIP-932) at scrape
// time: per share group this broker coordinates its members and state;
// per share-partition this broker leads (and summed per group) the
// records acquired, accepted, released, rejected and archived, the lock
// timeouts, the in-flight records by state and the lag (records not yet
// acknowledged or archived, from the start offset to the high watermark);
// the share sessions; the share coordinator's partitions and records.
// The per share-partition counters start again with each leadership.
type shareCollector struct {
	b *Broker

	groups, members                            *prometheus.Desc
	groupRecords, groupLag                     *prometheus.Desc
	partRecords, partLag, partInFlight, partSO *prometheus.Desc
	sessions                                   *prometheus.Desc
	statePartitions, stateWritten, statePruned *prometheus.Desc
}

func newShareCollector(b *Broker) *shareCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &shareCollector{
		b:      b,
		groups: d("kbroker_share_groups", "Share groups this broker coordinates, by state.", "state"),
		members: d("kbroker_share_group_members",
			"Members of a share group this broker coordinates.", "group"),
		groupRecords: d("kbroker_share_group_records_total",
			"Records of a share group's partitions led here, by event: acquired, accepted, released, rejected, archived (rejected ones included), lock_timeout.", "group", "event"),
		groupLag: d("kbroker_share_group_lag",
			"Records of a share group's partitions led here not yet acknowledged or archived.", "group"),
		partRecords: d("kbroker_share_partition_records_total",
			"Records of a share-partition led here, by event (as kbroker_share_group_records_total), since its leadership began.", "group", "topic", "partition", "event"),
		partLag: d("kbroker_share_partition_lag",
			"Records of a share-partition not yet acknowledged or archived: high watermark - start offset - completed in-flight records.", "group", "topic", "partition"),
		partInFlight: d("kbroker_share_partition_in_flight_records",
			"In-flight records of a share-partition, by state: acquired, available, complete (acknowledged or archived, ahead of the start offset).", "group", "topic", "partition", "state"),
		partSO:   d("kbroker_share_partition_start_offset", "The share-partition start offset.", "group", "topic", "partition"),
		sessions: d("kbroker_share_sessions", "Open share sessions (ShareFetch) on this broker."),
		statePartitions: d("kbroker_share_state_partitions",
			"__share_group_state partitions this broker's share coordinator leads and has loaded."),
		stateWritten: d("kbroker_share_state_records_written_total", "Records the share coordinator wrote to __share_group_state."),
		statePruned:  d("kbroker_share_state_records_pruned_total", "__share_group_state offsets the share coordinator pruned."),
	}
}

func (c *shareCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.groups, c.members, c.groupRecords, c.groupLag, c.partRecords, c.partLag,
		c.partInFlight, c.partSO, c.sessions, c.statePartitions, c.stateWritten, c.statePruned} {
		ch <- d
	}
}

func (c *shareCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.b.shares
	if s == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	states := map[string]float64{}
	for _, g := range s.groups.Summaries() {
		states[g.State]++
		gauge(c.members, float64(g.Members), g.ID)
	}
	for state, n := range states {
		gauge(c.groups, n, state)
	}
	type totals struct {
		events [6]int64
		lag    int64
	}
	events := [6]string{"acquired", "accepted", "released", "rejected", "archived", "lock_timeout"}
	perGroup := map[string]*totals{}
	for k, st := range s.parts.Stats() {
		part := strconv.Itoa(int(k.Partition))
		counts := [6]int64{st.AcquiredTotal, st.AcceptedTotal, st.ReleasedTotal, st.RejectedTotal, st.ArchivedTotal, st.LockTimeoutsTotal}
		g := perGroup[k.Group]
		if g == nil {
			g = &totals{}
			perGroup[k.Group] = g
		}
		for i, n := range counts {
			counter(c.partRecords, float64(n), k.Group, k.Topic, part, events[i])
			g.events[i] += n
		}
		g.lag += st.Lag
		gauge(c.partLag, float64(st.Lag), k.Group, k.Topic, part)
		gauge(c.partSO, float64(st.StartOffset), k.Group, k.Topic, part)
		gauge(c.partInFlight, float64(st.Acquired), k.Group, k.Topic, part, "acquired")
		gauge(c.partInFlight, float64(st.Available), k.Group, k.Topic, part, "available")
		gauge(c.partInFlight, float64(st.Complete), k.Group, k.Topic, part, "complete")
	}
	for group, t := range perGroup {
		for i, n := range t.events {
			counter(c.groupRecords, float64(n), group, events[i])
		}
		gauge(c.groupLag, float64(t.lag), group)
	}
	gauge(c.sessions, float64(s.parts.Sessions().Len()))
	st := s.state.Stats()
	gauge(c.statePartitions, float64(st.Partitions))
	counter(c.stateWritten, float64(st.RecordsWritten))
	counter(c.statePruned, float64(st.RecordsPruned))
}
