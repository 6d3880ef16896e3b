package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startKfakeForTest runs an in-process kfake cluster of n brokers until the
// test ends.
func startKfakeForTest(t *testing.T, n int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestProduceCapIsExact: a capped run times exactly the cap, the warm-up
// comes on top of it in the topic and not in the result, on kfake and on
// the null broker alike.
func TestProduceCapIsExact(t *testing.T) {
	for name, addrs := range map[string][]string{
		"kfake": startKfakeForTest(t, 3),
		"null":  startNullForTest(t, t.TempDir(), 3, false),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			cfg := loadConfig{Brokers: addrs, Topic: "cap", Partitions: 4, RF: 3, RecordBytes: 64, Acks: "all", Idempotent: true,
				Records: 1234, WarmRecords: 100, Linger: time.Millisecond, Mode: "produce"}
			res, err := runLoad(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Records != 1234 || res.Bytes != 1234*64 || res.Warm != 100 || res.Errors != 0 {
				t.Fatalf("got %d records, %d bytes, warm %d, %d errors; want 1234, %d, 100, 0", res.Records, res.Bytes, res.Warm, res.Errors, 1234*64)
			}
			if res.Elapsed <= 0 || res.AckP50 <= 0 {
				t.Fatalf("elapsed %v, ack p50 %v: the timed phase was not measured", res.Elapsed, res.AckP50)
			}
			if n, err := topicRecords(ctx, addrs, "cap"); err != nil || n != 1334 {
				t.Fatalf("topic holds %d records (%v), want 1334 (cap and warm-up)", n, err)
			}
		})
	}
}

// TestE2ECapAndRate: a paced e2e run sends exactly the cap, takes about
// cap/rate, and measures the latency of the timed records only.
func TestE2ECapAndRate(t *testing.T) {
	addrs := startNullForTest(t, t.TempDir(), 3, false)
	cfg := loadConfig{Brokers: addrs, Topic: "e2e", Partitions: 3, RF: 1, RecordBytes: 64, Acks: "all", Idempotent: true,
		Records: 500, WarmRecords: 100, Rate: 1000, Mode: "e2e"}
	res, err := runLoad(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 500 || res.Errors != 0 {
		t.Fatalf("got %d records, %d errors (%s); want 500, 0", res.Records, res.Errors, res.FirstError)
	}
	if res.Elapsed < 450*time.Millisecond {
		t.Fatalf("500 records at 1,000/s took %v: not paced", res.Elapsed)
	}
	if res.E2EP50 <= 0 {
		t.Fatal("no end-to-end latency measured")
	}
}

func TestProduceNeedsACap(t *testing.T) {
	_, err := runLoad(context.Background(), loadConfig{Brokers: []string{"127.0.0.1:1"}, Topic: "x", Mode: "produce"})
	if err == nil {
		t.Fatal("a produce run without a record cap ran")
	}
}

func TestShareOf(t *testing.T) {
	var sum int64
	for i := range 3 {
		q := shareOf(10, 3, i)
		if q < 3 || q > 4 {
			t.Fatalf("producer %d gets %d of 10", i, q)
		}
		sum += q
	}
	if sum != 10 {
		t.Fatalf("shares sum to %d, want 10", sum)
	}
}
