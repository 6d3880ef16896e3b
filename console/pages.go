package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/admin"
)

// overviewData is the cluster overview.
type overviewData struct {
	Info   *admin.ClusterInfo
	Health *admin.Health
	// ThisBroker is the node serving the console (its throughput is
	// charted).
	ThisBroker int32
}

func (c *Console) overview(ctx context.Context, _ *http.Request) (string, any, error) {
	info, err := clientOf(ctx).ClusterInfo(ctx)
	if err != nil {
		return "Cluster", nil, err
	}
	h, err := clientOf(ctx).Health(ctx)
	if err != nil {
		return "Cluster", nil, err
	}
	return "Cluster " + info.ClusterID, overviewData{Info: info, Health: h, ThisBroker: c.opts.NodeID}, nil
}

// liveOverview is what the overview's script polls.
type liveOverview struct {
	Brokers         int        `json:"brokers"`
	BrokersDown     []int32    `json:"brokers_down"`
	Controller      int32      `json:"controller"`
	Offline         int        `json:"offline"`
	UnderReplicated int        `json:"under_replicated"`
	UnderMinISR     int        `json:"under_min_isr"`
	Healthy         bool       `json:"healthy"`
	Throughput      Throughput `json:"throughput"`
}

func (c *Console) overviewLive(ctx context.Context, _ *http.Request) (any, error) {
	h, err := clientOf(ctx).Health(ctx)
	if err != nil {
		return nil, err
	}
	return liveOverview{Brokers: len(h.Brokers), BrokersDown: h.Down, Controller: h.Controller, Offline: len(h.Offline),
		UnderReplicated: len(h.UnderReplicated), UnderMinISR: len(h.UnderMinISR), Healthy: h.Healthy,
		Throughput: c.samples.throughputCopy()}, nil
}

// topicRow is a topic of the list with its rate.
type topicRow struct {
	admin.TopicSummary
	Rate    float64
	HasRate bool
}

func (c *Console) topics(ctx context.Context, _ *http.Request) (string, any, error) {
	list, err := clientOf(ctx).TopicStats(ctx, true)
	if err != nil {
		return "Topics", nil, err
	}
	rows := make([]topicRow, 0, len(list))
	for _, t := range list {
		r, ok := viewerOf(ctx).samples.topicRate(t.Name)
		rows = append(rows, topicRow{TopicSummary: t, Rate: r, HasRate: ok})
	}
	return "Topics", rows, nil
}

func (c *Console) topic(ctx context.Context, r *http.Request) (string, any, error) {
	name := r.PathValue("topic")
	d, err := clientOf(ctx).DescribeTopic(ctx, name)
	return "Topic " + name, d, err
}

// groupRow is a group of the list.
type groupRow struct {
	admin.GroupSummary
	Members  int
	TotalLag int64
}

func (c *Console) groups(ctx context.Context, _ *http.Request) (string, any, error) {
	list, err := clientOf(ctx).Groups(ctx)
	if err != nil && list == nil {
		return "Consumer groups", nil, err
	}
	lags, _ := clientOf(ctx).Lags(ctx)
	rows := make([]groupRow, 0, len(list))
	for _, g := range list {
		row := groupRow{GroupSummary: g, TotalLag: -1}
		if d := lags[g.Group]; d != nil {
			row.Members, row.TotalLag = len(d.Members), d.TotalLag
		}
		rows = append(rows, row)
	}
	return "Consumer groups", rows, err
}

func (c *Console) group(ctx context.Context, r *http.Request) (string, any, error) {
	name := r.PathValue("group")
	d, err := clientOf(ctx).DescribeGroup(ctx, name)
	return "Group " + name, d, err
}

func (c *Console) groupLag(ctx context.Context, r *http.Request) (any, error) {
	return viewerOf(ctx).samples.lagCopy(r.PathValue("group")), nil
}

func (c *Console) risk(ctx context.Context, _ *http.Request) (string, any, error) {
	risks, err := clientOf(ctx).Risks(ctx)
	return "Data at risk", risks, err
}

// browseLimit is the most records the message browser shows at once.
const browseLimit = 500

// browseForm is the message browser's query.
type browseForm struct {
	Topic     string
	Partition string // "" or "all": every partition
	From      string // an offset spec: start, end, 42, -10, @time
	Limit     int
	View      string // text, json, hex, base64
}

// shownRecord is one record of the message browser, rendered for its view.
type shownRecord struct {
	Partition int32
	Offset    int64
	Timestamp string
	Key       string
	Value     string
	Headers   []shownHeader
	Truncated bool
}

type shownHeader struct{ Key, Value string }

type messagesData struct {
	Form    browseForm
	Topics  []string
	Records []shownRecord
	Asked   bool // a topic was given: Records is an answer, maybe empty
}

func (c *Console) messages(ctx context.Context, r *http.Request) (string, any, error) {
	q := r.URL.Query()
	f := browseForm{Topic: q.Get("topic"), Partition: q.Get("partition"), From: q.Get("offset"), View: q.Get("view")}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	if f.Limit <= 0 {
		f.Limit = 20
	}
	f.Limit = min(f.Limit, browseLimit)
	if f.From == "" {
		f.From = "start"
	}
	if f.View == "" {
		f.View = "text"
	}
	d := &messagesData{Form: f}
	topics, err := clientOf(ctx).Topics(ctx, true)
	if err != nil {
		return "Messages", d, err
	}
	for _, t := range topics {
		d.Topics = append(d.Topics, t.Name)
	}
	if f.Topic == "" {
		return "Messages", d, nil
	}
	d.Asked = true
	d.Records, err = c.browse(ctx, f, r)
	return "Messages in " + f.Topic, d, err
}

// browse reads up to the form's limit of records, from its position to the
// partitions' current ends.
func (c *Console) browse(ctx context.Context, f browseForm, r *http.Request) ([]shownRecord, error) {
	enc, err := admin.ParseEncoding(f.View)
	if err != nil {
		return nil, &badInput{err.Error()}
	}
	from, err := admin.ParseOffset(f.From, c.opts.Now())
	if err != nil {
		return nil, &badInput{err.Error()}
	}
	var parts []int32
	if f.Partition != "" && f.Partition != "all" {
		p, err := strconv.ParseInt(f.Partition, 10, 32)
		if err != nil || p < 0 {
			return nil, &badInput{"partition " + strconv.Quote(f.Partition) + " is not a partition number"}
		}
		parts = []int32{int32(p)}
	}
	end := admin.OffsetSpec{Kind: admin.OffsetEnd}
	var out []shownRecord
	err = clientOf(ctx).Read(ctx, admin.ReadOptions{Topics: []string{f.Topic}, Partitions: parts, From: from, To: &end,
		Limit: f.Limit, MaxWait: 200 * time.Millisecond}, func(rec *kgo.Record) bool {
		out = append(out, show(enc, rec))
		return true
	})
	slices.SortFunc(out, func(a, b shownRecord) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out, err
}

type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

// maxShown is how much of a key or value the browser prints.
const maxShown = 4096

func show(enc admin.Encoding, r *kgo.Record) shownRecord {
	s := shownRecord{Partition: r.Partition, Offset: r.Offset, Timestamp: admin.Timestamp(r.Timestamp)}
	var cut bool
	s.Key, cut = render(enc, r.Key)
	s.Value, s.Truncated = render(enc, r.Value)
	s.Truncated = s.Truncated || cut
	for _, h := range r.Headers {
		v, _ := render(enc, h.Value)
		s.Headers = append(s.Headers, shownHeader{Key: h.Key, Value: v})
	}
	return s
}

// render shows bytes in a view: json pretty-prints valid JSON (anything
// else as text), text keeps line breaks (the page wraps them); long values
// are cut.
func render(enc admin.Encoding, b []byte) (string, bool) {
	if b == nil {
		return "null", false
	}
	var s string
	switch enc {
	case admin.EncodingJSON:
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			s = buf.String()
		} else {
			s = strings.ToValidUTF8(string(b), "\uFFFD")
		}
	case admin.EncodingText:
		s = strings.ToValidUTF8(string(b), "\uFFFD")
	default:
		s = enc.Text(b)
	}
	if len(s) > maxShown {
		return strings.ToValidUTF8(s[:maxShown], "") + "…", true
	}
	return s, false
}
