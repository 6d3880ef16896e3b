package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseOffset(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want OffsetSpec
	}{
		{"start", OffsetSpec{Kind: OffsetStart}},
		{"earliest", OffsetSpec{Kind: OffsetStart}},
		{"END", OffsetSpec{Kind: OffsetEnd}},
		{"latest", OffsetSpec{Kind: OffsetEnd}},
		{"42", OffsetSpec{Kind: OffsetExact, N: 42}},
		{"+5", OffsetSpec{Kind: OffsetAfterStart, N: 5}},
		{"-10", OffsetSpec{Kind: OffsetBeforeEnd, N: 10}},
		{"@1714557600000", OffsetSpec{Kind: OffsetTime, Millis: 1714557600000}},
		{"@2024-05-01T10:00:00Z", OffsetSpec{Kind: OffsetTime, Millis: 1714557600000}},
		{"@2024-05-01", OffsetSpec{Kind: OffsetTime, Millis: 1714521600000}},
		{"@-2h", OffsetSpec{Kind: OffsetTime, Millis: now.Add(-2 * time.Hour).UnixMilli()}},
	}
	for _, c := range cases {
		got, err := ParseOffset(c.in, now)
		if err != nil || got != c.want {
			t.Errorf("ParseOffset(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "abc", "1.5", "+-3", "--1", "@", "@yesterday", "@-x", "@-0s", "+"} {
		if _, err := ParseOffset(bad, now); err == nil || !strings.Contains(err.Error(), "malformed offset") {
			t.Errorf("ParseOffset(%q) err = %v, want malformed offset", bad, err)
		}
	}
}

func TestPick(t *testing.T) {
	times := kadm.ListedOffsets{"t": {0: {Topic: "t", Offset: 7}, 1: {Topic: "t", Partition: 1, Offset: -1}}}
	cases := []struct {
		spec OffsetSpec
		p    int32
		want int64
	}{
		{OffsetSpec{Kind: OffsetStart}, 0, 10},
		{OffsetSpec{Kind: OffsetEnd}, 0, 20},
		{OffsetSpec{Kind: OffsetExact, N: 15}, 0, 15},
		{OffsetSpec{Kind: OffsetExact, N: 3}, 0, 10},   // below the log start: clamped
		{OffsetSpec{Kind: OffsetExact, N: 300}, 0, 20}, // past the end: clamped
		{OffsetSpec{Kind: OffsetAfterStart, N: 4}, 0, 14},
		{OffsetSpec{Kind: OffsetBeforeEnd, N: 4}, 0, 16},
		{OffsetSpec{Kind: OffsetBeforeEnd, N: 400}, 0, 10},
		{OffsetSpec{Kind: OffsetTime}, 0, 10}, // 7 is below the start
		{OffsetSpec{Kind: OffsetTime}, 1, 20}, // no record that late: the end
	}
	for _, c := range cases {
		if got := pick(c.spec, 10, 20, times, "t", c.p); got != c.want {
			t.Errorf("pick(%v, p%d) = %d, want %d", c.spec, c.p, got, c.want)
		}
	}
}

func TestParseMoveAndPlan(t *testing.T) {
	m, err := ParseMove("orders.v2:3=2,3,1")
	if err != nil || m.Topic != "orders.v2" || m.Partition != 3 || !slices.Equal(m.Replicas, []int32{2, 3, 1}) {
		t.Fatalf("ParseMove = %+v, %v", m, err)
	}
	for _, bad := range []string{"orders", "orders:x=1", "orders:0=", "orders:0=1,1", ":0=1", "orders:-1=1", "orders:0=a"} {
		if _, err := ParseMove(bad); err == nil {
			t.Errorf("ParseMove(%q) accepted", bad)
		}
	}
	plan, err := ParsePlan([]byte(`{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[4,5]}]}`))
	if err != nil || len(plan) != 1 || plan[0].Partition != 1 || !slices.Equal(plan[0].Replicas, []int32{4, 5}) {
		t.Fatalf("ParsePlan = %+v, %v", plan, err)
	}
	for _, bad := range []string{`{`, `{"partitions":[]}`, `{"partitions":[{"topic":"t","partition":0}]}`} {
		if _, err := ParsePlan([]byte(bad)); err == nil {
			t.Errorf("ParsePlan(%s) accepted", bad)
		}
	}
}

// state builds a cluster state from "topic/p leader replicas isr" lines.
func state(brokers []int32, minISR map[string]int, parts ...string) *State {
	md := kadm.Metadata{Controller: 1, Topics: kadm.TopicDetails{}}
	for _, id := range brokers {
		md.Brokers = append(md.Brokers, kadm.BrokerDetail{NodeID: id})
	}
	for _, line := range parts {
		var topic string
		var p, leader int32
		var reps, isr string
		fmt.Sscanf(strings.Replace(line, "/", " ", 1), "%s %d %d %s %s", &topic, &p, &leader, &reps, &isr)
		td := md.Topics[topic]
		td.Topic = topic
		if td.Partitions == nil {
			td.Partitions = kadm.PartitionDetails{}
		}
		td.Partitions[p] = kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, Replicas: idList(reps), ISR: idList(isr)}
		md.Topics[topic] = td
	}
	return &State{Metadata: md, MinISR: minISR}
}

func idList(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		var n int32
		if _, err := fmt.Sscan(f, &n); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func TestAssess(t *testing.T) {
	healthy := Assess(state([]int32{1, 2, 3}, map[string]int{"a": 2}, "a/0 1 1,2,3 1,2,3", "a/1 2 2,3,1 3,2,1"))
	if !healthy.Healthy || len(healthy.Reasons) != 0 {
		t.Fatalf("healthy cluster assessed %+v", healthy)
	}
	h := Assess(state([]int32{1, 2}, map[string]int{"a": 2, "b": 1},
		"a/0 1 1,2,3 1,2", "a/1 2 2,3 2", "b/0 -1 3 3"))
	if h.Healthy {
		t.Fatal("a cluster with broker 3 down assessed healthy")
	}
	refs := func(rs []PartitionRef) string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s/%d", r.Topic, r.Partition))
		}
		return strings.Join(out, " ")
	}
	if got := refs(h.UnderReplicated); got != "a/0 a/1" {
		t.Errorf("under-replicated %q", got)
	}
	if got := refs(h.UnderMinISR); got != "a/1" {
		t.Errorf("under min ISR %q", got)
	}
	if got := refs(h.Offline); got != "b/0" {
		t.Errorf("offline %q", got)
	}
	if !slices.Equal(h.Down, []int32{3}) {
		t.Errorf("brokers down %v, want [3]", h.Down)
	}
	if len(h.Reasons) != 4 {
		t.Errorf("reasons %q", h.Reasons)
	}
}

func TestAssessRisks(t *testing.T) {
	st := state([]int32{1, 2, 3}, map[string]int{"a": 2, "solo": 1},
		"a/0 1 1,2,3 1,2,3", // fine
		"a/1 1 1,2,3 1,2,3", // records above the HW
		"a/2 2 2,3,1 2",     // ISR of one: below min ISR too
		"a/3 -1 3,1,2 3",    // offline
		"solo/0 1 1 1",      // replication factor 1
	)
	stats := map[tp]PartitionInfo{
		{"a", 0}: {HighWatermark: 10, LogEnd: 10},
		{"a", 1}: {HighWatermark: 10, LogEnd: 13},
		{"a", 2}: {HighWatermark: 5, LogEnd: 5},
	}
	r := AssessRisks(st, stats)
	reasons := func(rs []Risk) map[string]string {
		out := map[string]string{}
		for _, x := range rs {
			out[fmt.Sprintf("%s/%d", x.Topic, x.Partition)] = x.Reason
		}
		return out
	}
	lose, refuse := reasons(r.LoseOnAcks1), reasons(r.RefuseAcksAll)
	if len(lose) != 3 || !strings.Contains(lose["a/1"], "3 records on leader 1") ||
		!strings.Contains(lose["a/2"], "ISR is only the leader") || !strings.Contains(lose["solo/0"], "replication factor 1") {
		t.Errorf("lose on acks=1: %v", lose)
	}
	if len(refuse) != 2 || !strings.Contains(refuse["a/2"], "NOT_ENOUGH_REPLICAS") || !strings.Contains(refuse["a/3"], "offline") {
		t.Errorf("refuse acks=all: %v", refuse)
	}
	if r.Partitions != 5 {
		t.Errorf("checked %d partitions", r.Partitions)
	}
}

func TestEncodings(t *testing.T) {
	b := []byte("{\"a\": 1}\n")
	if got := EncodingJSON.Text(b); got != `{"a":1}` {
		t.Errorf("json text %q", got)
	}
	if got := EncodingText.Text([]byte("a\tb\nc")); got != `a\tb\nc` {
		t.Errorf("text escapes control characters: %q", got)
	}
	if got := EncodingHex.Text([]byte{0, 255}); got != "00ff" {
		t.Errorf("hex %q", got)
	}
	if got := EncodingBase64.Text(nil); got != "null" {
		t.Errorf("nil %q", got)
	}
	rec := EncodingJSON.Record(&kgo.Record{Topic: "t", Key: []byte("k"), Value: b,
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
	out, _ := json.Marshal(rec)
	if !strings.Contains(string(out), `"value":{"a":1}`) || !strings.Contains(string(out), `"key":"k"`) {
		t.Errorf("record json %s", out)
	}
	// What consume --format json prints, produce --input json reads back.
	for _, enc := range []Encoding{EncodingText, EncodingBase64, EncodingHex} {
		orig := &kgo.Record{Key: []byte("k\x01"), Value: []byte("v\xff"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
		if enc == EncodingText {
			orig.Value = []byte("plain")
		}
		line, _ := json.Marshal(enc.Record(orig))
		back, _, err := enc.ParseInputRecord(line)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if string(back.Key) != string(orig.Key) || string(back.Value) != string(orig.Value) || string(back.Headers[0].Value) != "x" {
			t.Errorf("%s round trip: %q %q from %s", enc, back.Key, back.Value, line)
		}
	}
	r, p, err := EncodingText.ParseInputRecord([]byte(`{"value":{"n":1},"key":null,"partition":2}`))
	if err != nil || string(r.Value) != `{"n":1}` || r.Key != nil || *p != 2 {
		t.Errorf("json value: %q %v %v", r.Value, p, err)
	}
	if _, _, err := EncodingText.ParseInputRecord([]byte(`{"valu":"x"}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
	if _, err := EncodingHex.Decode("zz"); err == nil {
		t.Error("bad hex accepted")
	}
}

func TestConfigKeys(t *testing.T) {
	cfg := DefaultConfig()
	for k, v := range map[string]string{
		"brokers": "a:1, b:2", "security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512",
		"sasl.jaas.config":                      `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p w";`,
		"ssl.endpoint.identification.algorithm": "", "request.timeout.ms": "2500",
	} {
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("Set(%s): %v", k, err)
		}
	}
	if !slices.Equal(cfg.Brokers, []string{"a:1", "b:2"}) || cfg.SecurityProtocol != "SASL_SSL" || cfg.SASLUsername != "u" ||
		cfg.SASLPassword != "p w" || cfg.VerifyHostname || cfg.RequestTimeout != 2500*time.Millisecond || !cfg.TLS() {
		t.Fatalf("config %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("sasl.mech", "PLAIN"); err == nil || !strings.Contains(err.Error(), "unknown client config key") {
		t.Errorf("unknown key: %v", err)
	}
	if err := cfg.Set("security.protocol", "TLS"); err == nil {
		t.Error("security.protocol=TLS accepted")
	}
	bad := DefaultConfig()
	bad.SecurityProtocol = "SASL_PLAINTEXT"
	if err := bad.Validate(); err == nil {
		t.Error("SASL without a mechanism accepted")
	}
}

func TestKafkaErrorNamesCodeAndBroker(t *testing.T) {
	c := &Client{seen: &answerLog{by: map[int16]kgo.BrokerMetadata{19: {NodeID: 2, Host: "10.0.0.2", Port: 9092}}}}
	msg := "Topic 'x' already exists."
	err := c.codeErr(`topic "x"`, kerr.TopicAlreadyExists, &msg, 19)
	want := `topic "x": TOPIC_ALREADY_EXISTS (Kafka error 36: Topic with this name already exists) from broker 2 (10.0.0.2:9092): Topic 'x' already exists.`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
	if !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Error("the Kafka error is not wrapped")
	}
}

// A watch ends once every seed refused twice in a row during it; a later
// watch starts with a clean slate, and a dial that works resets the count.
func TestDialWatchJudgesEachWatch(t *testing.T) {
	w := newDialWatch([]string{"a:1", "b:1"})
	refused := errors.New("connection refused")
	ctx1, cancel1 := context.WithCancelCause(context.Background())
	defer w.watch(cancel1)()
	w.record("a:1", refused)
	w.record("b:1", refused)
	w.record("a:1", refused)
	if ctx1.Err() != nil {
		t.Fatal("ended before every seed failed twice")
	}
	w.record("b:1", refused)
	var ue *UnreachableError
	if !errors.As(context.Cause(ctx1), &ue) || !strings.Contains(ue.Error(), "cannot reach any broker of a:1,b:1") {
		t.Fatalf("cause %v", context.Cause(ctx1))
	}
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	defer w.watch(cancel2)()
	w.record("a:1", refused)
	w.record("b:1", refused)
	w.record("a:1", nil) // the cluster is back
	w.record("a:1", refused)
	w.record("b:1", refused)
	if ctx2.Err() != nil {
		t.Fatal("a watch ended by failures from before a working dial")
	}
}
