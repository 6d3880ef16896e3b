// Command kbench is kbroker's benchmark: a franz-go load tool, the suite of
// issue 8 (kbroker against kfake and a null broker, alternated, medians and
// ratios) and the helpers it starts as separate processes.
//
//	kbench load  --brokers=127.0.0.1:9092 --mode=produce --topic=t ...   capped loads against any cluster
//	kbench suite --kbroker=bin/kbroker [--pprof-bin=...] ...            the whole comparison (make bench)
//	kbench serve-kfake --brokers=3                                      a kfake cluster until SIGTERM
//	kbench serve-null --brokers=3 --dir=/tmp/x                          the null broker until SIGTERM
//	kbench pagecache --dir=/tmp --mib=256                               CPU per MB of writes into new vs cached pages
//
// It is its own Go module (bench/go.mod) so that kfake's dependencies never
// touch the broker's go.mod.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	log.SetFlags(log.Ltime)
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "load":
		err = loadCmd(ctx, args)
	case "suite":
		err = suiteCmd(ctx, args)
	case "pagecache":
		err = pagecacheCmd(args)
	case "serve-kfake", "serve-null":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		brokers := fs.Int("brokers", 1, "number of brokers")
		dir := fs.String("dir", "", "data directory (null broker)")
		perReplica := fs.Bool("per-replica", false, "null broker: write each batch once per replica of its topic (target null-rf)")
		fs.Parse(args)
		if cmd == "serve-kfake" {
			err = serveKfake(ctx, *brokers)
		} else {
			err = serveNull(ctx, *brokers, *dir, *perReplica)
		}
	default:
		usage()
	}
	if err != nil {
		log.Fatal(err)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kbench load|suite|serve-kfake|serve-null|pagecache [flags] (-h for flags)")
	os.Exit(2)
}

func loadCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	var cfg loadConfig
	brokers := fs.String("brokers", "127.0.0.1:9092", "seed brokers, comma separated")
	fs.StringVar(&cfg.Topic, "topic", "kbench", "topic (created when missing)")
	fs.IntVar(&cfg.Partitions, "partitions", 1, "partitions, when creating the topic")
	fs.IntVar(&cfg.RF, "replication-factor", 1, "replication factor, when creating the topic")
	fs.IntVar(&cfg.RecordBytes, "record-bytes", 100, "record value size")
	fs.StringVar(&cfg.Acks, "acks", "all", "0, 1 or all")
	fs.BoolVar(&cfg.Idempotent, "idempotent", false, "idempotent producer (acks=all only)")
	fs.StringVar(&cfg.Compression, "compression", "none", "none, gzip, snappy, lz4, zstd")
	fs.IntVar(&cfg.Producers, "producers", 1, "producer clients")
	fs.Int64Var(&cfg.Records, "records", 1_000_000, "records timed per repetition (consume: records to read, 0: all there are)")
	fs.Int64Var(&cfg.WarmRecords, "warm-records", -1, "records produced and acked before the clock starts (-1: 1% of --records, at least 1,000 and 2 s at --rate)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "a repetition not done by then fails")
	fs.Float64Var(&cfg.Rate, "rate", 0, "records/s over all producers (0: unlimited)")
	fs.DurationVar(&cfg.Linger, "linger", 10*time.Millisecond, "producer linger")
	fs.StringVar(&cfg.Mode, "mode", "produce", "produce, consume, e2e or groups (--groups consumer groups read the whole topic at once)")
	fs.IntVar(&cfg.IdleConns, "idle-conns", 0, "produce: connections opened (ApiVersions done) and left idle before the producers connect; their memory per connection is reported")
	fs.IntVar(&cfg.Groups, "groups", 1, "groups: consumer groups reading the topic at once")
	pids := fs.String("pids", "", "broker pids to measure CPU, page faults and memory of, comma separated")
	reps := fs.Int("reps", 1, "repetitions")
	keep := fs.Bool("keep-topic", false, "produce: keep the topic between and after repetitions (default: the topic, which must not exist yet, is deleted after each and created fresh for the next)")
	fs.Parse(args)
	cfg.Brokers = strings.Split(*brokers, ",")
	if cfg.WarmRecords < 0 {
		cfg.WarmRecords = warmRecords(cfg.Records, cfg.Rate)
	}
	var err error
	if cfg.Pids, err = parsePids(*pids); err != nil {
		return err
	}
	deleting := !*keep && cfg.Mode != "consume" && cfg.Mode != "groups"
	if deleting {
		// Never delete a topic this tool did not create.
		exists, err := topicExists(ctx, cfg.Brokers, cfg.Topic)
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("topic %s exists: name a new one (deleted after each repetition) or pass --keep-topic", cfg.Topic)
		}
	}
	for rep := 1; rep <= *reps; rep++ {
		res, err := runLoad(ctx, cfg)
		fmt.Printf("rep %d: %s\n", rep, res)
		if err != nil {
			return err
		}
		if deleting {
			if err := deleteTopic(ctx, cfg.Brokers, cfg.Topic, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func parsePids(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("--pids: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}

func suiteCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("suite", flag.ExitOnError)
	var cfg suiteConfig
	fs.StringVar(&cfg.Kbroker, "kbroker", "../bin/kbroker", "kbroker binary")
	fs.StringVar(&cfg.KbrokerB, "kbroker-b", "", "a second kbroker build, run as target kbroker-b (an A/B of a change)")
	fs.StringVar(&cfg.PprofBin, "pprof-bin", "", "pprofbroker binary: profile kbroker under w1, w2, w4 and qs-share (empty: no profiles)")
	fs.StringVar(&cfg.Out, "out", "out", "results directory (report.md, results.json, profiles/)")
	fs.IntVar(&cfg.Reps, "reps", 3, "measured repetitions per target")
	fs.IntVar(&cfg.WarmupReps, "warmup-reps", 1, "unmeasured repetitions of each workload group on each target before the measured ones")
	records := fs.String("records", "", "records per repetition, e.g. w1=5000000,w2=1000000,w2-acks1=1000000,w2-durable=1000000,w4=50000 (these are the defaults; w2-acks1 and w2-durable follow w2)")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "a run not done by then fails")
	fs.IntVar(&cfg.Segments, "segments", 10000, "segments for the restart measure")
	fs.Int64Var(&cfg.FetchSessionRecords, "fetch-session-records", 200_000, "fetch-sessions: 1 KiB records spread over the 1,000 partitions, drained by each run")
	fs.StringVar(&cfg.Note, "note", "", "a note for the report header (e.g. the commit built)")
	fs.BoolVar(&cfg.WarmMemory, "warm-memory", true, "touch the available memory once first, so no target pays the VM's first touch of memory")
	targets := fs.String("targets", "kbroker,kfake,null,null-rf,kbroker-sasl-ssl", "targets, in alternation order (also: kbroker-b; null-rf and kbroker-sasl-ssl run w2 only)")
	wls := fs.String("workloads", "w1,w2,w3,w2-acks1,w2-durable,w2-txn,w3-txn,w3-rc,w4,queue,restart,fetch-sessions,scram-conns", "w1, w2, w3 (reads w2's topic), w2-acks1, w2-durable (w2 with flush.messages=1, kbroker only), "+
		"w2-txn (transactional w2), w3-txn and w3-rc (read w2-txn's topic, read_uncommitted and read_committed), w4, "+
		"queue (qs-fill1, qs-share, qs-share-2000, qs-fill4, qs-classic: a share group against a classic group), restart, fetch-sessions, scram-conns; "+
		"the scale workloads (make bench-scale): partitions, connections (conn-one, conn-idle, conn-many), consumers (cg-fill, cg-one, cg-many)")
	cfg.Scale = defaultScale
	sc := &cfg.Scale
	counts := fs.String("partition-counts", "1000,10000", "partitions: the partition counts, each a step of its own")
	fs.IntVar(&sc.PerTopic, "partitions-per-topic", sc.PerTopic, "partitions: partitions per topic (1,000 = 10 topics x 100)")
	fs.DurationVar(&sc.Idle, "idle", sc.Idle, "partitions: the window the brokers' idle CPU is measured over, after ready")
	fs.IntVar(&sc.MetadataRequests, "metadata-requests", sc.MetadataRequests, "partitions: full Metadata requests timed (p50, p99)")
	fs.DurationVar(&sc.ReadyTimeout, "ready-timeout", sc.ReadyTimeout, "partitions: the deadline of the wait for ready and for the restarted broker's return")
	fs.DurationVar(&sc.Stall, "stall", sc.Stall, "partitions: a wait whose count has not grown for this long fails (what failed and the brokers' fds are reported)")
	fs.IntVar(&sc.IdleConns, "idle-conns", sc.IdleConns, "connections: idle connections beside conn-idle's producer")
	fs.IntVar(&sc.Producers, "many-producers", sc.Producers, "connections: producers of conn-many")
	fs.IntVar(&sc.Groups, "groups", sc.Groups, "consumers: consumer groups of cg-many")
	fs.IntVar(&cfg.ScramConns, "scram-conns", 1000, "scram-conns: SCRAM-SHA-512 connections over SASL_SSL set up")
	fs.IntVar(&cfg.ScramConcurrency, "scram-concurrency", 8, "scram-conns: connections set up at once")
	fs.Parse(args)
	var err error
	if cfg.Caps, err = parseCaps(*records); err != nil {
		return err
	}
	if cfg.Reps < 1 || cfg.WarmupReps < 0 {
		return errors.New("--reps must be at least 1 and --warmup-reps at least 0")
	}
	for _, t := range strings.Split(*targets, ",") {
		cfg.Targets = append(cfg.Targets, targetKind(t))
	}
	cfg.Workloads = expandWorkloads(strings.Split(*wls, ","))
	if err := checkNames(cfg.Targets, cfg.Workloads); err != nil {
		return err
	}
	if sc.PartitionCounts, err = parseCounts(*counts); err != nil {
		return err
	}
	if sc.PerTopic < 1 || sc.MetadataRequests < 1 || sc.IdleConns < 1 || sc.Producers < 1 || sc.Groups < 1 {
		return errors.New("--partitions-per-topic, --metadata-requests, --idle-conns, --many-producers and --groups must be at least 1")
	}
	if cfg.Kbroker, err = absPath(cfg.Kbroker); err != nil {
		return err
	}
	if slices.Contains(cfg.Targets, kindKbrokerB) {
		if cfg.KbrokerB, err = absPath(cfg.KbrokerB); err != nil {
			return fmt.Errorf("target kbroker-b needs --kbroker-b: %w", err)
		}
	}
	if cfg.PprofBin != "" {
		if cfg.PprofBin, err = absPath(cfg.PprofBin); err != nil {
			return err
		}
	}
	return runSuite(ctx, cfg)
}

func checkNames(targets []targetKind, wls []string) error {
	for _, t := range targets {
		if !slices.Contains([]targetKind{kindKbroker, kindKbrokerB, kindKfake, kindNull, kindNullRF, kindKbrokerSASLSSL}, t) {
			return fmt.Errorf("--targets: unknown target %q", t)
		}
	}
	ws := workloads(defaultCaps, 0, defaultScale)
	for _, w := range wls {
		if _, ok := ws[w]; !ok && w != "restart" && w != "partitions" && w != "scram-conns" && w != "fetch-sessions" {
			return fmt.Errorf("--workloads: unknown workload %q", w)
		}
		if r := ws[w].reads; r != "" && !slices.Contains(wls, r) {
			return fmt.Errorf("--workloads: %s reads %s's topic: name both", w, r)
		}
	}
	return nil
}

func absPath(p string) (string, error) {
	if _, err := os.Stat(p); err != nil {
		return "", err
	}
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + "/" + p, nil
}
