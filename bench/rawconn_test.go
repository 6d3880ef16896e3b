package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRawConnSpeaksToKfakeAndNull: ApiVersions completes, and a flexible
// Metadata request (all topics) comes back whole and decodes to the topic
// that was created, on kfake and on the null broker.
func TestRawConnSpeaksToKfakeAndNull(t *testing.T) {
	for name, addrs := range map[string][]string{
		"kfake": startKfakeForTest(t, 3),
		"null":  startNullForTest(t, t.TempDir(), 3, false),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			if err := ensureTopic(ctx, loadConfig{Brokers: addrs, Topic: "raw", Partitions: 4, RF: 3}); err != nil {
				t.Fatal(err)
			}
			rc, err := dialRaw(ctx, addrs[0])
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if len(rc.versions) == 0 {
				t.Fatal("no API versions recorded")
			}
			req, err := allTopicsRequest(rc)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // the correlation id moves on
				resp := kmsg.NewPtrMetadataResponse()
				if err := rc.do(ctx, req, resp); err != nil {
					t.Fatal(err)
				}
				if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "raw" || len(resp.Topics[0].Partitions) != 4 {
					t.Fatalf("metadata v%d: %+v", req.Version, resp.Topics)
				}
			}
		})
	}
}

func TestParseRawResponseChecksCorrelation(t *testing.T) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	if _, err := parseRawResponse([]byte{0, 0, 0, 7}, 8, req); err == nil {
		t.Fatal("a response to another request was accepted")
	}
	if body, err := parseRawResponse([]byte{0, 0, 0, 8, 1, 2}, 8, req); err != nil || len(body) != 2 {
		t.Fatalf("body %v, %v", body, err)
	}
}
