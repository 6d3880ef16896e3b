package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startNullForTest runs an in-process null broker with n listeners until the
// test ends and returns its addresses.
func startNullForTest(t *testing.T, dir string, n int, perReplica bool) []string {
	t.Helper()
	addrs, stop := runNullInProcess(t, dir, n, perReplica)
	t.Cleanup(stop)
	return addrs
}

// runNullInProcess starts an in-process null broker with n listeners and
// returns its addresses and the function that stops it.
func runNullInProcess(t *testing.T, dir string, n int, perReplica bool) ([]string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []string, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ls := slices.Repeat([]string{"127.0.0.1:0"}, n)
		if err := runNull(ctx, dir, perReplica, ls, func(a []string) { ready <- a }); err != nil {
			t.Errorf("runNull: %v", err)
		}
	}()
	stop := func() { cancel(); wg.Wait() }
	select {
	case a := <-ready:
		return a, stop
	case <-time.After(10 * time.Second):
		stop()
		t.Fatal("null broker did not start")
		return nil, nil
	}
}

func produceForTest(t *testing.T, addrs []string, topic string, rf int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := loadConfig{Brokers: addrs, Topic: topic, Partitions: 2, RF: rf}
	if err := ensureTopic(ctx, cfg); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 100 {
		r := &kgo.Record{Value: bytes.Repeat([]byte{byte(i)}, 100), Partition: int32(i % 2)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
}

// TestNullRFWritesEachBatchOncePerReplica: null-rf's copies are what makes it
// the page-cache floor of replication, so each replica file must hold exactly
// the partition's bytes, and the plain null broker must write none.
func TestNullRFWritesEachBatchOncePerReplica(t *testing.T) {
	dir := t.TempDir()
	addrs := startNullForTest(t, dir, 3, true)
	produceForTest(t, addrs, "rf3", 3)
	for p := range 2 {
		main, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rf3-%d.log", p)))
		if err != nil {
			t.Fatal(err)
		}
		if len(main) == 0 {
			t.Fatalf("partition %d: no bytes written", p)
		}
		for r := 1; r < 3; r++ {
			name := filepath.Join(dir, fmt.Sprintf("rf3-%d.replica-%d.log", p, r))
			got, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, main) {
				t.Fatalf("%s: %d bytes, differ from the partition's %d", name, len(got), len(main))
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.replica-3.log")); len(m) != 0 {
		t.Fatalf("RF=3 wrote a fourth copy: %v", m)
	}

	plain := t.TempDir()
	addrs = startNullForTest(t, plain, 3, false)
	produceForTest(t, addrs, "rf3", 3)
	if m, _ := filepath.Glob(filepath.Join(plain, "*.replica-*")); len(m) != 0 {
		t.Fatalf("the null broker wrote replica copies: %v", m)
	}
}
