package broker

import (
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/security/principal"
)

// newConn is an authenticated connection of p from 127.0.0.1.
func newConn(p principal.Principal) *protocol.ConnInfo {
	return protocol.ConnInfoFor(7, "PLAINTEXT", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}, p)
}

// setQuota sets one quota through AlterClientQuotas and checks the answer.
func setQuota(tb testing.TB, br *Broker, key string, value float64, comps ...quota.Component) {
	tb.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.SetVersion(1)
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for _, c := range comps {
		ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ec.Type, ec.Name = c.Type, c.Name
		e.Entity = append(e.Entity, ec)
	}
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = key, value
	e.Ops = append(e.Ops, op)
	req.Entries = append(req.Entries, e)
	resp := runRequest(tb, br, req).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != 1 || resp.Entries[0].ErrorCode != 0 {
		tb.Fatalf("AlterClientQuotas: %+v", resp.Entries)
	}
}

func clientIDComponent(id string) quota.Component {
	return quota.Component{Type: quota.TypeClientID, Name: &id}
}

func TestClientQuotaAPIs(t *testing.T) {
	br := startTestBroker(t)
	setQuota(t, br, quota.ProducerByteRate, 1024, quota.Component{Type: quota.TypeUser}, clientIDComponent("app"))
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.SetVersion(1)
	resp := runRequest(t, br, req).(*kmsg.DescribeClientQuotasResponse)
	if resp.ErrorCode != 0 || len(resp.Entries) != 1 || resp.Entries[0].Values[0].Value != 1024 ||
		resp.Entries[0].Entity[0].Type != quota.TypeUser || resp.Entries[0].Entity[0].Name != nil {
		t.Fatalf("describe %+v", resp)
	}
	// The answer waited for this broker's image: the quota is in force.
	if _, bound, ok := br.quotas.produce.Resolve("anyone", "app"); !ok || bound != 1024 {
		t.Fatalf("quota in force: %v %v", bound, ok)
	}
	bad := kmsg.NewPtrDescribeClientQuotasRequest()
	bad.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: kmsg.QuotasMatchTypeAny}}
	if got := runRequest(t, br, bad).(*kmsg.DescribeClientQuotasResponse); got.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("unknown entity type: %v", kerr.ErrorForCode(got.ErrorCode))
	}
}

// CLUSTER DESCRIBE_CONFIGS and ALTER_CONFIGS, as Kafka's KafkaApis and
// ControllerApis require.
func TestClientQuotaAPIsAuthorize(t *testing.T) {
	br := startTestBroker(t, func(c *config.Config) {
		c.AuthorizerClassName = config.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS"
	})
	alice := principal.User("alice")
	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	if got := runAs(t, br, alice, describe).(*kmsg.DescribeClientQuotasResponse).ErrorCode; got != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe: %v", kerr.ErrorForCode(got))
	}
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	alter.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: quota.TypeUser, Name: kmsg.StringPtr("x")}},
		Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: quota.ProducerByteRate, Value: 1}}}}
	got := runAs(t, br, alice, alter).(*kmsg.AlterClientQuotasResponse)
	if len(got.Entries) != 1 || got.Entries[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter: %+v", got.Entries)
	}
	if br.view().img.ClientQuotas != nil {
		t.Fatal("a refused alter changed the quotas")
	}
}

// A producer over producer_byte_rate gets throttle_time_ms and its
// connection is muted; another client id is not.
func TestProduceQuotaThrottles(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "q")
	setQuota(t, br, quota.ProducerByteRate, 1000, clientIDComponent("fuzz"))
	conn := newConn(principal.Anonymous())
	produce := func() *kmsg.ProduceResponse {
		req := testsupport.ProduceRequest("q", 0, 1, 30000, benchBatch(9, 1000))
		return runOn(t, br, conn, req).(*kmsg.ProduceResponse)
	}
	// 9.3 KB at 1000 B/s, measured over 10 s: within the quota.
	if resp := produce(); resp.ThrottleMillis != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("first produce: throttle %d, %+v", resp.ThrottleMillis, resp.Topics[0].Partitions[0])
	}
	resp := produce()
	// 18.6 KB over 10 s: (1860 - 1000) / 1000 * 10 s.
	if resp.ThrottleMillis < 8000 || resp.ThrottleMillis > 9000 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("second produce: throttle %d ms, want about 8.6 s, error %d", resp.ThrottleMillis, resp.Topics[0].Partitions[0].ErrorCode)
	}
	if muted := conn.MutedFor(); muted < 7*time.Second {
		t.Fatalf("connection muted for %v", muted)
	}
	stats := br.quotas.produce.Stats()
	if len(stats) != 1 || stats[0].ThrottleTimeMs != float64(resp.ThrottleMillis) || stats[0].Tags.ClientID != "fuzz" {
		t.Fatalf("produce quota stats %+v", stats)
	}
}

// A consumer over consumer_byte_rate is answered with no partitions (the
// records stay for later) and throttled; its fetch asks for no more than
// the quota takes in a window.
func TestFetchQuotaAnswersEmpty(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "q")
	for range 4 {
		runRequest(t, br, testsupport.ProduceRequest("q", 0, 1, 30000, benchBatch(10, 1000)))
	}
	setQuota(t, br, quota.ConsumerByteRate, 2000, quota.Component{Type: quota.TypeUser})
	conn := newConn(principal.User("bob"))
	fetch := func(offset int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.MaxBytes = -1, 50<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "q"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes = offset, 50<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return runOn(t, br, conn, req).(*kmsg.FetchResponse)
	}
	first := fetch(0)
	if first.ThrottleMillis != 0 || len(first.Topics) != 1 {
		t.Fatalf("first fetch: throttle %d, %d topics", first.ThrottleMillis, len(first.Topics))
	}
	// The window takes 2000 B/s * 10 s = 20 KB: two of the four batches.
	if got := len(first.Topics[0].Partitions[0].RecordBatches); got > 25_000 || got < 10_000 {
		t.Fatalf("first fetch returned %d bytes, want the 20 KB the quota window takes", got)
	}
	second := fetch(20)
	if second.ThrottleMillis == 0 || len(second.Topics) != 0 {
		t.Fatalf("second fetch: throttle %d, %d topics", second.ThrottleMillis, len(second.Topics))
	}
	if conn.MutedFor() == 0 {
		t.Fatal("throttled consumer not muted")
	}
	// The throttled answer's bytes were taken back: what is measured is
	// what was sent.
	if st := br.quotas.fetch.Stats(); len(st) != 1 || st[0].Rate > 2500 {
		t.Fatalf("fetch quota stats %+v", st)
	}
}

// request_percentage measures handler time; any request can be throttled.
func TestRequestQuotaThrottles(t *testing.T) {
	br := startTestBroker(t)
	setQuota(t, br, quota.RequestPercentage, 0.000001, clientIDComponent("fuzz"))
	conn := newConn(principal.Anonymous())
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	var throttle int32
	for range 3 {
		throttle = runOn(t, br, conn, md).(*kmsg.MetadataResponse).ThrottleMillis
	}
	if throttle == 0 || conn.MutedFor() == 0 {
		t.Fatalf("metadata throttle %d, muted %v", throttle, conn.MutedFor())
	}
	// SASL is exempt.
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	before := br.quotas.request.Stats()[0].Rate
	runOn(t, br, newConn(principal.Anonymous()), hs)
	if after := br.quotas.request.Stats()[0].Rate; after != before {
		t.Fatalf("SASL handshake measured: %v -> %v", before, after)
	}
}

// quotaGauge reads a kbroker_quota_* gauge of one sensor.
func quotaGauge(t *testing.T, br *Broker, name, kind, user, client string) (float64, bool) {
	t.Helper()
	return metricValue(t, br, name, "quota", kind, "user", user, "client_id", client)
}

// The quota metrics per entity: rate, throttle time and bound.
func TestQuotaMetrics(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "q")
	setQuota(t, br, quota.ProducerByteRate, 1000, quota.Component{Type: quota.TypeUser, Name: kmsg.StringPtr("carol")})
	conn := newConn(principal.User("carol"))
	for range 2 {
		runOn(t, br, conn, testsupport.ProduceRequest("q", 0, 1, 30000, benchBatch(9, 1000)))
	}
	rate, ok := quotaGauge(t, br, "kbroker_quota_rate", "produce", "carol", "")
	if !ok || rate < 1500 || rate > 2500 {
		t.Fatalf("byte rate %v %v, want about 1860 B/s", rate, ok)
	}
	if throttle, ok := quotaGauge(t, br, "kbroker_quota_throttle_time_ms", "produce", "carol", ""); !ok || throttle < 7000 {
		t.Fatalf("throttle time %v %v", throttle, ok)
	}
	if bound, ok := quotaGauge(t, br, "kbroker_quota_limit", "produce", "carol", ""); !ok || bound != 1000 {
		t.Fatalf("limit %v %v", bound, ok)
	}
}

// connection_creation_rate of an IP entity (KIP-612): past it, a new
// connection from the address is held unserved and closed.
func TestConnectionRateQuota(t *testing.T) {
	br := startTestBroker(t)
	setQuota(t, br, quota.ConnectionCreationRate, 1, quota.Component{Type: quota.TypeIP, Name: kmsg.StringPtr("127.0.0.1")})
	addr := br.cfg.Listeners[0].Address()
	served := func() bool {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		req := kmsg.NewPtrApiVersionsRequest()
		if _, err := nc.Write(appendSizedFrame(encodeFrame(req))); err != nil {
			return false
		}
		var size [4]byte
		_, err = nc.Read(size[:])
		return err == nil
	}
	// 1 connection/s measured over 10 s: ten are served, the next is not.
	for i := range 10 {
		if !served() {
			t.Fatalf("connection %d not served", i+1)
		}
	}
	if served() {
		t.Fatal("the 11th connection within a second was served")
	}
	if st := br.quotas.conns.Stats(); len(st) != 1 || st[0].IP != "127.0.0.1" || st[0].Quota != 1 {
		t.Fatalf("connection quota stats %+v", st)
	}
}

func appendSizedFrame(frame []byte) []byte {
	out := make([]byte, 4, 4+len(frame))
	out[0], out[1], out[2], out[3] = byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame))
	return append(out, frame...)
}
