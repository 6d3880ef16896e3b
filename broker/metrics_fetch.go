package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/broker/fetchsession"
)

// fetchMetrics are the metrics of fetch sessions and of where consumers
// read (issue 17), beside the request size of every API.
type fetchMetrics struct {
	// requestSize is Kafka's RequestMetrics RequestBytes: its sum over its
	// count is the mean request size, which shows what sessions save.
	requestSize *prometheus.HistogramVec // api
	// consumerBytes are record bytes served to consumers, by whether this
	// broker led the partition or served as a follower (KIP-392).
	consumerBytes *prometheus.CounterVec // topic, replica
	// preferred counts consumer fetches of a partition answered with a
	// preferred read replica instead of records.
	preferred *prometheus.CounterVec // topic
}

func newFetchMetrics(reg *prometheus.Registry) *fetchMetrics {
	m := &fetchMetrics{
		requestSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kbroker_request_size_bytes",
			Help:    "Size of requests received (frame, header included), by API.",
			Buckets: prometheus.ExponentialBuckets(64, 4, 12)}, []string{"api"}),
		consumerBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_consumer_fetch_bytes_total",
			Help: "Record bytes served to consumers, by topic and by this broker's role for the partition (leader, follower)."},
			[]string{"topic", "replica"}),
		preferred: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_fetch_preferred_replica_total",
			Help: "Consumer fetches of a partition answered with a preferred read replica (KIP-392), by topic."}, []string{"topic"}),
	}
	reg.MustRegister(m.requestSize, m.consumerBytes, m.preferred)
	return m
}

// fetchSessionCollector reports the session cache's figures at scrape time
// (Kafka's NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached,
// IncrementalFetchSessionEvictionsPerSec).
type fetchSessionCollector struct {
	cache                         *fetchsession.Cache
	sessions, partitions, evicted *prometheus.Desc
}

func newFetchSessionCollector(cache *fetchsession.Cache) *fetchSessionCollector {
	return &fetchSessionCollector{cache: cache,
		sessions:   prometheus.NewDesc("kbroker_fetch_sessions", "Incremental fetch sessions cached (KIP-227).", nil, nil),
		partitions: prometheus.NewDesc("kbroker_fetch_session_partitions", "Partitions cached in incremental fetch sessions.", nil, nil),
		evicted:    prometheus.NewDesc("kbroker_fetch_session_evictions_total", "Fetch sessions evicted to make room for new ones.", nil, nil),
	}
}

func (c *fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sessions
	ch <- c.partitions
	ch <- c.evicted
}

func (c *fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.cache.Stats()
	ch <- prometheus.MustNewConstMetric(c.sessions, prometheus.GaugeValue, float64(st.Sessions))
	ch <- prometheus.MustNewConstMetric(c.partitions, prometheus.GaugeValue, float64(st.Partitions))
	ch <- prometheus.MustNewConstMetric(c.evicted, prometheus.CounterValue, float64(st.Evictions))
}
