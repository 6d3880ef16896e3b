package compat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// target is where a test's clients connect: a cluster it started, or the
// live one of KBROKER_SEEDS.
type target struct {
	seeds []string
	c     *cluster // nil against KBROKER_SEEDS
}

// singleNode returns a one-broker target (started for this test unless
// KBROKER_SEEDS is set).
func singleNode(t *testing.T, flags ...string) target {
	t.Helper()
	if s := liveSeeds(); s != nil {
		return target{seeds: s}
	}
	c := startCluster(t, clusterOpts{brokers: 1, flags: flags})
	return target{seeds: c.seeds(), c: c}
}

func newClient(t *testing.T, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t *testing.T, seeds []string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, seeds))
}

// uniqueTopic returns a topic name no other test uses.
func uniqueTopic(prefix string) string {
	var b [4]byte
	rand.Read(b[:])
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, prefix)
	return clean + "-" + hex.EncodeToString(b[:])
}

// newTopic creates a topic and deletes it when the test ends.
func newTopic(t *testing.T, adm *kadm.Client, partitions int32, rf int16, configs map[string]*string) string {
	t.Helper()
	name := uniqueTopic(t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, rf, configs, name)
	if err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	if resp.Err != nil {
		t.Fatalf("creating topic: %v (%s)", resp.Err, resp.ErrMessage)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		adm.DeleteTopics(ctx, name)
	})
	return name
}

// ctxTimeout is a context that ends after d or with the test.
var ctxTimeout = testsupport.Context

// consumeN reads exactly n records from topic starting at the beginning of
// every partition, failing the test on a deadline.
func consumeN(t *testing.T, seeds []string, topic string, n int, d time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, seeds, append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}, opts...)...)
	ctx := ctxTimeout(t, d)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !kerr.IsRetriable(err) {
				t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("consumed %d records, want %d", len(out), n)
	}
	return out
}

func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

func errorsIs(err, target error) bool { return err != nil && errors.Is(err, target) }
