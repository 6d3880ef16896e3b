package broker

// Metadata (key 3), v0-v12.
//
// Answered from this broker's applied image: live (unfenced) brokers on the
// listener the request arrived on, and per partition the leader, leader epoch,
// replicas, ISR and offline replicas (replicas on fenced or unknown brokers).
// A partition without a leader gets LEADER_NOT_AVAILABLE. Topics asked for by
// name that do not exist are created when the request allows it (v4+; always
// before v4) and auto.create.topics.enable is on; the answer for them is
// LEADER_NOT_AVAILABLE with no partitions, as Kafka's, and the client asks
// again.
// v10+ may ask by topic id. Authorization: topics without DESCRIBE are left
// out of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when named;
// auto-creation needs CLUSTER or TOPIC CREATE; authorized operations are
// the principal's (KIP-430). ControllerID is the active controller when it is
// a live broker (combined mode), otherwise a live broker, as KRaft answers.

import (
	"context"
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
)

// authorizedOpsOmitted is KIP-430's "not asked for"; authorizedOpsAll the
// bits authorizeMetadata replaces with the principal's (authz_metadata.go).
const (
	authorizedOpsOmitted int32 = -2147483648
	authorizedOpsAll     int32 = 0x0FF8 // READ..IDEMPOTENT_WRITE bits 3-11
)

func (b *Broker) handleMetadata(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.MetadataRequest)
	if len(b.unknownTopics(r)) == 0 {
		return protocol.Response{Body: b.authorizeMetadata(req, r, b.metadataResponse(req, r, nil))}
	}
	// A topic asked for by name that this broker does not know may have
	// been created a moment ago through another broker: catch up with the
	// controller's commits first (syncMetadata). Creating goes through the
	// controller too. Both answer later, without holding up this
	// connection's reader.
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		b.syncMetadata(ctx)
		autoCreate := b.cfg.AutoCreateTopicsEnable && (r.Version < 4 || r.AllowAutoTopicCreation)
		var missing []string
		var created map[string]int16
		if autoCreate {
			missing, created = b.authorizeAutoCreate(req, nonInternal(b.unknownTopics(r)))
		}
		if len(missing) > 0 {
			autoCreated := b.autoCreateTopics(ctx, missing)
			if created == nil {
				created = autoCreated
			} else {
				maps.Copy(created, autoCreated)
			}
		}
		return b.authorizeMetadata(req, r, b.metadataResponse(req, r, created))
	}}
}

// unknownTopics lists the valid topic names asked for that this broker's
// image does not have.
func (b *Broker) unknownTopics(r *kmsg.MetadataRequest) []string {
	view := b.announcedView()
	var out []string
	for _, t := range r.Topics {
		if t.Topic == nil || *t.Topic == "" {
			continue
		}
		if _, ok := view.img.Topics[*t.Topic]; !ok && validTopicName(*t.Topic) == nil {
			out = append(out, *t.Topic)
		}
	}
	return out
}

// nonInternal drops internal topics, which are never auto-created.
func nonInternal(topics []string) []string {
	return slices.DeleteFunc(topics, isInternalTopic)
}

func (b *Broker) metadataResponse(req *protocol.Request, r *kmsg.MetadataRequest, created map[string]int16) *kmsg.MetadataResponse {
	view := b.announcedView()
	img := view.img
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = kmsg.StringPtr(img.ClusterID)
	resp.ControllerID = b.metadataControllerID(img)
	resp.Brokers = b.metadataBrokers(img, req.Conn.Listener)
	if r.Version >= 8 && r.Version <= 10 {
		resp.AuthorizedOperations = authorizedOpsOmitted
		if r.IncludeClusterAuthorizedOperations {
			resp.AuthorizedOperations = authorizedOpsAll
		}
	}
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		names := make([]string, 0, len(img.Topics))
		for name := range img.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			resp.Topics = append(resp.Topics, b.metadataTopic(img, img.Topics[name], r))
		}
		return resp
	}
	for _, rt := range r.Topics {
		resp.Topics = append(resp.Topics, b.metadataRequestedTopic(img, rt, r, created))
	}
	return resp
}

func (b *Broker) metadataRequestedTopic(img *controller.Image, rt kmsg.MetadataRequestTopic, r *kmsg.MetadataRequest, created map[string]int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
	mt.AuthorizedOperations = authorizedOpsOmitted
	if rt.Topic == nil || *rt.Topic == "" {
		t, ok := img.TopicsByID[rt.TopicID]
		if !ok {
			mt.ErrorCode = kerr.UnknownTopicID.Code
			return mt
		}
		return b.metadataTopic(img, t, r)
	}
	name := *rt.Topic
	if code, ok := created[name]; ok {
		// Created by this request: Kafka answers LEADER_NOT_AVAILABLE
		// with no partitions, even once the creation is applied here;
		// the client asks again.
		mt.ErrorCode = code
		return mt
	}
	if t, ok := img.Topics[name]; ok {
		return b.metadataTopic(img, t, r)
	}
	switch {
	case validTopicName(name) != nil:
		mt.ErrorCode = kerr.InvalidTopicException.Code
	default:
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	}
	return mt
}

func (b *Broker) metadataTopic(img *controller.Image, t *controller.Topic, r *kmsg.MetadataRequest) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.AuthorizedOperations = authorizedOpsOmitted
	if r.IncludeTopicAuthorizedOperations {
		mt.AuthorizedOperations = authorizedOpsAll
	}
	for _, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p.Index
		mp.Leader = p.Leader
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = slices.Clone(p.Replicas)
		mp.ISR = slices.Clone(p.ISR)
		mp.OfflineReplicas = offlineReplicas(img, p.Replicas)
		if p.Leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// offlineReplicas are the replicas on brokers that are fenced or gone.
func offlineReplicas(img *controller.Image, replicas []int32) []int32 {
	out := []int32{}
	for _, id := range replicas {
		if br, ok := img.Brokers[id]; !ok || br.Fenced {
			out = append(out, id)
		}
	}
	return out
}

// metadataBrokers lists live brokers with their endpoint on listener (the
// one the client connected through), sorted by id.
func (b *Broker) metadataBrokers(img *controller.Image, listener string) []kmsg.MetadataResponseBroker {
	ids := make([]int32, 0, len(img.Brokers))
	for id, br := range img.Brokers {
		if !br.Fenced {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]kmsg.MetadataResponseBroker, 0, len(ids))
	for _, id := range ids {
		br := img.Brokers[id]
		ep, ok := endpointFor(br, listener, b.cfg.InterBrokerListenerName)
		if !ok {
			continue
		}
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = id, ep.Host, ep.Port
		if br.Rack != "" {
			mb.Rack = kmsg.StringPtr(br.Rack)
		}
		out = append(out, mb)
	}
	return out
}

// endpointFor picks a broker's endpoint on listener, falling back to the
// inter-broker listener (a request that arrived on a listener the broker does
// not advertise, such as the controller port).
func endpointFor(br *controller.BrokerInfo, listener, fallback string) (controller.Endpoint, bool) {
	for _, name := range []string{listener, fallback} {
		for _, ep := range br.Listeners {
			if ep.Name == name {
				return ep, true
			}
		}
	}
	return controller.Endpoint{}, false
}

// metadataControllerID is the active controller if it is a live broker, else
// the lowest live broker: clients send admin requests there and we forward.
func (b *Broker) metadataControllerID(img *controller.Image) int32 {
	if id := b.ctrl.ActiveControllerID(); id >= 0 {
		if br, ok := img.Brokers[id]; ok && !br.Fenced {
			return id
		}
	}
	best := int32(-1)
	for id, br := range img.Brokers {
		if !br.Fenced && (best < 0 || id < best) {
			best = id
		}
	}
	return best
}

func isInternalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}
