# abtest — see README.md.
GO      ?= go
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test check demo clean

# Where make demo keeps the PostgreSQL source it prepares when
# PG_SOURCE_DIR is not set.
DEMO_SRC ?= $(HOME)/.cache/abtest-test/pg15-src

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/abtest ./cmd/abtest

# The source tree the from-source tests build (testenv.PG15Source).
TEST_SRC := $(or $(ABTEST_PG15_SOURCE),$(DEMO_SRC))

# go test's flags (bench/suite.sh runs the same). -parallel 4: most
# tests that may share the CPUs wait on servers, timed windows and
# locks (the cluster package used 0.3 of a core run one at a time), so
# four at a time per package, not go's default of one per CPU.
TESTFLAGS := -count=1 -timeout 60m -parallel 4

# The whole suite. As root on a fresh Debian it first installs the
# packages the tests need and prepares the PostgreSQL 15 source, as make
# demo does; otherwise it says what is missing, and the tests that need
# it skip, unless ABTEST_REQUIRE=1 (as in .ci/run) makes them fail.
test:
	@scripts/deps.sh || echo "make test: the tests that need those packages will skip"
	@scripts/pg-source.sh "$(TEST_SRC)" || echo "make test: the from-source tests will skip"
	ABTEST_PG15_SOURCE="$(TEST_SRC)" $(GO) test $(TESTFLAGS) ./...

# The built-in A/B run: Debian's PostgreSQL 15 source (or $$PG_SOURCE_DIR),
# HEAD against HEAD with the demo patch. Installs what it needs as root.
demo: build
	scripts/deps.sh
	@if [ -z "$$PG_SOURCE_DIR" ]; then scripts/pg-source.sh "$(DEMO_SRC)"; fi
	bin/abtest demo --source "$${PG_SOURCE_DIR:-$(DEMO_SRC)}"

check:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

clean:
	rm -rf bin
