# abtest — see README.md.
GO      ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test check demo clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/abtest ./cmd/abtest

# The whole suite. Tests that need PostgreSQL, perf or a source tree skip
# when it is missing, unless ABTEST_REQUIRE=1 (as in .ci/run).
test:
	$(GO) test -count=1 -timeout 30m ./...

check:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

clean:
	rm -rf bin
