package broker

// Client quota enforcement (Kafka's KafkaApis with its quota managers):
// every request is measured by its connection's (user, client id), the
// user being the authenticated principal's name (ANONYMOUS on PLAINTEXT).
//
//   - Produce: the request's bytes against producer_byte_rate, recorded
//     when the answer is ready (after the append, and after replication
//     for acks=all).
//   - Fetch from a consumer: the answer's bytes against consumer_byte_rate.
//     A fetch never asks for more than the quota can take in its window
//     (maxValueInQuotaWindow), and a throttled fetch is answered empty,
//     its bytes taken back.
//   - Every request but SASL and replica fetches: the handler's time
//     against request_percentage (ClientRequestQuotaManager); not for
//     acks=0 produce.
//   - CreateTopics, DeleteTopics, CreatePartitions: forwarded with the
//     caller's identity (controller.WithCaller), the controller measures
//     controller_mutation_rate and answers with a throttle time.
//
// Over a quota, the answer carries throttle_time_ms (the longest of the
// throttles), and the connection is muted for that long (KIP-219,
// protocol.ConnInfo.Throttle); the quota that caused it records the
// throttle in its throttle-time average.

import (
	"context"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/sampled"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
)

// clientQuotas are this broker's client quota managers.
type clientQuotas struct {
	produce, fetch, request *quota.Manager
	// conns is connection_creation_rate per client address (KIP-612),
	// asked by the protocol server about each new connection.
	conns *quota.ConnectionManager
}

func newClientQuotas(cfg *config.Config, now func() time.Time) *clientQuotas {
	w := sampled.Config{Samples: int(cfg.QuotaWindowNum), Window: cfg.QuotaWindowSize}
	return &clientQuotas{
		produce: quota.NewManager(quota.Produce, w, now),
		fetch:   quota.NewManager(quota.Fetch, w, now),
		request: quota.NewManager(quota.Request, w, now),
		conns:   quota.NewConnectionManager(w, now),
	}
}

func (q *clientQuotas) managers() []*quota.Manager {
	return []*quota.Manager{q.produce, q.fetch, q.request}
}

// setQuotas takes the quotas of a new metadata image.
func (q *clientQuotas) setQuotas(qs quota.Quotas) {
	for _, m := range q.managers() {
		m.SetQuotas(qs)
	}
	q.conns.SetQuotas(qs)
}

// throttleConnection is protocol.ServerOptions.ThrottleConnection: the
// time to hold a new connection from addr unserved, 0 to serve it.
func (q *clientQuotas) throttleConnection(addr net.Addr) time.Duration {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return q.conns.Record(tcp.IP)
	}
	return 0
}

// applyQuotas hands a new image's client quotas to the managers: this
// broker's and its controller node's (for the throttle-time metrics of
// controller mutations).
func (b *Broker) applyQuotas(img *controller.Image) {
	b.quotas.setQuotas(img.ClientQuotas)
	if b.ctrl != nil {
		b.ctrl.MutationQuotas().SetQuotas(img.ClientQuotas)
	}
}

// clientID is who a request is measured as.
type clientID struct{ user, client string }

func identityOf(req *protocol.Request) clientID {
	return clientID{user: req.Conn.Principal().Name, client: req.ClientIDString()}
}

// Keys whose answers say how long the controller's mutation quota wants
// the client to wait.
const (
	createTopicsKey     = 19
	deleteTopicsKey     = 20
	createPartitionsKey = 37
)

func isMutation(key int16) bool {
	return key == createTopicsKey || key == deleteTopicsKey || key == createPartitionsKey
}

// withQuotas runs one request's handler under the client quotas (the
// dispatcher's around hook).
func (b *Broker) withQuotas(ctx context.Context, req *protocol.Request, handle handlerFunc) protocol.Response {
	q := b.quotas
	mutation := isMutation(req.Key)
	fetch, consumer := req.Body.(*kmsg.FetchRequest)
	replicaFetch := false
	if consumer {
		replicaID, _ := replication.FetchReplica(fetch)
		consumer, replicaFetch = replicaID < 0, replicaID >= 0
	}
	if replicaFetch && b.throttles.leaderActive() {
		// Exempt from client quotas; the leader replication throttle
		// measures it.
		return whenReady(handle(ctx, req), func(body kmsg.Response) kmsg.Response {
			b.recordLeaderThrottled(body)
			return body
		})
	}
	if !mutation && !q.produce.Enabled() && !q.fetch.Enabled() && !q.request.Enabled() {
		return handle(ctx, req)
	}
	id := identityOf(req)
	if consumer {
		capFetch(fetch, q.fetch.MaxValueInQuotaWindow(id.user, id.client))
	}
	start := time.Now()
	resp := handle(ctx, req)
	requestMs := 0
	if b.requestQuotaApplies(req, replicaFetch) {
		pct := float64(time.Since(start).Nanoseconds()) * nanosToPercent
		requestMs = q.request.RecordAndGetThrottleTime(id.user, id.client, pct)
	}
	t := throttler{b: b, req: req, id: id, requestMs: requestMs}
	switch {
	case req.Key == 0:
		return t.produce(resp)
	case consumer:
		return t.fetch(fetch, resp)
	case mutation:
		return t.mutation(resp)
	}
	return t.other(resp)
}

// nanosToPercent converts handler time to request_percentage units: a
// percent of one thread per second (ClientRequestQuotaManager).
const nanosToPercent = 100.0 / float64(time.Second)

// requestQuotaApplies: SASL is exempt (Kafka handles it before its quota
// managers), replica fetches are (cluster actions), and so is acks=0
// produce.
func (b *Broker) requestQuotaApplies(req *protocol.Request, replicaFetch bool) bool {
	if !b.quotas.request.Enabled() || replicaFetch {
		return false
	}
	switch req.Key {
	case protocol.SaslHandshakeKey, protocol.SaslAuthenticateKey:
		return false
	case 0:
		return req.Body.(*kmsg.ProduceRequest).Acks != 0
	}
	return true
}

// capFetch bounds a consumer fetch to what its quota takes in one window,
// as Kafka's handleFetchRequest does with maxQuotaWindowBytes.
func capFetch(r *kmsg.FetchRequest, maxBytes float64) {
	if math.IsInf(maxBytes, 1) || maxBytes >= math.MaxInt32 {
		return
	}
	limit := int32(max(maxBytes, 1))
	if r.MaxBytes <= 0 || r.MaxBytes > limit {
		r.MaxBytes = limit
	}
}

// throttler applies one request's quotas to its answer.
type throttler struct {
	b         *Broker
	req       *protocol.Request
	id        clientID
	requestMs int
}

// whenReady runs apply on the answer once it exists: now, or after a
// deferred answer is computed.
func whenReady(resp protocol.Response, apply func(kmsg.Response) kmsg.Response) protocol.Response {
	switch {
	case resp.Later != nil:
		later := resp.Later
		resp.Later = func(ctx context.Context) kmsg.Response { return apply(later(ctx)) }
	case resp.Body != nil:
		resp.Body = apply(resp.Body)
	}
	return resp
}

// produce records the request's bytes against producer_byte_rate as soon
// as it is handled (appended), and mutes the connection then: Kafka reads
// one request of a connection at a time, so its throttle mutes the
// connection before the next request is read; here, waiting for acks=all
// to record would let the reader take in and append the requests a
// client pipelines meanwhile. The answer carries the throttle when it is
// ready (acks=0 has none).
func (t throttler) produce(resp protocol.Response) protocol.Response {
	bandwidthMs := t.b.quotas.produce.RecordAndGetThrottleTime(t.id.user, t.id.client, float64(t.req.Size-4))
	ms := t.throttle(bandwidthMs, quota.Produce)
	if resp.NoReply || ms == 0 {
		return resp
	}
	return whenReady(resp, func(body kmsg.Response) kmsg.Response { return setThrottle(body, ms) })
}

// fetch records a consumer's answer against consumer_byte_rate; a
// throttled fetch is answered with no partitions (its bytes unrecorded),
// as Kafka's FetchContext.getThrottledResponse.
func (t throttler) fetch(r *kmsg.FetchRequest, resp protocol.Response) protocol.Response {
	m := t.b.quotas.fetch
	return whenReady(resp, func(body kmsg.Response) kmsg.Response {
		size := float64(fetchResponseSize(body))
		bandwidthMs := m.RecordAndGetThrottleTime(t.id.user, t.id.client, size)
		if max(bandwidthMs, t.requestMs) == 0 {
			return body
		}
		m.Unrecord(t.id.user, t.id.client, size)
		return t.finish(throttledFetch(r, body), bandwidthMs, quota.Fetch)
	})
}

// mutation mutes the connection for the controller's throttle time, as
// Kafka's sendForwardedResponse does.
func (t throttler) mutation(resp protocol.Response) protocol.Response {
	if resp.Later != nil {
		later, caller := resp.Later, controller.Caller{Principal: t.req.Conn.Principal(), ClientID: t.id.client}
		resp.Later = func(ctx context.Context) kmsg.Response { return later(controller.WithCaller(ctx, caller)) }
	}
	return whenReady(resp, func(body kmsg.Response) kmsg.Response {
		ms := 0
		if tr, ok := body.(kmsg.ThrottleResponse); ok {
			ms = int(throttleOf(tr))
		}
		return t.finish(body, ms, quota.ControllerMutation)
	})
}

// other answers carry the request quota's throttle only.
func (t throttler) other(resp protocol.Response) protocol.Response {
	if t.requestMs == 0 {
		return resp
	}
	return whenReady(resp, func(body kmsg.Response) kmsg.Response {
		return t.finish(body, 0, quota.Request)
	})
}

// finish sets the longest of the throttles in body and applies it
// (throttle).
func (t throttler) finish(body kmsg.Response, kindMs int, kind quota.Kind) kmsg.Response {
	return setThrottle(body, t.throttle(kindMs, kind))
}

// throttle mutes the connection for the longest of the throttles and
// records it against the quota that caused it: kind's when its throttle
// is longer than the request quota's. It returns the throttle, in ms.
func (t throttler) throttle(kindMs int, kind quota.Kind) int {
	ms := max(kindMs, t.requestMs)
	if ms <= 0 {
		return 0
	}
	t.req.Conn.Throttle(time.Duration(ms) * time.Millisecond)
	m := t.b.quotas.request
	if kindMs > t.requestMs {
		m = t.b.quotaManager(kind)
	}
	m.Throttle(t.id.user, t.id.client, ms)
	return ms
}

// setThrottle raises body's throttle_time_ms to ms (body may be nil: no
// answer, or have no such field).
func setThrottle(body kmsg.Response, ms int) kmsg.Response {
	if ms <= 0 {
		return body
	}
	if st, ok := body.(kmsg.SetThrottleResponse); ok {
		if tr, ok := body.(kmsg.ThrottleResponse); !ok || int(throttleOf(tr)) < ms {
			st.SetThrottle(int32(ms))
		}
	}
	return body
}

func throttleOf(tr kmsg.ThrottleResponse) int32 {
	ms, _ := tr.Throttle()
	return ms
}

// quotaManager returns the manager of kind (the node's for controller
// mutations).
func (b *Broker) quotaManager(kind quota.Kind) *quota.Manager {
	switch kind {
	case quota.Produce:
		return b.quotas.produce
	case quota.Fetch:
		return b.quotas.fetch
	case quota.ControllerMutation:
		if b.ctrl != nil {
			return b.ctrl.MutationQuotas()
		}
	}
	return b.quotas.request
}

// fetchResponseSize is a fetch answer's encoded size with its response
// header, counted without copying its records.
func fetchResponseSize(body kmsg.Response) int {
	r := fetchResponseOf(body)
	if r == nil {
		return len(body.AppendTo(nil))
	}
	n := 4 // correlation id
	if r.IsFlexible() {
		n++
	}
	for _, v := range (vectorFetch{FetchResponse: r}).AppendVectors(nil, nil) {
		n += len(v.B)
	}
	return n
}

// throttledFetch is the answer to a throttled fetch: no partitions, the
// session (if any) kept.
func throttledFetch(r *kmsg.FetchRequest, body kmsg.Response) kmsg.Response {
	out := r.ResponseKind().(*kmsg.FetchResponse)
	if real := fetchResponseOf(body); real != nil {
		out.SessionID = real.SessionID
	}
	return out
}

// fetchResponseOf is the FetchResponse a fetch answer is (plain or
// written with writev), nil for another answer.
func fetchResponseOf(body kmsg.Response) *kmsg.FetchResponse {
	switch v := body.(type) {
	case vectorFetch:
		return v.FetchResponse
	case *kmsg.FetchResponse:
		return v
	}
	return nil
}
