package admin

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Broker is one live broker as the cluster's metadata lists it.
type Broker struct {
	ID         int32  `json:"id"`
	Host       string `json:"host"`
	Port       int32  `json:"port"`
	Rack       string `json:"rack,omitempty"`
	Controller bool   `json:"controller"`
	// Version is the Kafka release whose API versions this broker
	// advertises (franz-go's guess), e.g. "v4.0" or "between v3.8 and v3.9".
	Version  string `json:"version,omitempty"`
	APIs     int    `json:"apis,omitempty"` // how many Kafka APIs it serves
	Replicas int    `json:"replicas"`       // partition replicas assigned to it
	Leaders  int    `json:"leaders"`        // partitions it leads
}

// ClusterInfo is what `cluster info` shows.
type ClusterInfo struct {
	ClusterID  string   `json:"cluster_id"`
	Controller int32    `json:"controller"`
	Brokers    []Broker `json:"brokers"`
	Topics     int      `json:"topics"`
	Partitions int      `json:"partitions"`
}

// State is one look at the cluster: its metadata (internal topics
// included) and each topic's min.insync.replicas.
type State struct {
	Metadata kadm.Metadata
	MinISR   map[string]int
}

// State reads the cluster's metadata and the topics' min.insync.replicas.
func (c *Client) State(ctx context.Context) (*State, error) {
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	st := &State{Metadata: md, MinISR: map[string]int{}}
	names := md.Topics.Names()
	if len(names) == 0 {
		return st, nil
	}
	configs, err := c.adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	for _, rc := range configs {
		st.MinISR[rc.Name] = 1
		for _, cfg := range rc.Configs {
			if cfg.Key == "min.insync.replicas" {
				if n, err := strconv.Atoi(cfg.MaybeValue()); err == nil {
					st.MinISR[rc.Name] = n
				}
			}
		}
	}
	return st, nil
}

// ClusterInfo describes the brokers, the controller and the counts.
func (c *Client) ClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	md, err := c.adm.Metadata(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	info := Info(md)
	versions, err := c.adm.ApiVersions(ctx)
	if err == nil {
		for i := range info.Brokers {
			if v, ok := versions[info.Brokers[i].ID]; ok && v.Err == nil {
				info.Brokers[i].Version, info.Brokers[i].APIs = versionGuess(v.Raw())
			}
		}
	}
	return info, nil
}

// versionGuess is franz-go's guess of the Kafka release a broker's API
// versions match, judged on the APIs it has (a broker that leaves some
// out, as kbroker does, is not thereby a 0.9 broker), and how many APIs.
func versionGuess(r *kmsg.ApiVersionsResponse) (string, int) {
	have := map[int16]bool{}
	for _, k := range r.ApiKeys {
		have[k.ApiKey] = true
	}
	var skip []int16
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if !have[k] {
			skip = append(skip, k)
		}
	}
	return kversion.FromApiVersionsResponse(r).VersionGuess(kversion.SkipKeys(skip...)), len(r.ApiKeys)
}

// Info summarizes metadata: the brokers with their replica and leader
// counts, the controller, topics and partitions.
func Info(md kadm.Metadata) *ClusterInfo {
	info := &ClusterInfo{ClusterID: md.Cluster, Controller: md.Controller, Topics: len(md.Topics)}
	replicas, leaders := map[int32]int{}, map[int32]int{}
	md.Topics.EachPartition(func(p kadm.PartitionDetail) {
		info.Partitions++
		leaders[p.Leader]++
		for _, r := range p.Replicas {
			replicas[r]++
		}
	})
	for _, b := range md.Brokers {
		info.Brokers = append(info.Brokers, Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: deref(b.Rack),
			Controller: b.NodeID == md.Controller, Replicas: replicas[b.NodeID], Leaders: leaders[b.NodeID]})
	}
	sort.Slice(info.Brokers, func(i, j int) bool { return info.Brokers[i].ID < info.Brokers[j].ID })
	return info
}

// PartitionRef names a partition with the state that put it in a list.
type PartitionRef struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	MinISR    int     `json:"min_isr"`
}

// Health is what `cluster health` reports.
type Health struct {
	Healthy    bool    `json:"healthy"`
	Controller int32   `json:"controller"`
	Brokers    []int32 `json:"brokers"`      // live brokers
	Down       []int32 `json:"brokers_down"` // replicas' brokers that are not live
	// Offline partitions have no leader: no reads or writes at all.
	Offline []PartitionRef `json:"offline_partitions"`
	// UnderReplicated partitions have an ISR smaller than their replicas.
	UnderReplicated []PartitionRef `json:"under_replicated_partitions"`
	// UnderMinISR partitions refuse acks=all writes (NOT_ENOUGH_REPLICAS).
	UnderMinISR []PartitionRef `json:"under_min_isr_partitions"`
	Reasons     []string       `json:"reasons"` // why unhealthy, one line each
}

// Assess judges a cluster state: healthy means a controller, every
// replica's broker live, every partition led with its full ISR.
func Assess(st *State) *Health {
	md := st.Metadata
	h := &Health{Controller: md.Controller, Brokers: md.Brokers.NodeIDs(),
		Offline: []PartitionRef{}, UnderReplicated: []PartitionRef{}, UnderMinISR: []PartitionRef{}, Down: []int32{}}
	down := map[int32]bool{}
	for _, td := range md.Topics.Sorted() {
		for _, p := range td.Partitions.Sorted() {
			ref := PartitionRef{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
				Replicas: p.Replicas, ISR: sortedIDs(p.ISR), MinISR: st.MinISR[p.Topic]}
			assessPartition(h, ref)
			for _, r := range p.Replicas {
				if !slices.Contains(h.Brokers, r) {
					down[r] = true
				}
			}
		}
	}
	for id := range down {
		h.Down = append(h.Down, id)
	}
	slices.Sort(h.Down)
	h.Reasons = reasons(h)
	h.Healthy = len(h.Reasons) == 0
	return h
}

func assessPartition(h *Health, ref PartitionRef) {
	if ref.Leader < 0 {
		h.Offline = append(h.Offline, ref)
	}
	if len(ref.ISR) < len(ref.Replicas) {
		h.UnderReplicated = append(h.UnderReplicated, ref)
	}
	if len(ref.ISR) < ref.MinISR {
		h.UnderMinISR = append(h.UnderMinISR, ref)
	}
}

func reasons(h *Health) []string {
	out := []string{}
	if h.Controller < 0 {
		out = append(out, "no active controller")
	}
	if n := len(h.Down); n > 0 {
		out = append(out, fmt.Sprintf("brokers down: %v", h.Down))
	}
	for _, c := range []struct {
		n    int
		what string
	}{{len(h.Offline), "offline (no leader)"}, {len(h.UnderReplicated), "under-replicated"},
		{len(h.UnderMinISR), "under min.insync.replicas (acks=all writes refused)"}} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s %s", c.n, plural(c.n, "partition", "partitions"), c.what))
		}
	}
	return out
}

// Health reads the cluster's state and assesses it.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	st, err := c.State(ctx)
	if err != nil {
		return nil, err
	}
	return Assess(st), nil
}

// ConfigEntry is one config of a topic or broker with its source.
type ConfigEntry struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"` // Kafka's names: DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, ...
	Sensitive bool   `json:"sensitive,omitempty"`
}

func configEntries(cfgs []kadm.Config) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(cfgs))
	for _, c := range cfgs {
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		out = append(out, ConfigEntry{Name: c.Key, Value: v, Source: c.Source.String(), Sensitive: c.Sensitive})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// BrokerConfig describes a broker's configs (broker < 0: the cluster-wide
// dynamic defaults, Kafka's entity-default).
func (c *Client) BrokerConfig(ctx context.Context, broker int32) ([]ConfigEntry, error) {
	var rcs kadm.ResourceConfigs
	var err error
	if broker < 0 {
		rcs, err = c.adm.DescribeBrokerConfigs(ctx)
	} else {
		rcs, err = c.adm.DescribeBrokerConfigs(ctx, broker)
	}
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	if len(rcs) == 0 {
		return nil, fmt.Errorf("no broker answered DescribeConfigs")
	}
	rc := rcs[0]
	if err := c.codeErr(brokerSubject(broker), rc.Err, strPtr(rc.ErrMessage), kmsg.DescribeConfigs.Int16()); err != nil {
		return nil, err
	}
	return configEntries(rc.Configs), nil
}

// AlterBrokerConfig sets and deletes broker configs incrementally (broker
// < 0: the cluster-wide dynamic default).
func (c *Client) AlterBrokerConfig(ctx context.Context, broker int32, set map[string]string, del []string) error {
	alters := alterations(set, del)
	var resps kadm.AlterConfigsResponses
	var err error
	if broker < 0 {
		resps, err = c.adm.AlterBrokerConfigs(ctx, alters)
	} else {
		resps, err = c.adm.AlterBrokerConfigs(ctx, alters, broker)
	}
	if err != nil {
		return c.Explain(ctx, err)
	}
	for _, r := range resps {
		if err := c.codeErr(brokerSubject(broker), r.Err, strPtr(r.ErrMessage), kmsg.IncrementalAlterConfigs.Int16()); err != nil {
			return err
		}
	}
	return nil
}

func brokerSubject(broker int32) string {
	if broker < 0 {
		return "cluster-wide broker defaults"
	}
	return fmt.Sprintf("broker %d", broker)
}

func alterations(set map[string]string, del []string) []kadm.AlterConfig {
	var out []kadm.AlterConfig
	for _, k := range sortedKeys(set) {
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(set[k])})
	}
	for _, k := range del {
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
