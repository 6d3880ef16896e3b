package broker

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/replication"
)

// quotaCollector exposes, per quota sensor (a user and/or client id, as
// the quota that applies keys them), Kafka's quota metrics: the measured
// rate (byte-rate of Produce and Fetch, request-time of Request,
// mutation-rate of ControllerMutation), the average throttle time, the
// bound, and the controller mutation tokens left. Computed at scrape time
// from the managers; a sensor unused for an hour is gone.
type quotaCollector struct {
	b                             *Broker
	rate, throttle, bound, tokens *prometheus.Desc
	replRate, replBound           *prometheus.Desc
	connRate, connBound           *prometheus.Desc
}

func newQuotaCollector(b *Broker) *quotaCollector {
	labels := []string{"quota", "user", "client_id"}
	return &quotaCollector{
		b: b,
		rate: prometheus.NewDesc("kbroker_quota_rate",
			"Measured rate per quota sensor over the quota window: bytes/s (produce, fetch), percent of a thread (request), partitions/s (controller_mutation).", labels, nil),
		throttle: prometheus.NewDesc("kbroker_quota_throttle_time_ms",
			"Average throttle time given to the sensor's clients (ms), over the last minute.", labels, nil),
		bound: prometheus.NewDesc("kbroker_quota_limit",
			"The quota that applies to the sensor (same unit as kbroker_quota_rate); absent when unlimited.", labels, nil),
		tokens: prometheus.NewDesc("kbroker_quota_mutation_tokens",
			"Partitions the sensor may still create or delete at once (KIP-599 token bucket; on the active controller).", labels[1:], nil),
		replRate: prometheus.NewDesc("kbroker_replication_throttled_rate",
			"Bytes/s of throttled replication traffic (leader: sent to followers, follower: fetched), by side.", []string{"side"}, nil),
		connRate: prometheus.NewDesc("kbroker_quota_connection_creation_rate",
			"New connections per second from a client address with a connection_creation_rate quota.", []string{"ip"}, nil),
		connBound: prometheus.NewDesc("kbroker_quota_connection_creation_rate_limit",
			"The connection_creation_rate that applies to the address.", []string{"ip"}, nil),
		replBound: prometheus.NewDesc("kbroker_replication_throttled_rate_limit",
			"leader.replication.throttled.rate / follower.replication.throttled.rate in force; absent when unlimited.", []string{"side"}, nil),
	}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rate, c.throttle, c.bound, c.tokens, c.replRate, c.replBound, c.connRate, c.connBound} {
		ch <- d
	}
}

// quotaLabel is a kind's label value.
var quotaLabel = map[quota.Kind]string{
	quota.Produce: "produce", quota.Fetch: "fetch", quota.Request: "request", quota.ControllerMutation: "controller_mutation",
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	managers := c.b.quotas.managers()
	if c.b.ctrl != nil {
		managers = append(managers, c.b.ctrl.MutationQuotas())
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
	}
	for _, s := range c.b.quotas.conns.Stats() {
		gauge(c.connRate, s.Rate, s.IP)
		gauge(c.connBound, s.Quota, s.IP)
	}
	for side, q := range map[string]*replication.ReplicaQuota{"leader": c.b.throttles.leader, "follower": c.b.throttles.follower} {
		rate, bound := q.Stats()
		gauge(c.replRate, rate, side)
		gauge(c.replBound, bound, side)
	}
	for _, m := range managers {
		for _, s := range m.Stats() {
			kind := quotaLabel[s.Kind]
			gauge(c.rate, s.Rate, kind, s.Tags.User, s.Tags.ClientID)
			gauge(c.throttle, s.ThrottleTimeMs, kind, s.Tags.User, s.Tags.ClientID)
			gauge(c.bound, s.Quota, kind, s.Tags.User, s.Tags.ClientID)
			if s.Kind == quota.ControllerMutation && !math.IsInf(s.Quota, 1) {
				gauge(c.tokens, s.Tokens, s.Tags.User, s.Tags.ClientID)
			}
		}
	}
}
