# kbroker: the two commands of the README are `make run` and `make test`.
GO      ?= go
BIN     := bin/kbroker
PKGS    := ./...
FUZZTIME ?= 5s

.PHONY: all build run test unit compat fuzz vet bench cluster cluster-stop clean chaos chaos-short

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

unit: build
	KBROKER_BIN=$(CURDIR)/$(BIN) $(GO) test -race -timeout 9m $(PKGS)

# Compat tests only, against a live cluster: make compat KBROKER_SEEDS=host:port,...
compat: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_SEEDS=$(KBROKER_SEEDS) $(GO) test -count=1 -timeout 20m ./compat-tests/

# The fault-injection suite (compat-tests/chaos): every nemesis, minutes.
# Replay a run with CHAOS_SEED=N (the seed each scenario prints); pick
# scenarios with CHAOS_RUN='TestChaos/leader-kill'.
CHAOS_RUN ?= TestChaos
chaos: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_CHAOS=full KBROKER_CHAOS_SEED=$(CHAOS_SEED) $(GO) test -count=1 -v -timeout 60m \
		-run '$(CHAOS_RUN)' ./compat-tests/chaos/

# The short run in make test: leader kills and pauses, under two minutes.
chaos-short: build
	KBROKER_BIN=$(CURDIR)/$(BIN) KBROKER_CHAOS=short $(GO) test -count=1 -v -timeout 5m -run '^TestChaosShort$$' ./compat-tests/chaos/

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseRequest$$' -fuzztime $(FUZZTIME) ./protocol/
	$(GO) test -run '^$$' -fuzz '^FuzzBatches$$' -fuzztime $(FUZZTIME) ./storage/
	$(GO) test -run '^$$' -fuzz '^FuzzDispatch$$' -fuzztime $(FUZZTIME) ./broker/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./storage/ ./protocol/ ./broker/

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
