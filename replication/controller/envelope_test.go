package controller

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/security/principal"
)

// A broker forwards a client's CreateTopics to a remote active controller
// in an Envelope: the controller measures the client's (not the broker's)
// mutation quota, and the answer comes back through the envelope.
func TestForwardedRequestsCarryTheCaller(t *testing.T) {
	c := startCluster(t, 2)
	c.agreeOnController(c.waitActive())
	via := c.nonActive()
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	alter.Entries = []kmsg.AlterClientQuotasRequestEntry{quotaEntry(quota.TypeClientID, ptr("admin"), quota.ControllerMutationRate, 1, false)}
	if _, err := via.Forward(ctxT(t, 10*time.Second), alter); err != nil {
		t.Fatal(err)
	}
	c.converged("the quota", func(img *Image) bool { return len(img.ClientQuotas) == 1 })

	ctx := WithCaller(ctxT(t, 10*time.Second), Caller{Principal: principal.User("alice"), ClientID: "admin"})
	create := func(name string, partitions int32) *kmsg.CreateTopicsResponse {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, rt)
		resp, err := via.Forward(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.CreateTopicsResponse)
	}
	if got := create("first", 20); got.Topics[0].ErrorCode != 0 {
		t.Fatalf("first: %+v", got.Topics[0])
	}
	got := create("second", 1)
	if got.Topics[0].ErrorCode != kerr.ThrottlingQuotaExceeded.Code || got.ThrottleMillis < 8000 {
		t.Fatalf("second: %v, throttle %d", kerr.ErrorForCode(got.Topics[0].ErrorCode), got.ThrottleMillis)
	}
	// Without a caller the same request is the broker's own: not limited.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "internal", NumPartitions: 1, ReplicationFactor: 1}}
	resp, err := via.Forward(ctxT(t, 10*time.Second), req)
	if err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("internal: %v %+v", err, resp)
	}
}

func TestEnvelopeErrors(t *testing.T) {
	c := startCluster(t, 1)
	n := c.waitActive()
	good := wrapEnvelope(kmsg.NewPtrCreateTopicsRequest(), Caller{Principal: principal.User("a"), ClientID: "c"})
	badRequest := *good
	badRequest.RequestData = []byte{0, 19, 0}
	badPrincipal := *good
	badPrincipal.RequestPrincipal = []byte{9}
	for name, tc := range map[string]struct {
		env  *kmsg.EnvelopeRequest
		code int16
	}{
		"request":   {&badRequest, kerr.InvalidRequest.Code},
		"principal": {&badPrincipal, kerr.PrincipalDeserializationFailure.Code},
		"good":      {good, 0},
	} {
		resp, err := n.Handle(context.Background(), tc.env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := resp.(*kmsg.EnvelopeResponse).ErrorCode; got != tc.code {
			t.Fatalf("%s: code %v, want %v", name, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.code))
		}
	}
}
