package broker

// DescribeConfigs (key 32), v1-v4.
//
// TOPIC resources list every topic config kbroker knows with its effective
// value: the topic's override (DYNAMIC_TOPIC_CONFIG) or the broker default it
// inherits (STATIC_BROKER_CONFIG when the broker synonym was set in a file,
// the environment or a flag; DEFAULT_CONFIG otherwise), with synonyms on
// request, types (v3+) and documentation (v3+). BROKER resources (this broker's
// id, or "" for cluster defaults) list every broker key with its source.
// GROUP resources list a group's share.* configs (GROUP_CONFIG when set,
// DEFAULT_CONFIG otherwise; share_configs.go). ConfigNames filters; an
// unknown topic gets UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// Kafka's DescribeConfigs config sources.
const (
	sourceDynamicTopic         int8 = 1
	sourceDynamicBroker        int8 = 2
	sourceDynamicDefaultBroker int8 = 3
	sourceStaticBroker         int8 = 4
	sourceDefault              int8 = 5
)

// dynamicBrokerValue is a broker key's dynamic value on this broker: its own
// (DYNAMIC_BROKER_CONFIG) over the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG).
func (b *Broker) dynamicBrokerValue(view *metadataView, key string) (string, int8, bool) {
	if v, ok := view.img.BrokerConfigs[strconv.Itoa(int(b.cfg.NodeID))][key]; ok {
		return v, sourceDynamicBroker, true
	}
	if v, ok := view.img.BrokerConfigs[""][key]; ok {
		return v, sourceDynamicDefaultBroker, true
	}
	return "", 0, false
}

func (b *Broker) handleDescribeConfigs(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	view := b.view()
	for _, rr := range r.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		if res.ErrorCode = b.configResourceAllowed(req, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName); res.ErrorCode != 0 {
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			b.describeTopicConfigs(view, r, rr, &res)
		case kmsg.ConfigResourceTypeBroker:
			b.describeBrokerConfigs(view, r, rr, &res)
		case kmsg.ConfigResourceTypeGroupConfig:
			b.describeGroupConfigs(view, r, rr, &res)
		case kmsg.ConfigResourceTypeBrokerLogger:
			// Loggers are not configurable per class: an empty list.
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
			res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("unsupported resource type %d", rr.ResourceType))
		}
		resp.Resources = append(resp.Resources, res)
	}
	return protocol.Response{Body: resp}
}

func (b *Broker) describeTopicConfigs(view *metadataView, r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	t, ok := view.img.Topics[rr.ResourceName]
	if !ok {
		res.ErrorCode = kerr.UnknownTopicOrPartition.Code
		res.ErrorMessage = kmsg.StringPtr("topic " + rr.ResourceName + " does not exist")
		return
	}
	defaults := b.cfg.TopicDefaults()
	brokerSources := make(map[string]config.Entry)
	for _, e := range b.cfg.Entries() {
		brokerSources[e.Name] = e
	}
	for _, k := range config.TopicKeys() {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, k.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.ConfigType = k.Name, kmsg.ConfigType(k.Type)
		var synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
		if v, ok := t.Configs[k.Name]; ok {
			c.Value, c.Source = kmsg.StringPtr(v), kmsg.ConfigSource(sourceDynamicTopic)
			synonyms = append(synonyms, synonym(k.Name, v, sourceDynamicTopic))
		}
		if v, src, ok := b.dynamicBrokerValue(view, k.BrokerSynonym); ok && k.BrokerSynonym != "" {
			if c.Value == nil {
				c.Value, c.Source = kmsg.StringPtr(v), kmsg.ConfigSource(src)
			}
			synonyms = append(synonyms, synonym(k.BrokerSynonym, v, src))
		}
		if k.BrokerSynonym != "" {
			e := brokerSources[k.BrokerSynonym]
			src := e.Source.KafkaSource()
			if c.Value == nil {
				c.Value, c.Source = kmsg.StringPtr(defaults[k.Name]), kmsg.ConfigSource(src)
			}
			if src == sourceStaticBroker {
				synonyms = append(synonyms, synonym(k.BrokerSynonym, defaults[k.Name], sourceStaticBroker))
			}
		}
		if c.Value == nil {
			c.Value, c.Source = kmsg.StringPtr(defaults[k.Name]), kmsg.ConfigSource(sourceDefault)
		}
		synonyms = append(synonyms, synonym(defaultSynonymName(k), k.Default, sourceDefault))
		c.IsDefault = c.Source == kmsg.ConfigSource(sourceDefault)
		if r.IncludeSynonyms {
			c.ConfigSynonyms = synonyms
		}
		if r.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(k.Doc)
		}
		res.Configs = append(res.Configs, c)
	}
}

func defaultSynonymName(k config.TopicKey) string {
	if k.BrokerSynonym != "" {
		return k.BrokerSynonym
	}
	return k.Name
}

func synonym(name, value string, source int8) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, kmsg.StringPtr(value), kmsg.ConfigSource(source)
	return s
}

func (b *Broker) describeBrokerConfigs(view *metadataView, r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
		res.ErrorCode = kerr.InvalidRequest.Code
		res.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("unexpected broker id: this is broker %d, asked for %s", b.cfg.NodeID, rr.ResourceName))
		return
	}
	for _, e := range b.cfg.Entries() {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
			continue
		}
		dynValue, dynSource, dynamic := b.dynamicBrokerValue(view, e.Name)
		if rr.ResourceName == "" {
			// The cluster-default resource lists only the dynamic defaults.
			if v, ok := view.img.BrokerConfigs[""][e.Name]; ok {
				dynValue, dynSource, dynamic = v, sourceDynamicDefaultBroker, true
			} else {
				continue
			}
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = e.Name
		if !e.Null {
			c.Value = kmsg.StringPtr(e.Value)
		}
		c.ReadOnly, c.IsSensitive = e.ReadOnly, e.Sensitive
		c.Source = kmsg.ConfigSource(e.Source.KafkaSource())
		if dynamic {
			c.Value, c.Source = kmsg.StringPtr(dynValue), kmsg.ConfigSource(dynSource)
		}
		c.IsDefault = c.Source == kmsg.ConfigSource(sourceDefault)
		c.ConfigType = kmsg.ConfigType(e.Type)
		if r.IncludeSynonyms {
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(e.Name, e.Value, int8(c.Source))}
		}
		if r.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(e.Doc)
		}
		res.Configs = append(res.Configs, c)
	}
	b.describeDynamicOnly(view, r, rr, res)
}

// describeDynamicOnly adds the dynamic broker configs that have no static
// entry (listener.name.<l>.* set through AlterConfigs), as Kafka lists
// them: secrets as null.
func (b *Broker) describeDynamicOnly(view *metadataView, r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	resources := []string{""}
	if rr.ResourceName != "" {
		resources = []string{strconv.Itoa(int(b.cfg.NodeID)), ""} // its own first
	}
	seen := map[string]bool{}
	for _, resource := range resources {
		for _, name := range slices.Sorted(maps.Keys(view.img.BrokerConfigs[resource])) {
			if seen[name] || !config.IsDynamicOnly(name) || (rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, name)) {
				continue
			}
			seen[name] = true
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Source = name, kmsg.ConfigSource(sourceDynamicDefaultBroker)
			if resource != "" {
				c.Source = kmsg.ConfigSource(sourceDynamicBroker)
			}
			c.ConfigType = kmsg.ConfigType(config.TypeString)
			if config.SensitiveProperty(name) {
				c.IsSensitive, c.ConfigType = true, kmsg.ConfigType(config.TypePassword)
			} else {
				c.Value = kmsg.StringPtr(view.img.BrokerConfigs[resource][name])
			}
			if r.IncludeSynonyms {
				syn := synonym(name, "", int8(c.Source))
				syn.Value = c.Value
				c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{syn}
			}
			res.Configs = append(res.Configs, c)
		}
	}
}
