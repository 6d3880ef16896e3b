package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/security/principal"
)

// startShareBroker is a single node with small internal topics and short
// share-group bounds, for the share group tests.
func startShareBroker(t *testing.T) (*Broker, string) {
	t.Helper()
	br := startTestBroker(t, func(c *config.Config) {
		c.OffsetsTopicNumPartitions = 3
		c.ShareCoordinatorStateTopicPartitions = 3
		c.GroupShareMinRecordLockDuration = time.Second
		c.GroupShareMinSessionTimeout = time.Second
		c.GroupShareMinHeartbeatInterval = 100 * time.Millisecond
		c.GroupShareHeartbeatInterval = 500 * time.Millisecond
	})
	return br, br.cfg.ClientListener().Address()
}

func setGroupConfigs(t testing.TB, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("setting group configs: %v (%s)", err, derefString(resp.Resources[0].ErrorMessage))
	}
}

// A share consumer reads every record of a topic produced before it
// joined (share.auto.offset.reset=earliest) and acknowledges them.
func TestShareConsumeAll(t *testing.T) {
	br, addr := startShareBroker(t)
	createTopic(t, br, "q")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfigs(t, cl, "g", "share.auto.offset.reset", "earliest")
	sc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("q"), kgo.ShareGroup("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	seen := map[string]bool{}
	for len(seen) < 100 && ctx.Err() == nil {
		fs := sc.PollFetches(ctx)
		for _, e := range fs.Errors() {
			t.Logf("fetch error: %v", e)
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != 100 {
		t.Fatalf("consumed %d distinct records, want 100", len(seen))
	}
}

// rawShareMember drives the share APIs by hand against an in-process
// broker: who acquired what is then exact.
type rawShareMember struct {
	t            *testing.T
	br           *Broker
	group, id    string
	memberEpoch  int32
	sessionEpoch int32
	topicID      [16]byte
}

func newRawShareMember(t *testing.T, br *Broker, group, id, topic string) *rawShareMember {
	t.Helper()
	m := &rawShareMember{t: t, br: br, group: group, id: id, topicID: br.view().img.Topics[topic].ID}
	deadline := time.Now().Add(10 * time.Second)
	// FindCoordinator creates __consumer_offsets; the group's partition is
	// then loaded.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	runRequest(t, br, fc)
	hb := m.heartbeat(0, topic)
	for retriableStateCode(hb.ErrorCode) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // polling the coordinator's load, with a deadline
		hb = m.heartbeat(0, topic)
	}
	if hb.ErrorCode != 0 {
		t.Fatalf("%s joining: %v", id, kerr.ErrorForCode(hb.ErrorCode))
	}
	// Heartbeat until the partition is assigned (the share state is
	// initialized off the group's goroutine first).
	for hb.Assignment == nil || len(hb.Assignment.TopicPartitions) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never assigned", id)
		}
		time.Sleep(20 * time.Millisecond) // polling the coordinator, with a deadline
		hb = m.heartbeat(m.memberEpoch)
	}
	return m
}

func (m *rawShareMember) heartbeat(epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	resp := runRequest(m.t, m.br, req).(*kmsg.ShareGroupHeartbeatResponse)
	if resp.ErrorCode == 0 {
		m.memberEpoch = resp.MemberEpoch
	}
	return resp
}

// ackSpec is one acknowledgement batch: offsets and type.
type ackSpec struct {
	first, last int64
	typ         int8
}

// fetch sends a ShareFetch of partition 0 in the member's session (opening
// it first), with acks piggy-backed.
func (m *rawShareMember) fetch(maxRecords int32, acks ...ackSpec) *kmsg.ShareFetchResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = &m.group, &m.id
	req.ShareSessionEpoch = m.sessionEpoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 100, 1, 1<<20, maxRecords, maxRecords
	req.ShareAcquireMode = 1 // record limit: exactly maxRecords
	rp := kmsg.NewShareFetchRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
	resp := runRequest(m.t, m.br, req).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode == 0 {
		m.sessionEpoch++
	}
	return resp
}

// acknowledge sends a ShareAcknowledge in the member's session.
func (m *rawShareMember) acknowledge(acks ...ackSpec) *kmsg.ShareAcknowledgeResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID = &m.group, &m.id
	req.ShareSessionEpoch = m.sessionEpoch
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{rp}}}
	resp := runRequest(m.t, m.br, req).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode == 0 {
		m.sessionEpoch++
	}
	return resp
}

// acquired lists the offsets a fetch handed out, with their delivery counts.
func acquired(t *testing.T, resp *kmsg.ShareFetchResponse) map[int64]int16 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	out := map[int64]int16{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("share fetch partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
			for _, ar := range p.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					out[o] = ar.DeliveryCount
				}
			}
		}
	}
	return out
}

func ackCode(resp *kmsg.ShareFetchResponse) int16 {
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			return p.AcknowledgeErrorCode
		}
	}
	return -1
}

// shareTopic makes a one-partition topic with n records and a share group
// reading it from the start with the given configs.
func shareTopic(t *testing.T, br *Broker, addr, topic, group string, n int, groupConfigs ...string) {
	t.Helper()
	createTopic(t, br, topic)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(context.Background(), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfigs(t, cl, group, append([]string{"share.auto.offset.reset", "earliest"}, groupConfigs...)...)
}

const (
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
)

// Issue 16's bad input: acknowledging records never acquired, or acquired
// by another member, gets INVALID_RECORD_STATE and changes nothing (the
// member holding them acknowledges them afterwards); a heartbeat with a
// stale member epoch gets FENCED_MEMBER_EPOCH; session misuse gets Kafka's
// session errors.
func TestShareBadAcknowledgements(t *testing.T) {
	br, addr := startShareBroker(t)
	shareTopic(t, br, addr, "bad", "g", 10)
	a := newRawShareMember(t, br, "g", "member-a", "bad")
	b := newRawShareMember(t, br, "g", "member-b", "bad")
	if got := acquired(t, a.fetch(5)); len(got) != 5 || got[0] != 1 || got[4] != 1 {
		t.Fatalf("a acquired %v", got)
	}
	if got := acquired(t, b.fetch(3)); len(got) != 3 || got[5] != 1 || got[7] != 1 {
		t.Fatalf("b acquired %v", got)
	}
	// a acknowledges b's records, records past the end of what was ever
	// fetched (INVALID_REQUEST, as Kafka's "offsets not found"), and a
	// record b released (available: nobody holds it).
	if code := ackCode(a.fetch(0, ackSpec{5, 6, ackAccept})); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of another member's records: %v", kerr.ErrorForCode(code))
	}
	if code := ackCode(a.fetch(0, ackSpec{8, 9, ackAccept})); code != kerr.InvalidRequest.Code {
		t.Fatalf("ack of records never fetched: %v", kerr.ErrorForCode(code))
	}
	if r := b.acknowledge(ackSpec{7, 7, ackRelease}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("b's release: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if code := ackCode(a.fetch(0, ackSpec{7, 7, ackAccept})); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack of an available record: %v", kerr.ErrorForCode(code))
	}
	// One bad batch fails the partition's whole acknowledgement: a's
	// own records stay acquired by a.
	if code := ackCode(a.fetch(0, ackSpec{0, 4, ackAccept}, ackSpec{5, 5, ackAccept})); code != kerr.InvalidRecordState.Code {
		t.Fatalf("mixed acknowledgement: %v", kerr.ErrorForCode(code))
	}
	if r := b.acknowledge(ackSpec{5, 6, ackAccept}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("b's own acknowledgement: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if r := a.acknowledge(ackSpec{0, 4, ackAccept}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("a's own acknowledgement after the refused ones: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// Acknowledging twice: the records are no longer acquired.
	if r := a.acknowledge(ackSpec{0, 0, ackAccept}); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("second acknowledgement: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// Malformed batches: INVALID_REQUEST.
	if code := ackCode(a.fetch(0, ackSpec{4, 3, ackAccept})); code != kerr.InvalidRequest.Code {
		t.Fatalf("first > last: %v", kerr.ErrorForCode(code))
	}
	if code := ackCode(a.fetch(0, ackSpec{0, 0, 9})); code != kerr.InvalidRequest.Code {
		t.Fatalf("unknown type: %v", kerr.ErrorForCode(code))
	}
	// Stale member epoch.
	if hb := a.heartbeat(a.memberEpoch + 5); hb.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("future member epoch: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	// Session errors, and the member id check.
	stale := *a
	stale.sessionEpoch += 7
	if r := stale.fetch(1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong session epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	ghost := *a
	ghost.id, ghost.sessionEpoch = "ghost", 3
	if r := ghost.fetch(1); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	opening := *a
	opening.id, opening.sessionEpoch = "opening", 0
	if r := opening.fetch(1, ackSpec{8, 8, ackAccept}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acknowledgements opening a session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	long := *a
	long.id = "0123456789012345678901234567890123456789"
	if r := long.fetch(1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("member id of 40 characters: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The rest is still there for the group: 7 a second time, 8 and 9
	// never acquired.
	if got := acquired(t, b.fetch(10)); len(got) != 3 || got[7] != 2 || got[8] != 1 || got[9] != 1 {
		t.Fatalf("b's last fetch %v", got)
	}
}

// RELEASE hands a record to the next member (delivery count 2), REJECT
// archives it for good, and a record released delivery.count.limit times
// is archived (a poison record).
func TestShareReleaseRejectDeliveryLimit(t *testing.T) {
	br, addr := startShareBroker(t)
	shareTopic(t, br, addr, "rel", "g", 3, "share.delivery.count.limit", "2")
	a := newRawShareMember(t, br, "g", "member-a", "rel")
	b := newRawShareMember(t, br, "g", "member-b", "rel")
	if got := acquired(t, a.fetch(3)); len(got) != 3 {
		t.Fatalf("a acquired %v", got)
	}
	// 0 released, 1 rejected, 2 released: b gets 0 and 2 again.
	if r := a.acknowledge(ackSpec{0, 0, ackRelease}, ackSpec{1, 1, ackReject}, ackSpec{2, 2, ackRelease}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release/reject: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	got := acquired(t, b.fetch(3))
	if len(got) != 2 || got[0] != 2 || got[2] != 2 {
		t.Fatalf("after release and reject b acquired %v, want 0 and 2 delivered a second time", got)
	}
	// 0 is accepted; 2 is released at the limit: archived, never again.
	if r := b.acknowledge(ackSpec{0, 0, ackAccept}, ackSpec{2, 2, ackRelease}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept/release: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if got := acquired(t, a.fetch(3)); len(got) != 0 {
		t.Fatalf("archived records delivered again: %v", got)
	}
	// Everything is done with: the start offset is past all three.
	d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	d.Version = 1
	d.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}}
	resp := runRequest(t, br, d).(*kmsg.DescribeShareGroupOffsetsResponse)
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != 3 || g.Topics[0].Partitions[0].Lag != 0 {
		t.Fatalf("described %+v", resp.Groups)
	}
	// The metrics tell the same story: 5 deliveries, 1 accepted, 2
	// released, 1 rejected and 2 archived (the rejection and the poison
	// record), no lag; two members.
	for event, want := range map[string]float64{"acquired": 5, "accepted": 1, "released": 2, "rejected": 1, "archived": 2, "lock_timeout": 0} {
		if got, ok := metricValue(t, br, "kbroker_share_group_records_total", "group", "g", "event", event); !ok || got != want {
			t.Errorf("kbroker_share_group_records_total{event=%q} = %v (%v), want %v", event, got, ok, want)
		}
		if got, _ := metricValue(t, br, "kbroker_share_partition_records_total", "group", "g", "topic", "rel", "partition", "0", "event", event); got != want {
			t.Errorf("kbroker_share_partition_records_total{event=%q} = %v, want %v", event, got, want)
		}
	}
	if got, ok := metricValue(t, br, "kbroker_share_group_lag", "group", "g"); !ok || got != 0 {
		t.Errorf("kbroker_share_group_lag = %v (%v)", got, ok)
	}
	if got, _ := metricValue(t, br, "kbroker_share_group_members", "group", "g"); got != 2 {
		t.Errorf("kbroker_share_group_members = %v", got)
	}
	if got, _ := metricValue(t, br, "kbroker_share_partition_start_offset", "group", "g", "topic", "rel", "partition", "0"); got != 3 {
		t.Errorf("kbroker_share_partition_start_offset = %v", got)
	}
	if got, _ := metricValue(t, br, "kbroker_share_sessions"); got != 2 {
		t.Errorf("kbroker_share_sessions = %v", got)
	}
}

// With the StandardAuthorizer the share APIs check as Kafka: the group
// (READ for heartbeats, fetches, acknowledgements and altering offsets,
// DESCRIBE for describing, DELETE for deleting offsets), the topics, and
// CLUSTER_ACTION for the share coordinator's inter-broker APIs and SHARE
// coordinator lookups.
func TestShareAPIsAuthorize(t *testing.T) {
	br := startTestBroker(t, func(c *config.Config) {
		c.AuthorizerClassName = config.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS"
	})
	createTopic(t, br, "a")
	alice := principal.User("alice")
	group := kmsg.StringPtr("g")
	member := kmsg.StringPtr("m")

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "g", "m", []string{"a"}
	if code := runAs(t, br, alice, hb).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("heartbeat: %v", kerr.ErrorForCode(code))
	}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID = group, member
	if code := runAs(t, br, alice, sf).(*kmsg.ShareFetchResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share fetch: %v", kerr.ErrorForCode(code))
	}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = group, member, 1
	if code := runAs(t, br, alice, sa).(*kmsg.ShareAcknowledgeResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share acknowledge: %v", kerr.ErrorForCode(code))
	}
	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.GroupIDs = []string{"g"}
	if code := runAs(t, br, alice, sd).(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("share group describe: %v", kerr.ErrorForCode(code))
	}
	do := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	do.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}}
	if code := runAs(t, br, alice, do).(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("describe share group offsets: %v", kerr.ErrorForCode(code))
	}
	ao := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	ao.GroupID = "g"
	if code := runAs(t, br, alice, ao).(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alter share group offsets: %v", kerr.ErrorForCode(code))
	}
	delo := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	delo.GroupID = "g"
	if code := runAs(t, br, alice, delo).(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode; code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("delete share group offsets: %v", kerr.ErrorForCode(code))
	}
	write := kmsg.NewPtrWriteShareGroupStateRequest()
	write.GroupID = "g"
	write.Topics = []kmsg.WriteShareGroupStateRequestTopic{{Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	if code := runAs(t, br, alice, write).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("write share group state: %v", kerr.ErrorForCode(code))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(6)
	fc.CoordinatorType = 2
	fc.CoordinatorKeys = []string{"g:AAAAAAAAAAAAAAAAAAAAAA:0"}
	if code := runAs(t, br, alice, fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("find share coordinator: %v", kerr.ErrorForCode(code))
	}
	// A malformed SHARE key, by a principal that may ask.
	fc.CoordinatorKeys = []string{"g:not-a-topic-id:0", "g:AAAAAAAAAAAAAAAAAAAAAA"}
	for _, c := range runRequest(t, br, fc).(*kmsg.FindCoordinatorResponse).Coordinators {
		if c.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("malformed share key %q: %v", c.Key, kerr.ErrorForCode(c.ErrorCode))
		}
	}
}

// GROUP configs: DescribeConfigs lists every share.* config with its
// source; IncrementalAlterConfigs checks values against the broker's
// group.share.* bounds and refuses unknown names with INVALID_CONFIG.
func TestShareGroupConfigs(t *testing.T) {
	br, addr := startShareBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	setGroupConfigs(t, cl, "g", "share.record.lock.duration.ms", "5000", "share.isolation.level", "read_committed")
	describe := func(names ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(4)
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g", ConfigNames: names}}
		resp := runRequest(t, br, req).(*kmsg.DescribeConfigsResponse)
		if code := resp.Resources[0].ErrorCode; code != 0 {
			t.Fatalf("describe: %v", kerr.ErrorForCode(code))
		}
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range resp.Resources[0].Configs {
			out[c.Name] = c
		}
		return out
	}
	all := describe()
	if len(all) != 8 {
		t.Fatalf("described %d configs, want the 8 share.* ones: %v", len(all), all)
	}
	if c := all["share.record.lock.duration.ms"]; *c.Value != "5000" || c.Source != kmsg.ConfigSource(sourceGroupConfig) || c.IsDefault {
		t.Errorf("lock duration %+v", c)
	}
	if c := all["share.delivery.count.limit"]; *c.Value != "5" || c.Source != kmsg.ConfigSource(sourceDefault) || !c.IsDefault {
		t.Errorf("delivery count limit %+v", c)
	}
	if got := describe("share.isolation.level"); len(got) != 1 || *got["share.isolation.level"].Value != "read_committed" {
		t.Errorf("filtered describe %v", got)
	}
	if cfg := br.shares.config("g"); cfg.RecordLockDuration != 5*time.Second || !cfg.ReadCommitted {
		t.Errorf("effective config %+v", cfg)
	}
	for _, bad := range [][2]string{
		{"share.record.lock.duration.ms", "999999"},  // above group.share.max.record.lock.duration.ms
		{"share.auto.offset.reset", "by_duration:x"}, // not an ISO-8601 duration
		{"share.no.such.config", "1"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: bad[0], Value: kmsg.StringPtr(bad[1])}}}}
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Resources[0]; r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil {
			t.Errorf("%s=%s: %v", bad[0], bad[1], kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if c := describe("share.record.lock.duration.ms")["share.record.lock.duration.ms"]; *c.Value != "5000" {
		t.Errorf("a refused change applied: %s", *c.Value)
	}
}

// Share groups in the classic group APIs, as Kafka answers: ListGroups
// lists them with type "share" (and filters by it), DescribeGroups and a
// JoinGroup of their id answer GROUP_ID_NOT_FOUND, DeleteGroups deletes an
// empty one with its share state.
func TestShareGroupsInGroupAPIs(t *testing.T) {
	br, addr := startShareBroker(t)
	shareTopic(t, br, addr, "lg", "sg", 1)
	m := newRawShareMember(t, br, "sg", "member-a", "lg")

	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(5)
	list.TypesFilter = []string{"share"}
	lg := runRequest(t, br, list).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "sg" || lg.Groups[0].GroupType != "share" || lg.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups(share): %+v", lg.Groups)
	}
	list.TypesFilter = []string{"classic"}
	if lg := runRequest(t, br, list).(*kmsg.ListGroupsResponse); len(lg.Groups) != 0 {
		t.Fatalf("ListGroups(classic): %+v", lg.Groups)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	dg.Groups = []string{"sg"}
	if g := runRequest(t, br, dg).(*kmsg.DescribeGroupsResponse).Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups: %+v", g)
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(9)
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "sg", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if code := runRequest(t, br, join).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("JoinGroup of a share group id: %v", kerr.ErrorForCode(code))
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.SetVersion(2)
	del.Groups = []string{"sg"}
	if code := runRequest(t, br, del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a group with a member: %v", kerr.ErrorForCode(code))
	}
	if hb := m.heartbeat(-1); hb.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	if code := runRequest(t, br, del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteGroups: %v", kerr.ErrorForCode(code))
	}
	sd := kmsg.NewPtrShareGroupDescribeRequest()
	sd.GroupIDs = []string{"sg"}
	if code := runRequest(t, br, sd).(*kmsg.ShareGroupDescribeResponse).Groups[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("ShareGroupDescribe after delete: %v", kerr.ErrorForCode(code))
	}
	// The share state went with it: reading it is refused (uninitialized).
	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "sg"
	read.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: -1}}}}
	if code := runRequest(t, br, read).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("share state after delete: %v", kerr.ErrorForCode(code))
	}
}

// metricValue scrapes the broker's registry for name with the given
// labels (pairs; others may be there too), gauge or counter.
func metricValue(t *testing.T, br *Broker, name string, labels ...string) (float64, bool) {
	t.Helper()
	families, err := br.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// The persister splits each state request (83-87) into one request per key
// and puts the answers back in request order, each with its partition.
func TestStatePersisterFanOut(t *testing.T) {
	br, _ := startShareBroker(t)
	createTopic(t, br, "fan-a")
	createTopic(t, br, "fan-b")
	img := br.view().img
	a, b := img.Topics["fan-a"].ID, img.Topics["fan-b"].ID
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := br.shares.persist

	// The five requests share a layout: one JSON fills any of them, and
	// one reads the answers back. Partition 3 of fan-a does not exist: its
	// key fails alone.
	fill := func(req kmsg.Request, partition string) {
		t.Helper()
		js := fmt.Sprintf(`{"GroupID":"fan","Topics":[{"TopicID":%s,"Partitions":[{"Partition":3,%[3]s},{"Partition":0,%[3]s}]},{"TopicID":%[2]s,"Partitions":[{"Partition":0,%[3]s}]}]}`,
			jsonOf(t, a), jsonOf(t, b), partition)
		if err := json.Unmarshal([]byte(js), req); err != nil {
			t.Fatal(err)
		}
	}
	type answers struct {
		Topics []struct {
			TopicID    [16]byte
			Partitions []struct {
				Partition   int32
				ErrorCode   int16
				StartOffset int64
			}
		}
	}
	// failedStart is the failed key's StartOffset: -1 where the answer
	// has one.
	check := func(api string, resp kmsg.Response, failedStart, startOffset int64) {
		t.Helper()
		var got answers
		if err := json.Unmarshal([]byte(jsonOf(t, resp)), &got); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("{[{%v [{3 %d %d} {0 0 %d}]} {%v [{0 0 %[4]d}]}]}", a, kerr.UnknownTopicOrPartition.Code, failedStart, startOffset, b)
		if fmt.Sprint(got) != want {
			t.Errorf("%s: %v, want %s", api, got, want)
		}
	}

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	fill(init, `"StateEpoch":1,"StartOffset":7`)
	ir, _ := p.InitializeShareGroupState(ctx, init)
	check("initialize", ir, 0, 0)
	write := kmsg.NewPtrWriteShareGroupStateRequest()
	fill(write, `"StateEpoch":1,"StartOffset":9,"LeaderEpoch":0`)
	wr, _ := p.WriteShareGroupState(ctx, write)
	check("write", wr, 0, 0)
	read := kmsg.NewPtrReadShareGroupStateRequest()
	fill(read, `"LeaderEpoch":0`)
	rr, _ := p.ReadShareGroupState(ctx, read)
	check("read", rr, -1, 9)
	summary := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	fill(summary, `"LeaderEpoch":0`)
	sr, _ := p.ReadShareGroupStateSummary(ctx, summary)
	check("summary", sr, -1, 9)
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	fill(del, `"StateEpoch":1`)
	dr, _ := p.DeleteShareGroupState(ctx, del)
	check("delete", dr, 0, 0)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}
