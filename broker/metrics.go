package broker

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security/acl"
)

// metrics are the broker's Prometheus metrics, on their own registry (no
// global state). Counters on the request, produce and fetch paths are
// updated where things happen; gauges that describe state (partitions,
// logs, Raft, groups) are computed at scrape time from the components, so
// they cost nothing between scrapes.
type metrics struct {
	reg *prometheus.Registry

	requests      *prometheus.CounterVec   // api, version
	requestErrors *prometheus.CounterVec   // api, error
	latency       *prometheus.HistogramVec // api, version
	bytesIn       *prometheus.CounterVec   // topic
	recordsIn     *prometheus.CounterVec   // topic
	bytesOut      *prometheus.CounterVec   // topic
	recordsOut    *prometheus.CounterVec   // topic
	isrShrinks    prometheus.Counter
	isrExpands    prometheus.Counter
	elections     *prometheus.CounterVec // type: clean, elr, unclean
	rebalances    prometheus.Counter
	authFailures  *prometheus.CounterVec // listener, mechanism
	denials       *prometheus.CounterVec // api, resource_type
	fetch         *fetchMetrics          // metrics_fetch.go
	// groupCommitRound is each group commit round's duration (durable
	// acks: one disk flush latency, shared by every append it covers).
	groupCommitRound prometheus.Histogram

	errorCodeField sync.Map // reflect.Type of a response -> index of its ErrorCode field, -1 if none

	// perVersion caches each API version's request counter and latency
	// histogram: WithLabelValues hashes and looks up its labels under a
	// lock, twice per request otherwise.
	perVersion [apiCacheKeys][apiCacheVersions]atomic.Pointer[versionMetrics]
}

// The API keys and versions whose metrics are cached; others (none today)
// are looked up on every request.
const (
	apiCacheKeys     = 128
	apiCacheVersions = 32
)

// versionMetrics are one API version's request metrics.
type versionMetrics struct {
	requests prometheus.Counter
	latency  prometheus.Observer
	size     prometheus.Observer // the API's request size (metrics_fetch.go)
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_requests_total",
		Help: "Requests handled, by API and version."}, []string{"api", "version"})
	m.requestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_request_errors_total",
		Help: "Error codes answered (top level or per partition), by API and error."}, []string{"api", "error"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kbroker_request_duration_seconds",
		Help:    "Time from a request's arrival to its response being written, by API and version.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14)}, []string{"api", "version"})
	m.bytesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_topic_bytes_in_total",
		Help: "Record batch bytes appended by producers, by topic."}, []string{"topic"})
	m.recordsIn = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_topic_records_in_total",
		Help: "Records appended by producers, by topic."}, []string{"topic"})
	m.bytesOut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_topic_bytes_out_total",
		Help: "Record batch bytes served to consumers and followers, by topic."}, []string{"topic"})
	m.recordsOut = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_topic_records_out_total",
		Help: "Records served to consumers and followers, by topic."}, []string{"topic"})
	m.isrShrinks = prometheus.NewCounter(prometheus.CounterOpts{Name: "kbroker_isr_shrinks_total",
		Help: "ISR shrinks committed for partitions this broker leads."})
	m.isrExpands = prometheus.NewCounter(prometheus.CounterOpts{Name: "kbroker_isr_expands_total",
		Help: "ISR expansions committed for partitions this broker leads."})
	m.elections = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_leader_elections_total",
		Help: "Leader elections seen in the metadata log (cluster-wide): clean (from the ISR), elr (from the eligible leader replicas, KIP-966) or unclean."}, []string{"type"})
	m.rebalances = prometheus.NewCounter(prometheus.CounterOpts{Name: "kbroker_group_rebalances_total",
		Help: "Classic-protocol rebalances completed by groups this broker coordinates."})
	m.authFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_failed_authentication_total",
		Help: "Failed authentications (TLS handshakes and SASL exchanges), by listener and mechanism."}, []string{"listener", "mechanism"})
	m.denials = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_authorization_denied_total",
		Help: "Operations the authorizer denied on resources requests named, by API and resource type."}, []string{"api", "resource_type"})
	m.groupCommitRound = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kbroker_storage_group_commit_round_seconds",
		Help:    "Duration of group commit rounds (flush.messages=1: the flush every acknowledgement of the round waited for).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16)})
	m.reg.MustRegister(m.requests, m.requestErrors, m.latency, m.bytesIn, m.recordsIn, m.bytesOut, m.recordsOut,
		m.isrShrinks, m.isrExpands, m.elections, m.rebalances, m.authFailures, m.denials, m.groupCommitRound,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.fetch = newFetchMetrics(m.reg)
	return m
}

// observe records one answered request (protocol.ServerOptions.Observe).
func (m *metrics) observe(req *protocol.Request, resp kmsg.Response, dur time.Duration) {
	vm := m.versionMetrics(req.Key, req.Version)
	vm.requests.Inc()
	vm.latency.Observe(dur.Seconds())
	vm.size.Observe(float64(req.Size))
	if resp == nil {
		return
	}
	for _, code := range m.responseErrorCodes(resp) {
		m.requestErrors.WithLabelValues(apiName(req.Key), errorName(code)).Inc()
	}
	if jg, ok := resp.(*kmsg.JoinGroupResponse); ok && jg.ErrorCode == 0 && jg.MemberID != "" && jg.MemberID == jg.LeaderID {
		m.rebalances.Inc() // one leader answer per completed rebalance
	}
}

// onAuthFailure counts a failed authentication (protocol.ServerOptions).
func (m *metrics) onAuthFailure(f protocol.AuthFailure) {
	m.authFailures.WithLabelValues(f.Conn.Listener, f.Mechanism).Inc()
}

// onDeny counts a denial of an operation the request named
// (acl.Options.OnDeny); filtering decisions are not counted.
func (m *metrics) onDeny(req acl.Request, act acl.Action) {
	if act.LogIfDenied {
		m.denials.WithLabelValues(req.API, act.Type.String()).Inc()
	}
}

// versionMetrics returns the request metrics of an API version, cached for
// the keys and versions Kafka has.
func (m *metrics) versionMetrics(key, version int16) *versionMetrics {
	cached := key >= 0 && key < apiCacheKeys && version >= 0 && version < apiCacheVersions
	if cached {
		if vm := m.perVersion[key][version].Load(); vm != nil {
			return vm
		}
	}
	api, v := apiName(key), strconv.Itoa(int(version))
	vm := &versionMetrics{requests: m.requests.WithLabelValues(api, v), latency: m.latency.WithLabelValues(api, v),
		size: m.fetch.requestSize.WithLabelValues(api)}
	if cached {
		m.perVersion[key][version].Store(vm)
	}
	return vm
}

// onISRChange counts committed ISR changes (replication.ManagerOptions).
func (m *metrics) onISRChange(_ *replication.Partition, shrink bool) {
	if shrink {
		m.isrShrinks.Inc()
	} else {
		m.isrExpands.Inc()
	}
}

// serveMetrics runs /metrics, /healthz, /readyz and the console (/ui) on
// metrics.listen until ctx ends. An empty address disables it.
func (b *Broker) serveMetrics(addr string) error {
	if addr == "" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(b.metrics.reg, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if reason := b.notReady(); reason != "" {
			http.Error(w, reason, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	closeConsole := func() {}
	if b.cfg.ConsoleEnable && b.cfg.HasRole("broker") { // the read-only web console at /ui
		closeConsole = b.mountConsole(mux, l.Addr())
	}
	b.httpServer = srv
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer closeConsole()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			b.logger.Error("metrics listener stopped", "err", err)
		}
	}()
	b.logger.Info("metrics serving", "addr", l.Addr().String())
	return nil
}

// notReady says why the broker is not ready, or "" when it is: it must have
// started serving, be registered and unfenced in the image it has applied,
// and have caught up with the metadata log.
func (b *Broker) notReady() string {
	if !b.serving.Load() {
		return "starting"
	}
	if !b.cfg.HasRole("broker") {
		return ""
	}
	br, ok := b.view().img.Brokers[b.cfg.NodeID]
	switch {
	case !ok:
		return "not registered"
	case br.Fenced:
		return "fenced by the controller"
	}
	return ""
}

func (b *Broker) stopMetrics() {
	if b.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b.httpServer.Shutdown(ctx)
	}
}

// onGroupCommitRound is storage's OnGroupCommitRound.
func (m *metrics) onGroupCommitRound(d time.Duration, _ int) {
	m.groupCommitRound.Observe(d.Seconds())
}

// throughput is a registry of the topic byte and record counters alone,
// which the console samples every few seconds: gathering the whole
// registry would collect every partition's state metrics each time, the
// largest idle cost of a broker of thousands of partitions after its replica
// fetches (issue 20, part 3).
func (m *metrics) throughput() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.bytesIn, m.recordsIn, m.bytesOut, m.recordsOut)
	return reg
}
