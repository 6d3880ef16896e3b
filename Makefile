GO ?= go

.PHONY: build run test
build:
	$(GO) build -o bin/kbroker ./cmd/kbroker

run: build
	./bin/kbroker serve

test:
	$(GO) vet ./...
	$(GO) test -race ./...
