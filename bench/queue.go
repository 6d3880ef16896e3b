package main

// The queue workloads (issue 16): how fast a share group (KIP-932) of
// four consumers reads one partition, beside a classic consumer group of
// four members reading four partitions, the same records, same run:
//
//   - qs-fill1 and qs-fill4 write the records (1 KiB, acks=all, RF=3, 3
//     brokers) to a topic of 1 and of 4 partitions;
//   - qs-share: a share group of Members consumers reads all of
//     qs-fill1's topic, each record acquired by one of them and accepted
//     (franz-go's share consumer accepts what it polled at the next poll),
//     with share.partition.max.record.locks at its largest, 10000: the
//     records in flight on the partition, from the oldest not yet
//     acknowledged to the newest handed out; qs-share-2000 does the same
//     with Kafka's default, 2000, about two of franz-go's 1 MB batches of
//     1 KiB records, so that two of the four consumers hold records while
//     the others wait;
//   - qs-classic: a classic group of Members consumers (range assignment:
//     one partition each) reads all of qs-fill4's topic.
//
// The clock starts when every member holds its assignment (a share group's
// members all hold the one partition: ShareGroupDescribe says so; a
// classic group's each hold one of the partitions: OnPartitionsAssigned
// says so) and stops at the last record read; the records read before the
// clock started are not counted in the rate.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// queueReader is one member of the group and what it read.
type queueReader struct {
	cl       *kgo.Client
	assigned atomic.Bool
	before   atomic.Int64 // records read before the clock started
	got      loadResult
}

// consumeMembers reads the whole topic with cfg.Members consumers of one
// group: a share group (share) or a classic consumer group.
func consumeMembers(ctx context.Context, cfg loadConfig, share bool, startClock, stopClock func()) (loadResult, error) {
	want, err := topicRecords(ctx, cfg.Brokers, cfg.Topic)
	if err != nil {
		return loadResult{}, err
	}
	if want == 0 {
		return loadResult{}, fmt.Errorf("topic %s is empty", cfg.Topic)
	}
	group := fmt.Sprintf("kbench-%s-%d", cfg.Topic, time.Now().UnixNano())
	joinStart := time.Now()
	var assigned atomic.Int32 // classic members holding partitions (not held in the callback: an eager rebalance needs them all)
	var readers []*queueReader
	defer func() {
		for _, r := range readers {
			r.cl.Close()
		}
		deleteGroup(cfg.Brokers, group)
	}()
	if share {
		if err := setShareEarliest(ctx, cfg, group); err != nil {
			return loadResult{}, err
		}
	}
	for range cfg.Members {
		r := &queueReader{}
		opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic)}, cfg.ClientOpts...)
		if share {
			opts = append(opts, kgo.ShareGroup(group))
		} else {
			opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
				kgo.Balancers(kgo.RangeBalancer()),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					if len(a) > 0 && r.assigned.CompareAndSwap(false, true) {
						assigned.Add(1)
					}
				}))
		}
		if r.cl, err = kgo.NewClient(opts...); err != nil {
			return loadResult{}, err
		}
		readers = append(readers, r)
	}
	var started atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < want && readCtx.Err() == nil {
				var got loadResult
				tally(r.cl.PollFetches(readCtx), &got)
				if !started.Load() {
					r.before.Add(got.Records)
				}
				r.got.Records += got.Records
				r.got.Bytes += got.Bytes
				r.got.Errors += got.Errors
				if r.got.FirstError == "" {
					r.got.FirstError = got.FirstError
				}
				if total.Add(got.Records) >= want {
					stopReading()
				}
			}
		}()
	}
	if share {
		err = waitShareAssigned(ctx, cfg, group)
	} else {
		err = waitMembersAssigned(ctx, &assigned, int32(cfg.Members))
	}
	if err != nil {
		stopReading()
		wg.Wait()
		return loadResult{}, err
	}
	setup := time.Since(joinStart)
	started.Store(true)
	if startClock != nil {
		startClock()
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	if stopClock != nil {
		stopClock()
	}
	res := loadResult{Setup: setup, Elapsed: elapsed, Groups: 1}
	var before int64
	for _, r := range readers {
		res.Records += r.got.Records
		res.Bytes += r.got.Bytes
		before += r.before.Load()
		if res.Errors += r.got.Errors; res.FirstError == "" {
			res.FirstError = r.got.FirstError
		}
	}
	if res.Records < want {
		return res, fmt.Errorf("the group read %d of %d records", res.Records, want)
	}
	// Only what was read while the clock ran counts in the rate.
	if before > 0 && res.Records > 0 {
		res.Bytes -= res.Bytes * before / res.Records
		res.Records -= before
	}
	return res, nil
}

// setShareEarliest makes the share group start at the log start, as the
// topic was written before it existed (share.auto.offset.reset=earliest),
// and sets its record locks.
func setShareEarliest(ctx context.Context, cfg loadConfig, group string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Value: kmsg.StringPtr("earliest")}}}
	if cfg.RecordLocks > 0 {
		res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{
			Name: "share.partition.max.record.locks", Value: kmsg.StringPtr(strconv.Itoa(cfg.RecordLocks))})
	}
	req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// waitShareAssigned waits until the share group has cfg.Members members,
// each holding an assignment.
func waitShareAssigned(ctx context.Context, cfg loadConfig, group string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, cfg.ClientOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(groupJoinTimeout)
	last := errors.New("not described yet")
	for time.Now().Before(deadline) && ctx.Err() == nil {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		switch {
		case err != nil:
			last = err
		case resp.Groups[0].ErrorCode != 0:
			last = kerr.ErrorForCode(resp.Groups[0].ErrorCode)
		default:
			n := 0
			for _, m := range resp.Groups[0].Members {
				if len(m.Assignment.TopicPartitions) > 0 {
					n++
				}
			}
			if n >= cfg.Members {
				return nil
			}
			last = fmt.Errorf("%d of %d members assigned", n, cfg.Members)
		}
		time.Sleep(20 * time.Millisecond) // polling the coordinator, with a deadline
	}
	return fmt.Errorf("share group %s not ready after %v: %v", group, groupJoinTimeout, last)
}

// waitMembersAssigned waits until every member of the classic group holds
// partitions (with as many partitions as members, that is the final
// assignment: a partition each).
func waitMembersAssigned(ctx context.Context, assigned *atomic.Int32, members int32) error {
	deadline := time.Now().Add(groupJoinTimeout)
	for assigned.Load() < members {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d of %d members had an assignment after %v", assigned.Load(), members, groupJoinTimeout)
		}
		time.Sleep(10 * time.Millisecond) // polling the members' callbacks, with a deadline
	}
	return nil
}

// deleteGroup deletes the group once its members left (best effort: the
// topic's deletion follows and the next run uses a new group).
func deleteGroup(brokers []string, group string) {
	adm, cl, err := adminClient(brokers)
	if err != nil {
		return
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		resp, err := adm.DeleteGroups(ctx, group)
		if err == nil {
			if d := resp[group]; d.Err == nil || errors.Is(d.Err, kerr.GroupIDNotFound) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// queueMembers is how many consumers each queue workload's group has.
const queueMembers = 4

// queueWorkloads are the share group's and the classic group's workloads.
func queueWorkloads() map[string]workload {
	fill := func(topic string, partitions int) loadConfig {
		return loadConfig{Topic: topic, Partitions: partitions, RF: 3, RecordBytes: 1024, Acks: "all", Idempotent: true,
			Linger: 10 * time.Millisecond, Mode: "produce"}
	}
	return map[string]workload{
		"qs-fill1": {name: "qs-fill1", brokers: 3, load: fill("qs1", 1), desc: "the share group's topic: 1 partition, RF 3, 1 KiB records, acks=all (idempotent), 3 brokers"},
		"qs-share": {name: "qs-share", brokers: 3, reads: "qs-fill1", load: loadConfig{Topic: "qs1", Mode: "share", Members: queueMembers, RecordLocks: 10000},
			desc: fmt.Sprintf("a share group of %d consumers reads all of qs-fill1's topic (1 partition), accepting every record; share.partition.max.record.locks=10000", queueMembers)},
		"qs-share-2000": {name: "qs-share-2000", brokers: 3, reads: "qs-fill1", load: loadConfig{Topic: "qs1", Mode: "share", Members: queueMembers},
			desc: "qs-share with Kafka's default share.partition.max.record.locks, 2000"},
		"qs-fill4": {name: "qs-fill4", brokers: 3, load: fill("qs4", queueMembers), desc: fmt.Sprintf("the classic group's topic: %d partitions, otherwise as qs-fill1", queueMembers)},
		"qs-classic": {name: "qs-classic", brokers: 3, reads: "qs-fill4", load: loadConfig{Topic: "qs4", Mode: "members", Members: queueMembers},
			desc: fmt.Sprintf("a classic consumer group of %d members (range: a partition each) reads all of qs-fill4's topic", queueMembers)},
	}
}
