package controller

import (
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"

	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// Image is the cluster metadata as of one applied Raft index. Images are
// immutable: every apply builds a new one, sharing unchanged topics, brokers
// and partitions with the previous image. Readers need no locks and must not
// modify anything reachable from an Image.
type Image struct {
	ClusterID      string
	AppliedIndex   uint64 // Raft index of the last applied entry (command or configuration)
	Brokers        map[int32]*BrokerInfo
	Topics         map[string]*Topic
	TopicsByID     map[[16]byte]*Topic
	BrokerConfigs  map[string]map[string]string // resource name: "" cluster default, "1" broker 1
	GroupConfigs   map[string]map[string]string // group id: its dynamic group configs (share.*)
	NextProducerID int64

	// Features are the finalized feature levels (features.go), 0s
	// included once set; FeaturesEpoch is the index of the last change.
	Features      map[string]int16
	FeaturesEpoch int64

	// ACLSet is the ACLs of the metadata log (AccessControlEntry records),
	// indexed for the authorizer; nil until the first ACL. acls holds them
	// by id.
	ACLSet *acl.Set
	acls   map[uuid]acl.Binding
	// ScramCredentials are the salted SCRAM credentials
	// (UserScramCredential records).
	ScramCredentials map[ScramKey]scram.Credential
	// ClientQuotas are the client quotas (ClientQuota records); nil until
	// the first.
	ClientQuotas quota.Quotas
}

// BrokerInfo is one registered broker.
type BrokerInfo struct {
	ID                   int32
	Epoch                int64 // Raft index of its registration record
	IncarnationID        [16]byte
	Listeners            []Endpoint
	Rack                 string
	Fenced               bool
	InControlledShutdown bool
}

// Live reports whether the broker may lead or join ISRs: registered, unfenced
// and not in controlled shutdown.
func (b *BrokerInfo) Live() bool {
	return b != nil && !b.Fenced && !b.InControlledShutdown
}

// Topic is one topic with its partitions, indexed by partition id.
type Topic struct {
	Name       string
	ID         [16]byte
	Configs    map[string]string // topic-level overrides only
	Partitions []*Partition
}

// Partition is the replication state of one partition.
type Partition struct {
	Topic                       string
	Index                       int32
	Replicas, ISR               []int32
	Leader                      int32 // -1: no leader (offline)
	LeaderEpoch, PartitionEpoch int32
	// AddingReplicas and RemovingReplicas describe a reassignment in
	// progress (KIP-455), sorted by id; both nil when there is none. Replicas
	// then lists the target replicas, in the target's order, followed by the
	// removing ones: every replica of the old and new assignment is a replica
	// until the adding ones have joined the ISR.
	AddingReplicas, RemovingReplicas []int32
	// ELR are the eligible leader replicas (KIP-966), sorted by id: replicas
	// outside the ISR that hold every offset below the HW, because they
	// left the ISR while it was smaller than min.insync.replicas (the HW
	// does not advance then) and have not shut down uncleanly since. With
	// the ISR empty, the first unfenced one in replica order may lead.
	ELR []int32
	// LastKnownELR is, while the partition has no leader and its ISR is
	// empty, the leader it had when the ISR emptied (Kafka 4.x keeps the
	// last known leader there): elected, as a last resort, once it is back
	// if the ELR is empty by then.
	LastKnownELR []int32
}

// Reassigning reports whether a reassignment of the partition is in progress.
func (p *Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// NoLeader is the Leader of an offline partition.
const NoLeader int32 = -1

func newEmptyImage() *Image {
	return &Image{
		Brokers:       map[int32]*BrokerInfo{},
		Topics:        map[string]*Topic{},
		TopicsByID:    map[[16]byte]*Topic{},
		BrokerConfigs: map[string]map[string]string{},
		GroupConfigs:  map[string]map[string]string{},
	}
}

// Partition returns the partition, or nil when the topic or partition does not exist.
func (img *Image) Partition(topic string, idx int32) *Partition {
	t := img.Topics[topic]
	if t == nil || idx < 0 || int(idx) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[idx]
}

// Broker returns the broker's registration, or nil.
func (img *Image) Broker(id int32) *BrokerInfo { return img.Brokers[id] }

// LiveBrokers returns the live brokers sorted by id.
func (img *Image) LiveBrokers() []*BrokerInfo {
	var out []*BrokerInfo
	for _, b := range img.Brokers {
		if b.Live() {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// unfencedBrokers returns the unfenced brokers (live or shutting down) sorted by id.
func (img *Image) unfencedBrokers() []*BrokerInfo {
	var out []*BrokerInfo
	for _, b := range img.Brokers {
		if !b.Fenced {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// isLive reports whether broker id is registered and live.
func (img *Image) isLive(id int32) bool { return img.Brokers[id].Live() }

// EndpointFor returns the broker's endpoint on the named listener.
func (img *Image) EndpointFor(id int32, listenerName string) (Endpoint, bool) {
	b := img.Brokers[id]
	if b == nil {
		return Endpoint{}, false
	}
	for _, e := range b.Listeners {
		if e.Name == listenerName {
			return e, true
		}
	}
	return Endpoint{}, false
}

// sortedTopicNames returns the topic names in order, for deterministic iteration.
func (img *Image) sortedTopicNames() []string {
	return slices.Sorted(maps.Keys(img.Topics))
}

// eachPartition calls fn for every partition, topics in name order.
func (img *Image) eachPartition(fn func(t *Topic, p *Partition)) {
	for _, name := range img.sortedTopicNames() {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			fn(t, p)
		}
	}
}

// leads reports whether broker id leads at least one partition.
func (img *Image) leads(id int32) bool {
	for _, t := range img.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				return true
			}
		}
	}
	return false
}

func (p *Partition) clone() *Partition {
	c := *p
	c.Replicas = slices.Clone(p.Replicas)
	c.ISR = slices.Clone(p.ISR)
	c.AddingReplicas = slices.Clone(p.AddingReplicas)
	c.RemovingReplicas = slices.Clone(p.RemovingReplicas)
	c.ELR = slices.Clone(p.ELR)
	c.LastKnownELR = slices.Clone(p.LastKnownELR)
	return &c
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Configs = maps.Clone(t.Configs)
	c.Partitions = make([]*Partition, len(t.Partitions))
	for i, p := range t.Partitions {
		c.Partitions[i] = p.clone()
	}
	return &c
}

func (b *BrokerInfo) clone() *BrokerInfo {
	c := *b
	c.Listeners = slices.Clone(b.Listeners)
	return &c
}

// imageBuilder builds the next image from a previous one, copying each map,
// topic and broker at most once, on first write.
type imageBuilder struct {
	img           *Image
	copiedBrokers bool
	copiedTopics  bool
	copiedConfigs bool
	copiedGroups  bool
	copiedACLs    bool
	copiedScram   bool
	copiedQuotas  bool
	ownQuotas     map[quota.Entity]bool
	ownTopics     map[string]bool
	ownBrokers    map[int32]bool
}

func newImageBuilder(prev *Image) *imageBuilder {
	img := *prev
	return &imageBuilder{img: &img, ownTopics: map[string]bool{}, ownBrokers: map[int32]bool{}}
}

func (b *imageBuilder) brokersForWrite() map[int32]*BrokerInfo {
	if !b.copiedBrokers {
		b.img.Brokers = maps.Clone(b.img.Brokers)
		b.copiedBrokers = true
	}
	return b.img.Brokers
}

func (b *imageBuilder) topicsForWrite() {
	if !b.copiedTopics {
		b.img.Topics = maps.Clone(b.img.Topics)
		b.img.TopicsByID = maps.Clone(b.img.TopicsByID)
		b.copiedTopics = true
	}
}

// broker returns a writable copy of broker id, or nil.
func (b *imageBuilder) broker(id int32) *BrokerInfo {
	cur := b.img.Brokers[id]
	if cur == nil || b.ownBrokers[id] {
		return cur
	}
	c := cur.clone()
	b.brokersForWrite()[id] = c
	b.ownBrokers[id] = true
	return c
}

func (b *imageBuilder) putBroker(bi *BrokerInfo) {
	b.brokersForWrite()[bi.ID] = bi
	b.ownBrokers[bi.ID] = true
}

func (b *imageBuilder) deleteBroker(id int32) {
	delete(b.brokersForWrite(), id)
	delete(b.ownBrokers, id)
}

// topic returns a writable copy of the named topic, or nil.
func (b *imageBuilder) topic(name string) *Topic {
	cur := b.img.Topics[name]
	if cur == nil || b.ownTopics[name] {
		return cur
	}
	c := cur.clone()
	b.putTopic(c)
	return c
}

func (b *imageBuilder) putTopic(t *Topic) {
	b.topicsForWrite()
	b.img.Topics[t.Name] = t
	b.img.TopicsByID[t.ID] = t
	b.ownTopics[t.Name] = true
}

func (b *imageBuilder) deleteTopic(t *Topic) {
	b.topicsForWrite()
	delete(b.img.Topics, t.Name)
	delete(b.img.TopicsByID, t.ID)
	delete(b.ownTopics, t.Name)
}

// brokerConfig returns a writable copy of one broker config resource, creating it.
func (b *imageBuilder) brokerConfig(resource string) map[string]string {
	if !b.copiedConfigs {
		b.img.BrokerConfigs = maps.Clone(b.img.BrokerConfigs)
		b.copiedConfigs = true
	}
	m := maps.Clone(b.img.BrokerConfigs[resource])
	if m == nil {
		m = map[string]string{}
	}
	b.img.BrokerConfigs[resource] = m
	return m
}

func (b *imageBuilder) dropEmptyBrokerConfig(resource string) {
	if len(b.img.BrokerConfigs[resource]) == 0 {
		delete(b.img.BrokerConfigs, resource)
	}
}

// groupConfig returns a writable copy of one group's configs, creating it.
func (b *imageBuilder) groupConfig(group string) map[string]string {
	if !b.copiedGroups {
		b.img.GroupConfigs = maps.Clone(b.img.GroupConfigs)
		if b.img.GroupConfigs == nil {
			b.img.GroupConfigs = map[string]map[string]string{}
		}
		b.copiedGroups = true
	}
	m := maps.Clone(b.img.GroupConfigs[group])
	if m == nil {
		m = map[string]string{}
	}
	b.img.GroupConfigs[group] = m
	return m
}

func (b *imageBuilder) dropEmptyGroupConfig(group string) {
	if len(b.img.GroupConfigs[group]) == 0 {
		delete(b.img.GroupConfigs, group)
	}
}

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
