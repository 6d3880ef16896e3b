package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func incOp(name string, op kmsg.IncrementalAlterConfigOp, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	return kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: name, Op: op, Value: value}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) {
		o.ValidateTopicConfig = func(name, value string) error {
			if name == "retention.ms" && value == "-5" {
				return errors.New("Invalid value -5 for configuration retention.ms")
			}
			return nil
		}
		o.ValidateBrokerConfig = func(name, value string, _ bool) error {
			if name == "broker.id" {
				return errors.New("Cannot update these configs dynamically: Set(broker.id)")
			}
			return nil
		}
	})
	h.live(1)
	h.createTopic("t", 1, 1)
	run := func(validateOnly bool, res ...kmsg.IncrementalAlterConfigsRequestResource) []kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources, req.ValidateOnly = res, validateOnly
		return h.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources
	}
	res := func(typ kmsg.ConfigResourceType, name string, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
		return kmsg.IncrementalAlterConfigsRequestResource{ResourceType: typ, ResourceName: name, Configs: cfgs}
	}
	S, D, A, X := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract
	check := func(out []kmsg.IncrementalAlterConfigsResponseResource, want ...error) {
		t.Helper()
		for i, w := range want {
			if got := kerr.ErrorForCode(out[i].ErrorCode); got != w {
				t.Errorf("resource %d: got %v (%s), want %v", i, got, deref(out[i].ErrorMessage), w)
			}
		}
	}
	check(run(false,
		res(kmsg.ConfigResourceTypeTopic, "t", incOp("retention.ms", S, ptrTo("100")), incOp("cleanup.policy", A, ptrTo("delete,compact"))),
		res(kmsg.ConfigResourceTypeBroker, "", incOp("log.retention.ms", S, ptrTo("7"))),
		res(kmsg.ConfigResourceTypeBroker, "1", incOp("anything.goes", S, ptrTo("x"))),
		res(kmsg.ConfigResourceTypeTopic, "nope", incOp("retention.ms", S, ptrTo("1"))),
		res(kmsg.ConfigResourceTypeBroker, "x", incOp("a", S, ptrTo("b"))),
		res(kmsg.ConfigResourceTypeBrokerLogger, "1", incOp("a", S, ptrTo("b"))),
		// Kafka's ConfigResourceExistenceChecker: a broker id must be registered.
		res(kmsg.ConfigResourceTypeBroker, "99", incOp("a", S, ptrTo("b"))),
	), nil, nil, nil, kerr.UnknownTopicOrPartition, kerr.InvalidRequest, kerr.InvalidRequest, kerr.BrokerIDNotRegistered)
	// ValidateBrokerConfig refusals are INVALID_REQUEST (KAFKA-13609).
	check(run(false, res(kmsg.ConfigResourceTypeBroker, "", incOp("broker.id", S, ptrTo("5")))), kerr.InvalidRequest)
	check(run(false, res(kmsg.ConfigResourceTypeTopic, "t", incOp("retention.ms", S, ptrTo("-5")))), kerr.InvalidConfig)
	check(run(false, res(kmsg.ConfigResourceTypeTopic, "t", incOp("a", S, ptrTo("1")), incOp("a", D, nil))), kerr.InvalidRequest)
	// A resource named twice is refused in both places, nothing applied.
	check(run(false,
		res(kmsg.ConfigResourceTypeBroker, "1", incOp("dup.key", S, ptrTo("1"))),
		res(kmsg.ConfigResourceTypeTopic, "t", incOp("dup.key", S, ptrTo("1"))),
		res(kmsg.ConfigResourceTypeBroker, "1", incOp("dup.key", S, ptrTo("2"))),
	), kerr.InvalidRequest, nil, kerr.InvalidRequest)
	if _, ok := h.img().BrokerConfigs["1"]["dup.key"]; ok {
		t.Fatal("duplicate resource applied")
	}
	if h.img().BrokerConfigs[""]["broker.id"] != "" {
		t.Fatal("refused broker config applied")
	}
	img := h.img()
	if c := img.Topics["t"].Configs; c["retention.ms"] != "100" || c["cleanup.policy"] != "delete,compact" {
		t.Fatalf("topic configs %v", c)
	}
	if img.BrokerConfigs[""]["log.retention.ms"] != "7" || img.BrokerConfigs["1"]["anything.goes"] != "x" {
		t.Fatalf("broker configs %v", img.BrokerConfigs)
	}
	run(false, res(kmsg.ConfigResourceTypeTopic, "t", incOp("cleanup.policy", X, ptrTo("delete")), incOp("retention.ms", D, nil), incOp("dup.key", D, nil)))
	if c := h.img().Topics["t"].Configs; c["cleanup.policy"] != "compact" || len(c) != 1 {
		t.Fatalf("after subtract/delete %v", c)
	}
	run(true, res(kmsg.ConfigResourceTypeTopic, "t", incOp("retention.ms", S, ptrTo("5"))))
	if _, ok := h.img().Topics["t"].Configs["retention.ms"]; ok {
		t.Fatal("validateOnly changed the config")
	}
}

func TestAlterConfigsReplaces(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	h.createTopic("t", 1, 1)
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "a", Value: ptrTo("1")}, {Name: "b", Value: ptrTo("2")}}
	req.Resources = append(req.Resources, r)
	h.do(req)
	req.Resources[0].Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "b", Value: ptrTo("3")}}
	resp := h.do(req).(*kmsg.AlterConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	if c := h.img().Topics["t"].Configs; len(c) != 1 || c["b"] != "3" {
		t.Fatalf("configs %v", c)
	}
	// As IncrementalAlterConfigs: duplicate resources, unregistered brokers.
	req.Resources = append(req.Resources, r,
		kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "7"},
		kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"})
	resp = h.do(req).(*kmsg.AlterConfigsResponse)
	want := []error{kerr.InvalidRequest, kerr.InvalidRequest, kerr.BrokerIDNotRegistered, nil}
	for i, w := range want {
		if got := kerr.ErrorForCode(resp.Resources[i].ErrorCode); got != w {
			t.Errorf("resource %d: got %v, want %v", i, got, w)
		}
	}
}

// GROUP resources (KIP-932 share.* configs): stored by group id whether or
// not the group exists, validated as a whole, deleted key by key.
func TestGroupConfigs(t *testing.T) {
	var validated []map[string]string
	h := newCtlHarness(t, func(o *Options) {
		o.ValidateGroupConfig = func(props map[string]string) error {
			validated = append(validated, props)
			if props["share.delivery.count.limit"] == "99" {
				return errors.New("share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit")
			}
			return nil
		}
	})
	h.live(1)
	run := func(cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g", Configs: cfgs}}
		return h.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
	}
	S, D := kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete
	if r := run(incOp("share.auto.offset.reset", S, ptrTo("earliest")), incOp("share.record.lock.duration.ms", S, ptrTo("20000"))); r.ErrorCode != 0 {
		t.Fatalf("set: %+v", r)
	}
	if got := h.img().GroupConfigs["g"]; got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "20000" {
		t.Fatalf("group configs %v", got)
	}
	// The validator sees the merged configs, and a refusal changes nothing.
	if r := run(incOp("share.delivery.count.limit", S, ptrTo("99"))); r.ErrorCode != kerr.InvalidConfig.Code || r.ErrorMessage == nil {
		t.Fatalf("invalid value: %+v", r)
	}
	if last := validated[len(validated)-1]; last["share.auto.offset.reset"] != "earliest" || last["share.delivery.count.limit"] != "99" {
		t.Fatalf("validator saw %v", last)
	}
	if _, ok := h.img().GroupConfigs["g"]["share.delivery.count.limit"]; ok {
		t.Fatal("refused group config applied")
	}
	if r := run(incOp("share.auto.offset.reset", D, nil), incOp("share.record.lock.duration.ms", D, nil)); r.ErrorCode != 0 {
		t.Fatalf("delete: %+v", r)
	}
	if _, ok := h.img().GroupConfigs["g"]; ok {
		t.Fatalf("empty group configs kept: %v", h.img().GroupConfigs)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: ""}}
	if r := h.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty group name: %+v", r)
	}
}
