package controller

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs (44) and AlterConfigs (33) for TOPIC, BROKER
// and GROUP resources (BROKER "" is the cluster-wide default). Changed
// values go through Options.ValidateTopicConfig (INVALID_CONFIG) and
// Options.ValidateBrokerConfig (INVALID_REQUEST, as Kafka's broker-side
// DynamicBrokerConfig check answers); a group's configs as a whole through
// Options.ValidateGroupConfig (INVALID_CONFIG). A group needs not exist
// to have configs (Kafka keeps them by group id). A resource named twice in one request
// is refused in both places, as Kafka's ConfigAdminManager does.

// configResource resolves a resource to its current configs, or an error.
// A broker resource must name a registered broker or a voter (Kafka's
// ConfigResourceExistenceChecker).
func (c *controller) configResource(img *Image, typ kmsg.ConfigResourceType, name string) (map[string]string, *apiError) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		t := img.Topics[name]
		if t == nil {
			return nil, newAPIError(kerr.UnknownTopicOrPartition, "Topic %s does not exist.", name)
		}
		return t.Configs, nil
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil || id < 0 {
				return nil, newAPIError(kerr.InvalidRequest, "Invalid broker name %s", name)
			}
			if img.Brokers[int32(id)] == nil && !c.opts.isVoterID(int32(id)) {
				return nil, newAPIError(kerr.BrokerIDNotRegistered, "No broker with id %d found.", id)
			}
		}
		return img.BrokerConfigs[name], nil
	case kmsg.ConfigResourceTypeGroupConfig:
		if name == "" {
			return nil, newAPIError(kerr.InvalidRequest, "Group name must not be empty.")
		}
		return img.GroupConfigs[name], nil
	}
	return nil, newAPIError(kerr.InvalidRequest, "Unsupported resource type %v for the controller", typ)
}

// configChanges turns a resource's wanted configs into SetConfig records,
// validating changed values.
func (c *controller) configChanges(typ kmsg.ConfigResourceType, name string, cur, want map[string]string) ([]record, *apiError) {
	if typ == kmsg.ConfigResourceTypeGroupConfig && c.opts.ValidateGroupConfig != nil {
		if err := c.opts.ValidateGroupConfig(want); err != nil {
			return nil, newAPIError(kerr.InvalidConfig, "%s", err.Error())
		}
	}
	var recs []record
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v := want[k]
		if old, ok := cur[k]; ok && old == v {
			continue
		}
		if e := c.validateConfig(typ, name, k, v); e != nil {
			return nil, e
		}
		recs = append(recs, &setConfigRecord{ResourceType: int8(typ), Resource: name, Key: k, Value: ptrTo(v)})
	}
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		if _, ok := want[k]; !ok {
			recs = append(recs, &setConfigRecord{ResourceType: int8(typ), Resource: name, Key: k})
		}
	}
	return recs, nil
}

func (c *controller) validateConfig(typ kmsg.ConfigResourceType, resource, name, value string) *apiError {
	switch {
	case typ == kmsg.ConfigResourceTypeTopic:
		return c.validateTopicConfig(name, value)
	case typ == kmsg.ConfigResourceTypeBroker && c.opts.ValidateBrokerConfig != nil:
		if err := c.opts.ValidateBrokerConfig(name, value, resource != ""); err != nil {
			return newAPIError(kerr.InvalidRequest, "%s", err.Error())
		}
	}
	return nil
}

type configResourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// duplicateResources returns the resources named more than once.
func duplicateResources(n int, key func(i int) configResourceKey) map[configResourceKey]bool {
	seen, dup := map[configResourceKey]bool{}, map[configResourceKey]bool{}
	for i := range n {
		k := key(i)
		if seen[k] {
			dup[k] = true
		}
		seen[k] = true
	}
	return dup
}

var errDuplicateResource = &apiError{code: kerr.InvalidRequest.Code, msg: "Each resource must appear at most once."}

func (c *controller) incrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	dup := duplicateResources(len(req.Resources), func(i int) configResourceKey {
		return configResourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
	})
	var recs []record
	for _, res := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var r []record
		e := errDuplicateResource
		if !dup[configResourceKey{res.ResourceType, res.ResourceName}] {
			r, e = c.incrementalChanges(img, res)
		}
		if e != nil {
			rr.ErrorCode, rr.ErrorMessage = e.code, e.message()
		} else {
			recs = append(recs, r...)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if req.ValidateOnly {
		return resp, nil
	}
	recs = append(recs, clearELRChanges(img, recs)...)
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *controller) incrementalChanges(img *Image, res kmsg.IncrementalAlterConfigsRequestResource) ([]record, *apiError) {
	cur, e := c.configResource(img, res.ResourceType, res.ResourceName)
	if e != nil {
		return nil, e
	}
	want := maps.Clone(cur)
	if want == nil {
		want = map[string]string{}
	}
	seen := map[string]bool{}
	for _, cfg := range res.Configs {
		if seen[cfg.Name] {
			return nil, newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		seen[cfg.Name] = true
		if e := applyConfigOp(want, cfg); e != nil {
			return nil, e
		}
	}
	return c.configChanges(res.ResourceType, res.ResourceName, cur, want)
}

// applyConfigOp applies one SET, DELETE, APPEND or SUBTRACT to want. List
// values are comma separated.
func applyConfigOp(want map[string]string, cfg kmsg.IncrementalAlterConfigsRequestResourceConfig) *apiError {
	if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
		return newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", cfg.Name)
	}
	switch cfg.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		want[cfg.Name] = *cfg.Value
	case kmsg.IncrementalAlterConfigOpDelete:
		delete(want, cfg.Name)
	case kmsg.IncrementalAlterConfigOpAppend:
		list := splitList(want[cfg.Name])
		for _, v := range splitList(*cfg.Value) {
			if !slices.Contains(list, v) {
				list = append(list, v)
			}
		}
		want[cfg.Name] = strings.Join(list, ",")
	case kmsg.IncrementalAlterConfigOpSubtract:
		remove := splitList(*cfg.Value)
		list := slices.DeleteFunc(splitList(want[cfg.Name]), func(v string) bool { return slices.Contains(remove, v) })
		want[cfg.Name] = strings.Join(list, ",")
	default:
		return newAPIError(kerr.InvalidRequest, "Unknown alter config operation %d for %s", cfg.Op, cfg.Name)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// alterConfigs is the legacy API: each resource's configs are replaced whole.
func (c *controller) alterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	dup := duplicateResources(len(req.Resources), func(i int) configResourceKey {
		return configResourceKey{req.Resources[i].ResourceType, req.Resources[i].ResourceName}
	})
	var recs []record
	for _, res := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var r []record
		e := errDuplicateResource
		if !dup[configResourceKey{res.ResourceType, res.ResourceName}] {
			r, e = c.replaceChanges(img, res)
		}
		if e != nil {
			rr.ErrorCode, rr.ErrorMessage = e.code, e.message()
		} else {
			recs = append(recs, r...)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if req.ValidateOnly {
		return resp, nil
	}
	recs = append(recs, clearELRChanges(img, recs)...)
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *controller) replaceChanges(img *Image, res kmsg.AlterConfigsRequestResource) ([]record, *apiError) {
	cur, e := c.configResource(img, res.ResourceType, res.ResourceName)
	if e != nil {
		return nil, e
	}
	want := map[string]string{}
	for _, cfg := range res.Configs {
		if _, dup := want[cfg.Name]; dup {
			return nil, newAPIError(kerr.InvalidRequest, "Error due to duplicate config keys")
		}
		if cfg.Value == nil {
			return nil, newAPIError(kerr.InvalidRequest, "Null value not supported for : %s", cfg.Name)
		}
		want[cfg.Name] = *cfg.Value
	}
	return c.configChanges(res.ResourceType, res.ResourceName, cur, want)
}
