package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicSummary is one line of a topic list.
type TopicSummary struct {
	Name              string `json:"name"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
	UnderReplicated   int    `json:"under_replicated"`
	Offline           int    `json:"offline"`
	// Size and Messages are filled by TopicStats: the bytes of the leaders'
	// logs (-1 if a leader did not say) and high watermark minus log start
	// summed over partitions.
	Size     int64 `json:"size_bytes"`
	Messages int64 `json:"messages"`
}

// PartitionInfo is one partition of a topic page.
type PartitionInfo struct {
	Partition   int32   `json:"partition"`
	Leader      int32   `json:"leader"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Replicas    []int32 `json:"replicas"`
	ISR         []int32 `json:"isr"`
	Offline     []int32 `json:"offline_replicas"`
	LogStart    int64   `json:"log_start_offset"`
	// HighWatermark is what consumers can read up to (ListOffsets latest).
	HighWatermark int64 `json:"high_watermark"`
	// LogEnd is the leader's log end offset (its answer to
	// OffsetForLeaderEpoch for the current epoch); -1 if unknown.
	LogEnd int64 `json:"log_end_offset"`
	// Size is the leader's log size in bytes, ReplicaSizes each replica's;
	// -1 if the leader did not say.
	Size         int64           `json:"size_bytes"`
	ReplicaSizes map[int32]int64 `json:"replica_sizes"`
	Error        string          `json:"error,omitempty"`
}

// TopicDetail is what `topic describe` and the console's topic page show.
type TopicDetail struct {
	Name              string          `json:"name"`
	ID                string          `json:"id"`
	Internal          bool            `json:"internal"`
	ReplicationFactor int             `json:"replication_factor"`
	MinISR            int             `json:"min_insync_replicas"`
	Partitions        []PartitionInfo `json:"partitions"`
	Configs           []ConfigEntry   `json:"configs"`
}

// Topics lists the topics from metadata alone (no sizes).
func (c *Client) Topics(ctx context.Context, internal bool) ([]TopicSummary, error) {
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	return summaries(md, internal), nil
}

func summaries(md kadm.Metadata, internal bool) []TopicSummary {
	out := []TopicSummary{}
	for _, td := range md.Topics.Sorted() {
		if td.IsInternal && !internal || td.Err != nil {
			continue
		}
		s := TopicSummary{Name: td.Topic, ID: topicID(td.ID), Partitions: len(td.Partitions),
			ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal}
		for _, p := range td.Partitions {
			if len(p.ISR) < len(p.Replicas) {
				s.UnderReplicated++
			}
			if p.Leader < 0 {
				s.Offline++
			}
		}
		out = append(out, s)
	}
	return out
}

// TopicStats lists the topics with their sizes and message counts.
func (c *Client) TopicStats(ctx context.Context, internal bool) ([]TopicSummary, error) {
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	list := summaries(md, internal)
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	stats := c.partitionStats(ctx, md, names)
	for i := range list {
		list[i].Size, list[i].Messages = 0, 0
		for p := range md.Topics[list[i].Name].Partitions {
			st := stats[tp{list[i].Name, p}]
			list[i].Messages += max(st.HighWatermark-st.LogStart, 0)
			if st.Size < 0 || list[i].Size < 0 {
				list[i].Size = -1
			} else {
				list[i].Size += st.Size
			}
		}
	}
	return list, nil
}

// DescribeTopic describes one topic: every partition with its offsets and
// sizes, and the topic's configs with their sources. Partitions whose
// leader cannot be asked carry an Error; only a missing topic or an
// unreachable cluster fail the whole call.
func (c *Client) DescribeTopic(ctx context.Context, name string) (*TopicDetail, error) {
	md, err := c.adm.Metadata(ctx, name)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	td, ok := md.Topics[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, &NotFoundError{What: "topic", Name: name}
	}
	if td.Err != nil {
		return nil, c.codeErr(fmt.Sprintf("topic %q", name), td.Err, nil, kmsg.Metadata.Int16())
	}
	stats := c.partitionStats(ctx, md, []string{name})
	d := &TopicDetail{Name: name, ID: topicID(td.ID), Internal: td.IsInternal, ReplicationFactor: td.Partitions.NumReplicas(),
		Partitions: []PartitionInfo{}, MinISR: 1}
	for _, p := range td.Partitions.Sorted() {
		info := stats[tp{name, p.Partition}]
		info.Partition, info.Leader, info.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
		info.Replicas, info.ISR, info.Offline = nonNil(p.Replicas), nonNil(sortedIDs(p.ISR)), nonNil(p.OfflineReplicas)
		if p.Err != nil && info.Error == "" {
			info.Error = p.Err.Error()
		}
		d.Partitions = append(d.Partitions, info)
	}
	rcs, err := c.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	for _, rc := range rcs {
		if err := c.codeErr(fmt.Sprintf("topic %q configs", name), rc.Err, strPtr(rc.ErrMessage), kmsg.DescribeConfigs.Int16()); err != nil {
			return nil, err
		}
		d.Configs = configEntries(rc.Configs)
	}
	for _, e := range d.Configs {
		if e.Name == "min.insync.replicas" {
			fmt.Sscan(e.Value, &d.MinISR)
		}
	}
	return d, nil
}

// tp names a partition.
type tp struct {
	topic     string
	partition int32
}

// partitionStats asks the leaders for log start, high watermark and log end
// offsets and every replica's broker for its log size. What a broker could
// not answer stays -1, with the reason in Error.
func (c *Client) partitionStats(ctx context.Context, md kadm.Metadata, topics []string) map[tp]PartitionInfo {
	out := map[tp]PartitionInfo{}
	epochs := kadm.OffsetForLeaderEpochRequest{}
	set := kadm.TopicsSet{}
	for _, t := range topics {
		for _, p := range md.Topics[t].Partitions {
			out[tp{t, p.Partition}] = PartitionInfo{LogStart: -1, HighWatermark: -1, LogEnd: -1, Size: -1, ReplicaSizes: map[int32]int64{}}
			epochs.Add(t, p.Partition, p.LeaderEpoch)
			set.Add(t, p.Partition)
		}
	}
	if len(out) == 0 {
		return out
	}
	update := func(t string, p int32, fn func(*PartitionInfo)) {
		if info, ok := out[tp{t, p}]; ok {
			fn(&info)
			out[tp{t, p}] = info
		}
	}
	fail := func(info *PartitionInfo, err error) {
		if err != nil && info.Error == "" {
			info.Error = c.Explain(ctx, err).Error()
		}
	}
	starts, startErr := c.adm.ListStartOffsets(ctx, topics...)
	starts.Each(func(o kadm.ListedOffset) {
		update(o.Topic, o.Partition, func(i *PartitionInfo) { fail(i, o.Err); i.LogStart = okOffset(o) })
	})
	if startErr != nil { // the partitions of the brokers that failed have no answer
		for k, info := range out {
			if info.LogStart < 0 {
				fail(&info, startErr)
				out[k] = info
			}
		}
	}
	ends, _ := c.adm.ListEndOffsets(ctx, topics...)
	ends.Each(func(o kadm.ListedOffset) {
		update(o.Topic, o.Partition, func(i *PartitionInfo) { fail(i, o.Err); i.HighWatermark = okOffset(o) })
	})
	leos, _ := c.adm.OffsetForLeaderEpoch(ctx, epochs)
	for t, ps := range leos {
		for p, e := range ps {
			update(t, p, func(i *PartitionInfo) {
				if e.Err == nil {
					i.LogEnd = e.EndOffset
				}
			})
		}
	}
	c.addSizes(ctx, md, set, update)
	return out
}

func (c *Client) addSizes(ctx context.Context, md kadm.Metadata, set kadm.TopicsSet, update func(string, int32, func(*PartitionInfo))) {
	dirs, _ := c.adm.DescribeAllLogDirs(ctx, set)
	for broker, ds := range dirs {
		ds.EachPartition(func(d kadm.DescribedLogDirPartition) {
			update(d.Topic, d.Partition, func(i *PartitionInfo) {
				i.ReplicaSizes[broker] += d.Size
				if md.Topics[d.Topic].Partitions[d.Partition].Leader == broker {
					i.Size = i.ReplicaSizes[broker]
				}
			})
		})
	}
}

func okOffset(o kadm.ListedOffset) int64 {
	if o.Err != nil {
		return -1
	}
	return o.Offset
}

// CreateResult is the outcome for one topic of create, delete, alter or add.
type CreateResult struct {
	Topic             string `json:"topic"`
	ID                string `json:"id,omitempty"`
	Partitions        int32  `json:"partitions,omitempty"`
	ReplicationFactor int16  `json:"replication_factor,omitempty"`
	Error             string `json:"error,omitempty"`
}

// CreateTopics creates topics (partitions and rf -1: the broker's
// defaults); validateOnly asks the controller to check without creating.
// The error is the first topic's failure, the results cover all.
func (c *Client) CreateTopics(ctx context.Context, names []string, partitions int32, rf int16,
	configs map[string]string, validateOnly bool) ([]CreateResult, error) {
	cfgs := map[string]*string{}
	for k, v := range configs {
		cfgs[k] = kadm.StringPtr(v)
	}
	create := c.adm.CreateTopics
	if validateOnly {
		create = c.adm.ValidateCreateTopics
	}
	resps, err := create(ctx, partitions, rf, cfgs, names...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	return c.perTopic(names, kmsg.CreateTopics.Int16(), func(name string) (CreateResult, error, string) {
		r := resps[name]
		return CreateResult{Topic: name, ID: topicID(r.ID), Partitions: r.NumPartitions, ReplicationFactor: r.ReplicationFactor},
			r.Err, r.ErrMessage
	})
}

// perTopic builds one result per topic with fill, turning each topic's
// error code into a KafkaError; the error is the first failure.
func (c *Client) perTopic(names []string, key int16, fill func(name string) (CreateResult, error, string)) ([]CreateResult, error) {
	var out []CreateResult
	var errs []error
	for _, name := range names {
		res, code, msg := fill(name)
		if err := c.codeErr(fmt.Sprintf("topic %q", name), code, strPtr(msg), key); err != nil {
			res.Error, errs = err.Error(), append(errs, err)
		}
		out = append(out, res)
	}
	return out, firstOf(errs)
}

// DeleteTopics deletes topics.
func (c *Client) DeleteTopics(ctx context.Context, names []string) ([]CreateResult, error) {
	resps, err := c.adm.DeleteTopics(ctx, names...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	return c.perTopic(names, kmsg.DeleteTopics.Int16(), func(name string) (CreateResult, error, string) {
		r := resps[name]
		return CreateResult{Topic: name, ID: topicID(r.ID)}, r.Err, r.ErrMessage
	})
}

// AlterTopicConfig sets and deletes topic configs (IncrementalAlterConfigs).
func (c *Client) AlterTopicConfig(ctx context.Context, topic string, set map[string]string, del []string) error {
	resps, err := c.adm.AlterTopicConfigs(ctx, alterations(set, del), topic)
	if err != nil {
		return c.Explain(ctx, err)
	}
	for _, r := range resps {
		if err := c.codeErr(fmt.Sprintf("topic %q", topic), r.Err, strPtr(r.ErrMessage), kmsg.IncrementalAlterConfigs.Int16()); err != nil {
			return err
		}
	}
	return nil
}

// AddPartitions adds n partitions to each topic.
func (c *Client) AddPartitions(ctx context.Context, topics []string, n int) ([]CreateResult, error) {
	md, err := c.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	for _, t := range topics {
		if td, ok := md.Topics[t]; !ok || td.Err != nil {
			return nil, &NotFoundError{What: "topic", Name: t}
		}
	}
	resps, err := c.adm.CreatePartitions(ctx, n, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	return c.perTopic(topics, kmsg.CreatePartitions.Int16(), func(t string) (CreateResult, error, string) {
		r, had := resps[t], len(md.Topics[t].Partitions)
		if r.Err != nil {
			return CreateResult{Topic: t, Partitions: int32(had)}, r.Err, r.ErrMessage
		}
		return CreateResult{Topic: t, Partitions: int32(had + n)}, nil, ""
	})
}

// firstOf returns the first error, saying how many more there were.
func firstOf(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more failures)", errs[0], len(errs)-1)
}

// topicID prints a topic id as Kafka's tools do (URL-safe base64, no
// padding).
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// sortedTopics returns the topic names of a TopicsSet, sorted.
func sortedTopics(s kadm.TopicsSet) []string {
	out := s.Topics()
	sort.Strings(out)
	return out
}
