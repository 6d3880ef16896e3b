package broker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/replication"
)

// txnCollector reports transactions at scrape time: the coordinator's
// counters (of the __transaction_state partitions this broker leads, since
// it started) and, per partition led here, how far the last stable offset
// is behind the high watermark (a transaction open long holds
// read_committed consumers back by that many offsets).
type txnCollector struct {
	b *Broker

	open, commits, aborts, timedOut, fenced, lsoLag *prometheus.Desc

	completions, completionSecs, markerSecs, waits *prometheus.Desc
}

func newTxnCollector(b *Broker) *txnCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &txnCollector{
		b:           b,
		open:        d("kbroker_transactions_open", "Transactions open or completing, of the transactional ids this broker coordinates."),
		commits:     d("kbroker_transactions_committed_total", "Transactions this broker's coordinator committed."),
		aborts:      d("kbroker_transactions_aborted_total", "Transactions this broker's coordinator aborted, timed out ones included."),
		timedOut:    d("kbroker_transactions_timed_out_total", "Transactions this broker's coordinator aborted because they outlived transaction.timeout.ms."),
		fenced:      d("kbroker_transactions_producers_fenced_total", "Producers fenced by InitProducerId or a transaction timeout."),
		completions: d("kbroker_transactions_completed_total", "Transactions this broker's coordinator completed (CompleteCommit or CompleteAbort committed)."),
		completionSecs: d("kbroker_transactions_completion_seconds_total",
			"Time from PrepareCommit/PrepareAbort committed to CompleteCommit/CompleteAbort committed, summed over the completed transactions."),
		markerSecs: d("kbroker_transactions_markers_seconds_total",
			"Time from PrepareCommit/PrepareAbort committed to every marker written, summed over the completed transactions."),
		waits: d("kbroker_transactions_concurrent_waits_total",
			"Requests that met a state change of their transactional id in flight (a write, markers) and waited for it rather than answer CONCURRENT_TRANSACTIONS at once."),
		lsoLag: d("kbroker_last_stable_offset_lag_messages",
			"High watermark minus last stable offset of a partition led here: offsets read_committed consumers wait for.", "topic", "partition"),
	}
}

func (c *txnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.commits, c.aborts, c.timedOut, c.fenced, c.lsoLag, c.completions, c.completionSecs, c.markerSecs, c.waits} {
		ch <- d
	}
}

func (c *txnCollector) Collect(ch chan<- prometheus.Metric) {
	if c.b.txns != nil {
		st := c.b.txns.coord.Stats()
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(st.Open))
		for d, v := range map[*prometheus.Desc]int64{c.commits: st.Commits, c.aborts: st.Aborts, c.timedOut: st.TimedOut, c.fenced: st.Fenced,
			c.completions: st.Completions, c.waits: st.ConcurrentWaits} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
		}
		ch <- prometheus.MustNewConstMetric(c.completionSecs, prometheus.CounterValue, st.CompletionTime.Seconds())
		ch <- prometheus.MustNewConstMetric(c.markerSecs, prometheus.CounterValue, st.MarkersTime.Seconds())
	}
	if c.b.replicas == nil {
		return
	}
	for _, p := range c.b.replicas.Partitions() {
		s := p.Snapshot()
		if s.Role == replication.RoleLeader {
			ch <- prometheus.MustNewConstMetric(c.lsoLag, prometheus.GaugeValue, float64(s.HighWatermark-s.LastStableOffset),
				p.Topic, strconv.Itoa(int(p.Index)))
		}
	}
}
