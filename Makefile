# kbroker: the two commands of the README are `make run` and `make test`.
GO      ?= go
BIN     := bin/kbroker
PKGS    := ./...
# Fuzz budgets are execution counts, about 5 s each here: a duration
# (-fuzztime 5s) trips Go 1.26's fuzz coordinator race at the deadline
# (golang/go#75804: "context deadline exceeded" with no crasher).
# The three record-format targets share the budget the one storage target
# had (about 5 s together).
FUZZ_PARSE    ?= 80000x
FUZZ_BATCHES  ?= 50000x
FUZZ_RECORDS  ?= 20000x
FUZZ_CONTROL  ?= 20000x
FUZZ_DISPATCH ?= 8000x
# Transactions (issue 14): the .txnindex decoder and the transaction
# coordinator's __transaction_state records, about 3 s each.
FUZZ_TXN      ?= 20000x
FUZZ_SESSIONS ?= 30000x
FUZZ_PROPS    ?= 50000x
# The security decoders (issue 15): SASL exchanges, JAAS, ACL filters,
# encrypted keys; 0.3-2 s each, about 8 s together.
FUZZ_SECURITY ?= 20000x
# The share group decoders (issue 16): __consumer_offsets and
# __share_group_state records, state batches, a share-partition's
# operations, share.auto.offset.reset; 1-12 s each, about 20-40 s together.
FUZZ_SHARE    ?= 10000x
# Minimizing a new interesting input may take Go's default 60 s (seen: FuzzDispatch
# sat for 55 s at one exec count); the corpus gains nothing from it in a short run.
# A count, for the same reason as the budgets.
FUZZ_MINIMIZE ?= 500x
SHARE_FUZZ    := FuzzDecodeRecord:./broker/share FuzzDecodeRecord:./broker/sharestate FuzzCombineBatches:./broker/sharestate \
	FuzzPartitionOps:./broker/sharepartition FuzzParseAutoOffsetReset:./broker/shareconfig
SECURITY_FUZZ := FuzzACLRequests:./security/acl FuzzParse:./security/jaas FuzzPlainMessage:./security/sasl/plain \
	FuzzExchange:./security/sasl/scram FuzzClientMessage:./security/sasl/oauthbearer FuzzDecrypt:./security/pkcs8 \
	FuzzSaslRequests:./security/session
# The quota decoders (issue 17): the quota APIs' bodies, enveloped
# requests at the controller, throttled replica lists; about 5 s together.
FUZZ_QUOTA    ?= 20000x
QUOTA_FUZZ    := FuzzClientQuotaRequests:./quota FuzzEnvelope:./replication/controller FuzzThrottledReplicas:./replication

.PHONY: crash powerloss all build run test unit compat compat-kgo compat-kgo-secure compat-kgo-txn compat-kgo-share compat-sarama compat-kafkago compat-confluent fuzz vet bench bench-go bench-tools bench-load bench-quick bench-scale bench-scale-quick cluster cluster-stop clean chaos chaos-short

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kbroker

# A single node on 127.0.0.1:9092 with its data in ./data.
run: build
	./$(BIN) serve

# Everything CI runs: vet, unit tests with the race detector, the wire
# compatibility tests against real processes, a short fuzz of each decoder,
# and a short fault-injection run.
test: vet unit fuzz chaos-short

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags recordcount ./broker/

# The second line is the produce path's parse-once check, which needs the
# record package's parse counter (build tag recordcount). The third runs
# the replication simulator's 5,000 random schedules without the race
# detector (each schedule is single-goroutine; under -race the first line
# runs 500 of them, so the seed runner is still checked). -parallel 4: the
# parallel tests are compat-tests' clusters (and the demo's), which mostly
# wait on brokers (the machine is about 30% busy during them), and that
# package is the critical path of make test.
unit: build
	KBROKER_BIN=$(CURDIR)/$(BIN) $(GO) test -race -timeout 9m -parallel 4 $(PKGS)
	$(GO) test -race -tags recordcount -run '^TestProduceParsesBatchOnce$$' ./broker/
	$(GO) test -count=1 -v -run '^TestSimulatorRandomSchedules$$' ./replication/

# Compat tests only, against a live cluster: make compat KBROKER_SEEDS=host:port,...
compat: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_SEEDS=$(KBROKER_SEEDS) $(GO) test -count=1 -timeout 20m ./compat-tests/

# The client suites of issue 21, each from the Go module cache at a pinned
# version (fetched through the module proxy, built with go test -c) against
# a kbroker cluster the target starts, configured as the suite's upstream CI
# configures Kafka; each prints pass/fail/skip counts and its failures
# (compat-tests/suite_*_test.go; README "Compatibility"). Minutes each.
# SUITE_RUN=regexp picks tests, SUITE_VERSION another version of the module.
SUITE_RUN     ?= $(KBROKER_KGO_RUN)
SUITE_VERSION ?=
SUITE_GO_TEST = KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_SUITE_RUN='$(SUITE_RUN)' KBROKER_SUITE_VERSION=$(SUITE_VERSION) \
	$(GO) test -count=1 -v -timeout 60m

# franz-go's pkg/kgo (v1.22.3) on plaintext, three brokers, KGO_TEST_RF=3.
compat-kgo: build
	KBROKER_SUITE=kgo $(SUITE_GO_TEST) -run '^TestKgoSuite$$' ./compat-tests/

# franz-go's pkg/kgo over TLS with a client certificate, with its SCRAM and
# OAuth tests on SASL_PLAINTEXT, against 3 brokers that replicate over
# SCRAM-SHA-512 on TLS.
compat-kgo-secure: build
	KBROKER_SUITE=kgo-secure $(SUITE_GO_TEST) -run '^TestKgoSuiteSecure$$' ./compat-tests/

# IBM/sarama's functional tests (build tag functional): five brokers behind
# toxiproxy on 127.0.0.1:29091-29095, as its docker-compose lays them out.
compat-sarama: build
	KBROKER_SUITE=sarama $(SUITE_GO_TEST) -run '^TestSaramaSuite$$' ./compat-tests/

# segmentio/kafka-go against one broker on localhost:9092 (PLAINTEXT) and
# :9093 (SASL_PLAINTEXT), KAFKA_VERSION=3.7.0, as its CircleCI runs it.
compat-kafkago: build
	KBROKER_SUITE=kafkago $(SUITE_GO_TEST) -run '^TestKafkaGoSuite$$' ./compat-tests/

# confluent-kafka-go v2's kafka package (cgo, bundled librdkafka) with a
# testconf.json naming one broker (PLAINTEXT and SASL_PLAINTEXT PLAIN).
compat-confluent: build
	KBROKER_SUITE=confluent $(SUITE_GO_TEST) -run '^TestConfluentSuite$$' ./compat-tests/

# franz-go's pkg/kgo share group tests (issue 16: TestShareGroup,
# TestShareGroupETL, TestShareGroupAckOnClose, TestShareGroupOffsetsAdmin,
# TestConsumeRegexShareSkipsInternal; from the module cache) against 3
# brokers with every topic at RF=3. Minutes. KBROKER_KGO_RUN=regexp picks
# other tests.
compat-kgo-share: build
	KBROKER_SUITE=kgo-share $(SUITE_GO_TEST) -run '^TestKgoShareSuite$$' ./compat-tests/

# franz-go's pkg/kgo as compat-kgo (TestTxnEtl runs there too) with
# KGO_TEST_UNSAFE=1: TestTxnEtl also ends and begins transactions without
# waiting for the previous one's markers (issue 14). KGO_TEST_RECORDS
# shortens TestTxnEtl.
compat-kgo-txn: build
	KBROKER_SUITE=kgo-txn KGO_TEST_RECORDS='$(KGO_TEST_RECORDS)' $(SUITE_GO_TEST) -run '^TestKgoSuiteTxn$$' ./compat-tests/

# The fault-injection suite (compat-tests/chaos): every nemesis, minutes.
# Replay a run with CHAOS_SEED=N (the seed each scenario prints); pick tests
# with CHAOS_RUN (e.g. TestScenarios/leader-kill, TestStorageFaults).
CHAOS_RUN ?= .
chaos: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_CHAOS=full KBROKER_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -v -timeout 60m \
		-run '$(CHAOS_RUN)' ./compat-tests/chaos/

# The power-loss tests on real brokers (issue 19, compat-tests/powerloss_test.go:
# KIP-966's scenario with and without eligible leader replicas, durable acks
# through a power cut of every replica, a failing disk), over a minute
# together, so not in make test.
powerloss: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_POWERLOSS=1 $(GO) test -count=1 -v -timeout 15m \
		-run '^(TestKIP966PowerLossOfTheLastISRMember|TestDurableAcksSurvivePowerLossOfEveryReplica|TestFailedLogDirMovesLeadership)$$' ./compat-tests/

# The storage crash suites (issue 19) at length: make test runs 600
# sequences of the crash model and 150 of the power-loss journal harness
# under the race detector; this runs CRASH_SEEDS of each without it.
CRASH_SEEDS ?= 100000
crash:
	$(GO) test -count=1 -timeout 60m -run '^(TestCrashSuite|TestPowercutJournalSuite)$$' ./storage/ \
		-crash.seeds=$(CRASH_SEEDS) -powercut.seeds=$(CRASH_SEEDS) -v

# The short run in make test: leader kills and pauses, under two minutes.
chaos-short: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_CHAOS=short $(GO) test -count=1 -v -timeout 5m -run '^TestShortRun$$' ./compat-tests/chaos/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZ_PARSE) -fuzzminimizetime $(FUZZ_MINIMIZE) ./protocol/
	$(GO) test -run '^$$' -fuzz '^FuzzBatches$$' -fuzztime $(FUZZ_BATCHES) -fuzzminimizetime $(FUZZ_MINIMIZE) ./record/
	$(GO) test -run '^$$' -fuzz '^FuzzRecords$$' -fuzztime $(FUZZ_RECORDS) -fuzzminimizetime $(FUZZ_MINIMIZE) ./record/
	$(GO) test -run '^$$' -fuzz '^FuzzControl$$' -fuzztime $(FUZZ_CONTROL) -fuzzminimizetime $(FUZZ_MINIMIZE) ./record/
	$(GO) test -run '^$$' -fuzz '^FuzzDispatch$$' -fuzztime $(FUZZ_DISPATCH) -fuzzminimizetime $(FUZZ_MINIMIZE) ./broker/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeAbortedTxns$$' -fuzztime $(FUZZ_TXN) -fuzzminimizetime $(FUZZ_MINIMIZE) ./storage/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRecord$$' -fuzztime $(FUZZ_TXN) -fuzzminimizetime $(FUZZ_MINIMIZE) ./broker/txn/
	$(GO) test -run '^$$' -fuzz '^FuzzFetchSessions$$' -fuzztime $(FUZZ_SESSIONS) -fuzzminimizetime $(FUZZ_MINIMIZE) ./broker/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_PROPS) -fuzzminimizetime $(FUZZ_MINIMIZE) ./internal/properties/
	@for t in $(SECURITY_FUZZ); do \
		echo "$(GO) test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZ_SECURITY) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:}"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZ_SECURITY) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:} || exit 1; \
	done
	@for t in $(QUOTA_FUZZ); do \
		echo "$(GO) test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZ_QUOTA) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:}"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZ_QUOTA) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:} || exit 1; \
	done
	@for t in $(SHARE_FUZZ); do \
		echo "$(GO) test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZ_SHARE) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:}"; \
		$(GO) test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZ_SHARE) -fuzzminimizetime $(FUZZ_MINIMIZE) $${t#*:} || exit 1; \
	done

# Benchmarks (issues 8 and 20; not part of make test). make bench runs both
# halves: bench-go, the Go benchmarks of storage and the request path, and
# bench-load, the side-by-side comparison of kbroker, kfake and the null
# broker (bench/: its own Go module) under the rules of BENCHMARKS.md (a
# record cap per repetition, topics deleted between repetitions, one warm-up
# repetition, the same client settings, targets alternated), medians of
# BENCH_REPS repetitions and CPU/allocation profiles of kbroker under w1 and
# w2. BENCH_RECORDS overrides caps (e.g. w2=2000000). Results go to
# bench/out/ (report.md, results.json, profiles/). bench-quick is a smoke run.
BENCH_REPS     ?= 3
BENCH_RECORDS  ?=
BENCH_OUT      ?= out
BENCH_FLAGS    ?=

bench: bench-go bench-load

bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./record/ ./storage/ ./protocol/ ./broker/

bench-tools: build
	cd bench && $(GO) build -o ../bin/kbench .
	cd bench/pprofbroker && $(GO) build -o ../../bin/pprofbroker .

bench-load: bench-tools
	cd bench && ../bin/kbench suite --kbroker=../$(BIN) --pprof-bin=../bin/pprofbroker \
		--reps=$(BENCH_REPS) --records=$(BENCH_RECORDS) --out=$(BENCH_OUT) \
		--note="(built from commit $$(git -C $(CURDIR) rev-parse --short HEAD)$$(git -C $(CURDIR) diff --quiet HEAD -- ':(exclude)bench' || echo ' plus uncommitted changes'))" \
		$(BENCH_FLAGS)

bench-quick: bench-tools
	$(GO) test -run '^$$' -bench . -benchtime 100x -benchmem ./protocol/ ./broker/
	cd bench && ../bin/kbench suite --kbroker=../$(BIN) --reps=1 --warm-memory=false \
		--records=w1=1000000,w2=200000,w4=10000 --segments=500 --out=out/quick $(BENCH_FLAGS)

# The scale workloads of issue 20, part 3 (not in make bench: they take
# about as long again): partitions (BENCH_PARTITIONS, 1,000 and 10,000 at
# RF=3 on 3 brokers, a fresh cluster each repetition), connections (1,000
# idle connections, 100 producers) and consumers (10 groups against one),
# kbroker against kfake under the same rules. Results in bench/out/scale/.
# bench-scale-quick is a smoke run (300 partitions, small caps, one
# repetition, no warm-up repetition).
BENCH_PARTITIONS ?= 1000,10000
BENCH_NOTE = (built from commit $$(git -C $(CURDIR) rev-parse --short HEAD)$$(git -C $(CURDIR) diff --quiet HEAD -- ':(exclude)bench' || echo ' plus uncommitted changes'))

bench-scale: bench-tools
	cd bench && ../bin/kbench suite --kbroker=../$(BIN) --targets=kbroker,kfake --workloads=partitions,connections,consumers \
		--partition-counts=$(BENCH_PARTITIONS) --reps=$(BENCH_REPS) --records=$(BENCH_RECORDS) --out=$(BENCH_OUT)/scale \
		--note="$(BENCH_NOTE)" $(BENCH_FLAGS)

bench-scale-quick: bench-tools
	cd bench && ../bin/kbench suite --kbroker=../$(BIN) --targets=kbroker,kfake --workloads=partitions,connections,consumers \
		--partition-counts=100,300 --idle=5s --metadata-requests=20 --reps=1 --warmup-reps=0 --warm-memory=false \
		--records=conn-one=200000,cg-fill=200000 --out=out/scale-quick --note="$(BENCH_NOTE)" $(BENCH_FLAGS)

# Three local brokers in the background: node ids 1-3, clients on
# 127.0.0.1:9092-9094, Raft on 127.0.0.1:19092-19094, data in ./data/node-N.
VOTERS := 1@127.0.0.1:19092,2@127.0.0.1:19093,3@127.0.0.1:19094
cluster: build
	@for n in 1 2 3; do \
		port=$$((9091 + n)); cport=$$((19091 + n)); dir=data/node-$$n; mkdir -p $$dir; \
		if [ -f $$dir/kbroker.pid ] && kill -0 $$(cat $$dir/kbroker.pid) 2>/dev/null; then \
			echo "node $$n already running (pid $$(cat $$dir/kbroker.pid))"; continue; fi; \
		nohup ./$(BIN) serve --node.id=$$n \
			--listeners=PLAINTEXT://127.0.0.1:$$port,CONTROLLER://127.0.0.1:$$cport \
			--controller.listener.names=CONTROLLER --controller.quorum.voters=$(VOTERS) \
			--log.dirs=$$dir --metrics.listen=127.0.0.1:$$((9643 + n)) --default.replication.factor=3 \
			> $$dir/kbroker.log 2>&1 & echo $$! > $$dir/kbroker.pid; \
		echo "node $$n: 127.0.0.1:$$port (pid $$(cat $$dir/kbroker.pid), log $$dir/kbroker.log)"; \
	done

cluster-stop:
	@for n in 1 2 3; do \
		pidfile=data/node-$$n/kbroker.pid; [ -f $$pidfile ] || continue; pid=$$(cat $$pidfile); \
		if kill -TERM $$pid 2>/dev/null; then \
			for i in $$(seq 1 300); do kill -0 $$pid 2>/dev/null || break; sleep 0.1; done; \
			kill -0 $$pid 2>/dev/null && kill -KILL $$pid; echo "node $$n stopped"; fi; \
		rm -f $$pidfile; \
	done

clean:
	rm -rf bin
