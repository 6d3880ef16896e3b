package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/quota"
)

// CreateTopics (19), DeleteTopics (20) and CreatePartitions (37), after
// Kafka's ReplicationControlManager and ControllerApis.

// apiError is a Kafka error code with its message.
type apiError struct {
	code int16
	msg  string
}

func newAPIError(err *kerr.Error, format string, args ...any) *apiError {
	return &apiError{code: err.Code, msg: fmt.Sprintf(format, args...)}
}

func (e *apiError) message() *string {
	if e == nil || e.msg == "" {
		return nil
	}
	return &e.msg
}

func (e *apiError) errCode() int16 {
	if e == nil {
		return 0
	}
	return e.code
}

// maxPartitionsPerRequest bounds what one request may create, so that a
// typo cannot make the controller allocate billions of partitions.
const maxPartitionsPerRequest = 100_000

// validateTopicName is Kafka's Topic.validate.
func validateTopicName(name string) *apiError {
	switch {
	case name == "":
		return newAPIError(kerr.InvalidTopicException, "Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return newAPIError(kerr.InvalidTopicException, "Topic name cannot be \".\" or \"..\"")
	case len(name) > 249:
		return newAPIError(kerr.InvalidTopicException, "Topic name is illegal, it can't be longer than 249 characters, topic name: %s", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return newAPIError(kerr.InvalidTopicException, "Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collisionKey is the name a topic collides on: '.' and '_' are the same in
// metric names.
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

// duplicates returns the names that occur more than once.
func duplicates(names []string) map[string]bool {
	seen, dup := map[string]bool{}, map[string]bool{}
	for _, n := range names {
		if seen[n] {
			dup[n] = true
		}
		seen[n] = true
	}
	return dup
}

// topicPlanner validates and plans topic creations against one image, also
// remembering names planned earlier in the same request.
type topicPlanner struct {
	c          *controller
	img        *Image
	collisions map[string]string // collision key -> existing or planned name
	brokerIDs  []int32           // live brokers, sorted
	racks      map[int32]string  // live brokers' racks (broker.rack), "" for none
}

func (c *controller) newTopicPlanner(img *Image) *topicPlanner {
	tp := &topicPlanner{c: c, img: img, collisions: map[string]string{}, racks: map[int32]string{}}
	for name := range img.Topics {
		tp.collisions[collisionKey(name)] = name
	}
	for _, b := range img.LiveBrokers() {
		tp.brokerIDs = append(tp.brokerIDs, b.ID)
		tp.racks[b.ID] = b.Rack
	}
	return tp
}

// plan returns the record creating rt, or the error refusing it.
func (tp *topicPlanner) plan(rt *kmsg.CreateTopicsRequestTopic) (*createTopicRecord, *apiError) {
	if e := validateTopicName(rt.Topic); e != nil {
		return nil, e
	}
	if tp.img.Topics[rt.Topic] != nil {
		return nil, newAPIError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", rt.Topic)
	}
	if other, ok := tp.collisions[collisionKey(rt.Topic)]; ok {
		return nil, newAPIError(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", rt.Topic, other)
	}
	configs, e := tp.c.topicConfigs(rt.Configs)
	if e != nil {
		return nil, e
	}
	var parts []partitionRecord
	if len(rt.ReplicaAssignment) > 0 {
		parts, e = tp.manualPartitions(rt)
	} else {
		parts, e = tp.placedPartitions(rt.NumPartitions, rt.ReplicationFactor, 0)
	}
	if e != nil {
		return nil, e
	}
	tp.collisions[collisionKey(rt.Topic)] = rt.Topic
	return &createTopicRecord{Name: rt.Topic, ID: newUUID(), Configs: configs, Partitions: parts}, nil
}

func (c *controller) topicConfigs(cfgs []kmsg.CreateTopicsRequestTopicConfig) (map[string]string, *apiError) {
	out := map[string]string{}
	for _, cfg := range cfgs {
		if cfg.Value == nil {
			return nil, newAPIError(kerr.InvalidConfig, "Null value not supported for topic configs: %s", cfg.Name)
		}
		if e := c.validateTopicConfig(cfg.Name, *cfg.Value); e != nil {
			return nil, e
		}
		out[cfg.Name] = *cfg.Value
	}
	return out, nil
}

func (c *controller) validateTopicConfig(name, value string) *apiError {
	if c.opts.ValidateTopicConfig == nil {
		return nil
	}
	if err := c.opts.ValidateTopicConfig(name, value); err != nil {
		return newAPIError(kerr.InvalidConfig, "%s", err.Error())
	}
	return nil
}

func (tp *topicPlanner) manualPartitions(rt *kmsg.CreateTopicsRequestTopic) ([]partitionRecord, *apiError) {
	switch {
	case rt.ReplicationFactor != -1:
		return nil, newAPIError(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
	case rt.NumPartitions != -1:
		return nil, newAPIError(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
	}
	parts := make([]partitionRecord, len(rt.ReplicaAssignment))
	set := make([]bool, len(rt.ReplicaAssignment))
	rf := -1
	for _, a := range rt.ReplicaAssignment {
		i := a.Partition
		if i < 0 || int(i) >= len(parts) {
			return nil, newAPIError(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
		}
		if set[i] {
			return nil, newAPIError(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", i)
		}
		p, e := tp.manualPartition(a.Replicas, i, rf)
		if e != nil {
			return nil, e
		}
		parts[i], set[i], rf = p, true, len(a.Replicas)
	}
	return parts, nil
}

// manualPartition validates one explicit assignment (Kafka's
// validateManualPartitionAssignment); rf is the count earlier partitions
// have, -1 for none. The ISR is the live replicas, the leader the first.
func (tp *topicPlanner) manualPartition(replicas []int32, partition int32, rf int) (partitionRecord, *apiError) {
	if e := validateReplicaList(tp.img, replicas); e != nil {
		return partitionRecord{}, e
	}
	if rf >= 0 && len(replicas) != rf {
		return partitionRecord{}, newAPIError(kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	var isr []int32
	for _, id := range replicas {
		if tp.img.isLive(id) {
			isr = append(isr, id)
		}
	}
	if len(isr) == 0 {
		return partitionRecord{}, newAPIError(kerr.InvalidReplicaAssignment,
			"All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", partition)
	}
	return partitionRecord{Replicas: slices.Clone(replicas), ISR: isr, Leader: isr[0]}, nil
}

// validateReplicaList checks an explicit replica list: not empty, registered
// brokers (fenced ones too), no broker twice. It is the common part of
// Kafka's validateManualPartitionAssignment.
func validateReplicaList(img *Image, replicas []int32) *apiError {
	if len(replicas) == 0 {
		return newAPIError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	for i, id := range replicas {
		if img.Brokers[id] == nil {
			return newAPIError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if slices.Contains(replicas[:i], id) {
			return newAPIError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}

// placedPartitions places n partitions (-1: the default) of replication
// factor rf (-1: the default) over the live brokers, numbered from first.
func (tp *topicPlanner) placedPartitions(n int32, rf int16, first int) ([]partitionRecord, *apiError) {
	switch {
	case rf < -1 || rf == 0:
		return nil, newAPIError(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	case n < -1 || n == 0:
		return nil, newAPIError(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	if n == -1 {
		n = tp.c.opts.DefaultNumPartitions
	}
	if rf == -1 {
		rf = tp.c.opts.DefaultReplicationFactor
	}
	if n > maxPartitionsPerRequest {
		return nil, newAPIError(kerr.InvalidPartitions, "Number of partitions %d exceeds the limit of %d per request.", n, maxPartitionsPerRequest)
	}
	assignment, err := placeReplicas(tp.brokerIDs, tp.racks, int(n), int(rf), first, tp.c.opts.Rand)
	if err != nil {
		return nil, newAPIError(kerr.InvalidReplicationFactor, "%s", err.Error())
	}
	parts := make([]partitionRecord, len(assignment))
	for i, replicas := range assignment {
		parts[i] = partitionRecord{Replicas: replicas, ISR: slices.Clone(replicas), Leader: replicas[0]}
	}
	return parts, nil
}

func (c *controller) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	tp := c.newTopicPlanner(img)
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	dup := duplicates(names)
	q := c.mutationQuota(ctx, req.Version, quota.StrictCreateTopicsVersion)
	var recs []record
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.NumPartitions, st.ReplicationFactor = rt.Topic, -1, -1
		var rec *createTopicRecord
		var e *apiError
		switch {
		case dup[rt.Topic]:
			e = newAPIError(kerr.InvalidRequest, "Duplicate topic name.")
		case rt.Topic == metadataTopic:
			e = newAPIError(kerr.InvalidRequest, "Creation of internal topic %s is prohibited.", metadataTopic)
		default:
			rec, e = tp.plan(rt)
		}
		if e == nil {
			// Counted for validate-only requests too, as KRaft does.
			e = recordMutation(q, len(rec.Partitions))
		}
		if e != nil {
			st.ErrorCode, st.ErrorMessage = e.code, e.message()
			resp.Topics = append(resp.Topics, st)
			continue
		}
		fillCreatedTopic(&st, rec, req.ValidateOnly)
		resp.Topics = append(resp.Topics, st)
		recs = append(recs, rec)
	}
	defer func() { resp.ThrottleMillis = maxThrottle(resp.ThrottleMillis, q) }()
	if req.ValidateOnly || len(recs) == 0 {
		return resp, nil
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	c.publishCommits()
	for _, r := range recs {
		rec := r.(*createTopicRecord)
		c.log.Info("topic created", "topic", rec.Name, "id", rec.ID, "partitions", len(rec.Partitions))
	}
	return resp, nil
}

func fillCreatedTopic(st *kmsg.CreateTopicsResponseTopic, rec *createTopicRecord, validateOnly bool) {
	if !validateOnly {
		st.TopicID = rec.ID
	}
	st.NumPartitions = int32(len(rec.Partitions))
	st.ReplicationFactor = int16(len(rec.Partitions[0].Replicas))
	for _, k := range slices.Sorted(maps.Keys(rec.Configs)) {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name, cfg.Value = k, ptrTo(rec.Configs[k])
		cfg.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		st.Configs = append(st.Configs, cfg)
	}
}

func (c *controller) deleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	topics := req.Topics
	for _, name := range req.TopicNames { // v0-v5
		topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: ptrTo(name)})
	}
	q := c.mutationQuota(ctx, req.Version, quota.StrictDeleteTopicsVersion)
	defer func() { resp.ThrottleMillis = maxThrottle(resp.ThrottleMillis, q) }()
	var recs []record
	planned := map[[16]byte]bool{}
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, e := lookupTopicToDelete(img, rt)
		if e == nil && !planned[t.ID] {
			e = recordMutation(q, len(t.Partitions))
		}
		if e != nil {
			st.ErrorCode, st.ErrorMessage = e.code, e.message()
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.Topic, st.TopicID = ptrTo(t.Name), t.ID
		if !planned[t.ID] {
			planned[t.ID] = true
			recs = append(recs, &deleteTopicRecord{Name: t.Name, ID: t.ID})
		}
		resp.Topics = append(resp.Topics, st)
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	if len(recs) > 0 {
		c.publishCommits()
		c.log.Info("topics deleted", "count", len(recs))
	}
	return resp, nil
}

func lookupTopicToDelete(img *Image, rt kmsg.DeleteTopicsRequestTopic) (*Topic, *apiError) {
	switch {
	case rt.Topic != nil && *rt.Topic != "" && rt.TopicID != [16]byte{}:
		return nil, newAPIError(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
	case rt.TopicID != [16]byte{}:
		if t := img.TopicsByID[rt.TopicID]; t != nil {
			return t, nil
		}
		return nil, newAPIError(kerr.UnknownTopicID, "")
	case rt.Topic != nil:
		if t := img.Topics[*rt.Topic]; t != nil {
			return t, nil
		}
	}
	return nil, newAPIError(kerr.UnknownTopicOrPartition, "")
}

func (c *controller) createPartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	tp := c.newTopicPlanner(img)
	names := make([]string, len(req.Topics))
	for i, t := range req.Topics {
		names[i] = t.Topic
	}
	dup := duplicates(names)
	q := c.mutationQuota(ctx, req.Version, quota.StrictCreatePartitionsVersion)
	defer func() { resp.ThrottleMillis = maxThrottle(resp.ThrottleMillis, q) }()
	var recs []record
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var rec *createPartitionsRecord
		var e *apiError
		if dup[rt.Topic] {
			e = newAPIError(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			rec, e = tp.planPartitions(rt)
		}
		if e == nil {
			e = recordMutation(q, len(rec.Partitions))
		}
		if e != nil {
			st.ErrorCode, st.ErrorMessage = e.code, e.message()
		} else {
			recs = append(recs, rec)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.ValidateOnly {
		return resp, nil
	}
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

// planPartitions is Kafka's ReplicationControlManager.createPartitions for one topic.
func (tp *topicPlanner) planPartitions(rt *kmsg.CreatePartitionsRequestTopic) (*createPartitionsRecord, *apiError) {
	t := tp.img.Topics[rt.Topic]
	if t == nil {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "")
	}
	have := int32(len(t.Partitions))
	switch {
	case rt.Count == have:
		return nil, newAPIError(kerr.InvalidPartitions, "Topic already has %d partition(s).", have)
	case rt.Count < have:
		return nil, newAPIError(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, have, rt.Count)
	case rt.Count-have > maxPartitionsPerRequest:
		return nil, newAPIError(kerr.InvalidPartitions, "Adding %d partitions exceeds the limit of %d per request.", rt.Count-have, maxPartitionsPerRequest)
	}
	additional := rt.Count - have
	// The replication factor of partition 0's assignment, or of its target
	// while it is being reassigned (Kafka would count the merged replicas).
	p0 := t.Partitions[0]
	rf := len(p0.Replicas) - len(p0.RemovingReplicas)
	rec := &createPartitionsRecord{Topic: t.Name, TopicID: t.ID}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != additional {
			return nil, newAPIError(kerr.InvalidReplicaAssignment,
				"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			p, e := tp.manualPartition(a.Replicas, have+int32(i), rf)
			if e != nil {
				return nil, e
			}
			rec.Partitions = append(rec.Partitions, p)
		}
		return rec, nil
	}
	parts, e := tp.placedPartitions(additional, int16(rf), int(have))
	if e != nil {
		return nil, e
	}
	rec.Partitions = parts
	return rec, nil
}
