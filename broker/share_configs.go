package broker

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/config"
)

// GROUP config resources (KIP-848/KIP-932): kbroker serves the share.*
// group configs of shareconfig, stored in the metadata image by group id
// (a group needs not exist to have them, as in Kafka).

// sourceGroupConfig is DescribeConfigs' GROUP_CONFIG source.
const sourceGroupConfig int8 = 8

// groupConfigTypes and groupConfigDocs describe the share.* group configs
// for DescribeConfigs.
var (
	groupConfigTypes = map[string]config.Type{
		shareconfig.AutoOffsetReset: config.TypeString, shareconfig.IsolationLevel: config.TypeString,
		shareconfig.RenewAcknowledgeEnable: config.TypeBoolean,
	}
	groupConfigDocs = map[string]string{
		shareconfig.SessionTimeoutMs:        "A share group member that does not heartbeat for this long is removed.",
		shareconfig.HeartbeatIntervalMs:     "The heartbeat interval given to the share group's members.",
		shareconfig.RecordLockDurationMs:    "How long an acquired record stays locked to the member that acquired it.",
		shareconfig.DeliveryCountLimit:      "A record delivered this many times is archived instead of delivered again.",
		shareconfig.PartitionMaxRecordLocks: "The most in-flight records of one share-partition.",
		shareconfig.AutoOffsetReset:         "Where a share-partition without state starts: earliest, latest or by_duration:<ISO-8601 duration>.",
		shareconfig.IsolationLevel:          "read_committed acquires only committed transactional records, below the last stable offset.",
		shareconfig.RenewAcknowledgeEnable:  "Whether members may extend their acquisition locks (RENEW, KIP-1222).",
	}
)

// validateGroupConfig checks a group's configs as they would be after a
// change (controller.Options.ValidateGroupConfig): only the share.*
// configs are served; their values within the broker's group.share.*
// bounds (shareconfig.Validate).
func (b *Broker) validateGroupConfig(props map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !shareconfig.IsShareConfig(name) {
			return fmt.Errorf("unknown group config name: %s (kbroker serves the share.* group configs)", name)
		}
	}
	return shareconfig.Validate(props, shareBounds(b.cfg))
}

// describeGroupConfigs lists a group's share.* configs: its own values
// (GROUP_CONFIG) and the broker defaults (DEFAULT_CONFIG) for the rest.
func (b *Broker) describeGroupConfigs(view *metadataView, r *kmsg.DescribeConfigsRequest, rr kmsg.DescribeConfigsRequestResource, res *kmsg.DescribeConfigsResponseResource) {
	if rr.ResourceName == "" {
		res.ErrorCode = kerr.InvalidRequest.Code
		res.ErrorMessage = kmsg.StringPtr("group name must not be empty")
		return
	}
	for _, e := range shareconfig.Describe(view.img.GroupConfigs[rr.ResourceName], shareBounds(b.cfg)) {
		if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		source := sourceGroupConfig
		if e.IsDefault {
			source = sourceDefault
		}
		c.Name, c.Value, c.Source, c.IsDefault = e.Name, kmsg.StringPtr(e.Value), kmsg.ConfigSource(source), e.IsDefault
		c.ConfigType = kmsg.ConfigType(config.TypeInt)
		if t, ok := groupConfigTypes[e.Name]; ok {
			c.ConfigType = kmsg.ConfigType(t)
		}
		if r.IncludeSynonyms {
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{synonym(e.Name, e.Value, source)}
		}
		if r.IncludeDocumentation {
			c.Documentation = kmsg.StringPtr(groupConfigDocs[e.Name])
		}
		res.Configs = append(res.Configs, c)
	}
}
