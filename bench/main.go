// Command kbench is kbroker's benchmark: a franz-go load tool, the suite of
// issue 8 (kbroker against kfake and a null broker, alternated, medians and
// ratios) and the helpers it starts as separate processes.
//
//	kbench load  --brokers=127.0.0.1:9092 --mode=produce --topic=t ...   one load against any cluster
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
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to produce (consume: give up after)")
	fs.Int64Var(&cfg.Records, "records", 0, "stop after this many records (0: duration only; consume: all there are)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "records/s over all producers (0: unlimited)")
	fs.DurationVar(&cfg.Linger, "linger", 10*time.Millisecond, "producer linger")
	fs.StringVar(&cfg.Mode, "mode", "produce", "produce, consume or e2e")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "produce this long before measuring")
	pids := fs.String("pids", "", "broker pids to measure CPU and memory of, comma separated")
	fs.Parse(args)
	cfg.Brokers = strings.Split(*brokers, ",")
	for _, p := range strings.Split(*pids, ",") {
		if p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("--pids: %w", err)
		}
		cfg.Pids = append(cfg.Pids, n)
	}
	res, err := runLoad(ctx, cfg)
	fmt.Println(res)
	return err
}

func suiteCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("suite", flag.ExitOnError)
	var cfg suiteConfig
	fs.StringVar(&cfg.Kbroker, "kbroker", "../bin/kbroker", "kbroker binary")
	fs.StringVar(&cfg.KbrokerB, "kbroker-b", "", "a second kbroker build, run as target kbroker-b (an A/B of a change)")
	fs.StringVar(&cfg.PprofBin, "pprof-bin", "", "pprofbroker binary: profile kbroker under w1 and w2 (empty: no profiles)")
	fs.StringVar(&cfg.Out, "out", "out", "results directory (report.md, results.json, profiles/)")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions per target")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of each produce workload")
	fs.IntVar(&cfg.Segments, "segments", 10000, "segments for the restart measure")
	fs.Int64Var(&cfg.W3Records, "w3-records", 1_000_000, "records w3 reads from the start of w2's topic (topped up, unmeasured, when w2 wrote fewer)")
	fs.StringVar(&cfg.Note, "note", "", "a note for the report header (e.g. the commit built)")
	fs.BoolVar(&cfg.WarmMemory, "warm-memory", true, "write and delete a file the size of available memory first, so no target pays the VM's first touch of memory")
	targets := fs.String("targets", "kbroker,kfake,null,null-rf", "targets, in alternation order (also: kbroker-b; null-rf runs w2 only)")
	wls := fs.String("workloads", "w1,w2,w4,restart", "w1, w2 (w3 runs after it), w4, restart")
	fs.Parse(args)
	for _, t := range strings.Split(*targets, ",") {
		cfg.Targets = append(cfg.Targets, targetKind(t))
	}
	cfg.Workloads = strings.Split(*wls, ",")
	var err error
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
