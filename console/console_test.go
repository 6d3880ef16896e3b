package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/admin"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// newTestConsole serves a console over kfake with a topic of 3 partitions
// holding a record, and a registry whose produce counter the test moves.
func newTestConsole(t *testing.T) (*httptest.Server, *prometheus.CounterVec, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(3, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx := testsupport.Context(t, 10*time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k1"), Value: []byte(`{"order":42}`), Partition: 0}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	bytesIn := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kbroker_topic_bytes_in_total"}, []string{"topic"})
	reg.MustRegister(bytesIn)
	cfg := admin.DefaultConfig()
	cfg.Brokers = c.ListenAddrs()
	mux := http.NewServeMux()
	closeFn := Mount(mux, Options{Client: &cfg, Gatherer: reg, NodeID: 7, Interval: 20 * time.Millisecond})
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); closeFn() })
	return srv, bytesIn, cl
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPagesOverKfake(t *testing.T) {
	srv, _, cl := newTestConsole(t)
	ctx := testsupport.Context(t, 10*time.Second)
	adm := kadm.NewClient(cl)
	if _, err := adm.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: -1})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		status int
		want   []string
	}{
		{"/ui/", 200, []string{"served by broker 7", `id="partitions">`, `data-broker="0"`, `data-broker="2"`}},
		{"/ui/topics", 200, []string{`data-topic="orders"`, `<td class="num" data-k="partitions">3</td>`}},
		{"/ui/topics/orders", 200, []string{`id="partition-count">3<`, `data-partition="2"`, `data-config="retention.ms"`}},
		{"/ui/topics/nope", 404, []string{`topic &#34;nope&#34; does not exist`}},
		{"/ui/groups", 200, []string{`data-group="billing"`}},
		{"/ui/groups/billing", 200, []string{`data-partition="orders/0"`, `data-k="lag">1<`, `data-chart="lag"`}},
		{"/ui/groups/nope", 404, []string{`does not exist`}},
		{"/ui/messages?topic=orders&view=json", 200, []string{`data-k="key">k1<`, "&#34;order&#34;: 42", `1 records.`}},
		{"/ui/messages?topic=orders&offset=soon", 400, []string{"malformed offset"}},
		{"/ui/risk", 200, []string{"Would lose acknowledged data", `id="acks1-count">`}},
		{"/ui/static/app.js", 200, []string{"data-live-overview"}},
		{"/ui/nothing", 404, nil},
	} {
		status, body := get(t, srv.URL+c.path)
		if status != c.status {
			t.Errorf("GET %s: status %d, want %d\n%s", c.path, status, c.status, body)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in the page", c.path, w)
			}
		}
	}
	resp, err := http.Post(srv.URL+"/ui/topics", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405 (read-only)", resp.StatusCode)
	}
}

// The overview's live data: health counts and this broker's produce rate
// from its metrics.
func TestOverviewLiveThroughput(t *testing.T) {
	srv, bytesIn, _ := newTestConsole(t)
	var live liveOverview
	deadline := time.Now().Add(10 * time.Second)
	for {
		bytesIn.WithLabelValues("orders").Add(1000)
		_, body := get(t, srv.URL+"/ui/api/overview")
		if err := json.Unmarshal([]byte(body), &live); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		n := len(live.Throughput.BytesIn)
		if n > 0 && live.Throughput.BytesIn[n-1] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no produce rate after 10 s: %+v", live.Throughput)
		}
		time.Sleep(25 * time.Millisecond) // the sampler's period: a rate needs two samples
	}
	if live.Brokers != 3 || !live.Healthy || live.UnderReplicated != 0 {
		t.Errorf("live overview %+v", live)
	}
}

func TestSamplerRatesAndHistory(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	s := newSampler(clock.Now)
	s.addTotals(totals{bytesIn: 100})
	clock.Advance(2 * time.Second)
	s.addTotals(totals{bytesIn: 300, recordsOut: 10})
	clock.Advance(time.Second)
	s.addTotals(totals{bytesIn: 50}) // a restart: counters start over
	tp := s.throughputCopy()
	if len(tp.BytesIn) != 2 || tp.BytesIn[0] != 100 || tp.RecordsOut[0] != 5 || tp.BytesIn[1] != 50 {
		t.Errorf("throughput %+v", tp)
	}
	s.addEnds(map[string]int64{"a": 10})
	clock.Advance(4 * time.Second)
	s.addEnds(map[string]int64{"a": 30, "b": 5})
	if r, ok := s.topicRate("a"); !ok || r != 5 {
		t.Errorf("rate a = %v %v, want 5", r, ok)
	}
	if _, ok := s.topicRate("b"); ok {
		t.Error("a rate for a topic seen once")
	}
	for i := range history + 10 {
		s.addLags(map[string]*admin.GroupDetail{"g": {TotalLag: int64(i),
			Partitions: []admin.PartitionLag{{Topic: "t", Partition: 0, Lag: int64(i)}}}})
	}
	h := s.lagCopy("g")
	if len(h.T) != history || h.Total[history-1] != history+9 || len(h.Partitions["t/0"]) != history {
		t.Errorf("lag history: %d samples, last %d", len(h.T), h.Total[len(h.Total)-1])
	}
	s.addLags(map[string]*admin.GroupDetail{})
	if h := s.lagCopy("g"); len(h.T) != 0 {
		t.Error("a deleted group keeps its history")
	}
	if s.active() {
		t.Error("active before any page view")
	}
	s.touch()
	clock.Advance(activeFor + time.Second)
	if s.active() {
		t.Error("still active long after the last view")
	}
}

func TestLoopback(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0:9092": "127.0.0.1:9092", ":9092": "127.0.0.1:9092",
		"[::]:9092": "[::1]:9092", "10.1.2.3:9092": "10.1.2.3:9092"} {
		if got := loopback(in); got != want {
			t.Errorf("loopback(%s) = %s, want %s", in, got, want)
		}
	}
}
