package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/fuzzseed"

	"github.com/kbroker/kbroker/security/principal"
)

// envelopeSeeds are (request data, principal data) pairs: enveloped
// mutation requests of each version as brokers send them.
func envelopeSeeds() [][]any {
	var seeds [][]any
	caller := Caller{Principal: principal.User("alice"), ClientID: "admin"}
	for v := int16(2); v <= 7; v++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = v
		req.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t", NumPartitions: 3, ReplicationFactor: 1}}
		env := wrapEnvelope(req, caller)
		seeds = append(seeds, []any{env.RequestData, env.RequestPrincipal})
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("t")}}
	env := wrapEnvelope(del, caller)
	seeds = append(seeds, []any{env.RequestData, env.RequestPrincipal}, []any{env.RequestData, []byte{}})
	return seeds
}

func TestWriteEnvelopeSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	fuzzseed.Write(t, "FuzzEnvelope", envelopeSeeds())
}

// FuzzEnvelope decodes an envelope's request and principal as the active
// controller does: no panic; an envelope it accepts holds a decoded
// request that is not itself an envelope, and a principal with a type;
// one it refuses says INVALID_REQUEST or PRINCIPAL_DESERIALIZATION_FAILURE.
func FuzzEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds() {
		f.Add(s[0].([]byte), s[1].([]byte))
	}
	f.Fuzz(func(t *testing.T, data, principalData []byte) {
		env := kmsg.NewPtrEnvelopeRequest()
		env.RequestData, env.RequestPrincipal = data, principalData
		inner, caller, err := parseEnvelope(env)
		if err != nil {
			if code := errorCodeOf(err); code != kerr.InvalidRequest.Code && code != kerr.PrincipalDeserializationFailure.Code {
				t.Fatalf("refused with %v", kerr.ErrorForCode(code))
			}
			if !errors.Is(err, kerr.InvalidRequest) && !errors.Is(err, kerr.PrincipalDeserializationFailure) {
				t.Fatalf("error %v wraps no Kafka code", err)
			}
			return
		}
		if inner == nil || inner.Body == nil || inner.Key == env.Key() || caller.Principal.Type == "" {
			t.Fatalf("accepted %+v for %+v", inner, caller)
		}
	})
}
