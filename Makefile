# berth — see README.md. Every target works on a fresh clone with Go 1.26.
GO       ?= go
BIN      := bin/berth
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GIT_SHA  := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILT_AT := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -X main.version=$(VERSION) -X main.gitSHA=$(GIT_SHA) -X main.buildTimestamp=$(BUILT_AT)
PKGS     := ./...
# The engine's module (.), the Go SDK's (sdk/, a module of its own so that its users do not
# pull the engine's dependencies) and the Helm chart's tests (deploy/helm, which keeps Helm's
# and Kubernetes' modules out of the engine's): test, lint, bench and fuzz run in each, PKGS
# within each.
MODULES  := . sdk deploy/helm

.PHONY: build run test test-fdb lint bench bench-compare fuzz release clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./engine/cmd/berth

# Release archives in dist/: for each of RELEASE_PLATFORMS a static binary (CGO_ENABLED=0, so
# no FoundationDB driver) with the version stamped, in berth-VERSION-OS-ARCH.tar.gz beside its
# SPDX 2.3 software bill of materials (tools/sbom, from the build information Go records),
# then SHA256SUMS of the archives and documents. VERSION defaults to git describe.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
release:
	rm -rf dist && mkdir -p dist
	$(GO) build -o dist/.sbom ./tools/sbom
	@set -e; for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; name=berth-$(VERSION)-$$os-$$arch; \
		echo "== $$name"; mkdir -p dist/$$name; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS) -s -w' \
			-o dist/$$name/berth ./engine/cmd/berth; \
		cp README.md dist/$$name/; \
		dist/.sbom -out dist -version $(VERSION) dist/$$name/berth:$$name; \
		tar -C dist -czf dist/$$name.tar.gz $$name; rm -rf dist/$$name; \
	done
	rm dist/.sbom
	cd dist && if command -v sha256sum >/dev/null; then sha256sum *.tar.gz *.spdx.json; else shasum -a 256 *.tar.gz *.spdx.json; fi > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS
	@ls -l dist

# The engine with the embedded store (data in ./data) on port 6420.
run: build
	./$(BIN) start --listen :6420 --db file://data/berth

# What CI runs: formatting, a tidy go.mod, vet, staticcheck, and every test with the race
# detector, in every module (all of them, even after a failure).
test: lint
	@status=0; for m in $(MODULES); do \
		echo "== go test in $$m"; \
		(cd $$m && $(GO) test -race -count=1 -timeout 30m $(PKGS)) || status=1; \
	done; exit $$status

# The FoundationDB driver's tests (-tags fdb) against the cluster of
# docker-compose.yml, then the engine's integration tests (FDB_INTEGRATION)
# with every engine on that cluster under a key prefix of its own
# (BERTH_TEST_DB_URL) and berth built with -tags fdb (BERTH_TEST_BUILD_TAGS).
# Needs Docker and the FoundationDB client 7.3.x (foundationdb-clients:
# fdb_c.h and libfdb_c) on this machine. Without FDB_CLUSTER_FILE it brings
# the compose cluster up and copies its cluster file to .fdb/; with it, it
# uses that cluster.
FDB_CLUSTER_FILE ?=
FDB_INTEGRATION  ?= ./tests/actors ./tests/runner ./tests/gateway ./tests/envoy ./tests/multidc ./tests/rivetkit
test-fdb:
	@cf="$(FDB_CLUSTER_FILE)"; if [ -z "$$cf" ]; then \
		docker compose up -d fdb && docker compose run --rm fdb-init && \
		mkdir -p .fdb && docker compose cp fdb:/var/fdb/fdb.cluster .fdb/fdb.cluster && \
		cf="$(CURDIR)/.fdb/fdb.cluster" || exit 1; fi; \
	cf=$$(realpath "$$cf") || exit 1; \
	BERTH_TEST_FDB_CLUSTER_FILE="$$cf" $(GO) test -tags fdb -race -count=1 -timeout 30m ./pkg/udb/driver/fdb ./tests/fdb && \
	BERTH_TEST_DB_URL="fdb://$$cf" BERTH_TEST_BUILD_TAGS=fdb \
		$(GO) test -tags fdb -race -count=1 -timeout 30m $(FDB_INTEGRATION)

# staticcheck is installed from the Go module proxy at this version (into GOBIN or ~/go/bin).
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@for m in $(MODULES); do \
		(cd $$m && $(GO) mod tidy -diff) || { echo "$$m/go.mod or go.sum is not tidy: run go mod tidy in $$m"; exit 1; }; \
	done
	@for m in $(MODULES); do echo "== go vet in $$m"; (cd $$m && $(GO) vet $(PKGS)) || exit 1; done
	$(GO) test -count=1 -run '^TestGeneratedIsCurrent$$' ./pkg/rerr/internal/gen
	@test -x $(STATICCHECK) && $(STATICCHECK) -version | grep -q "($(STATICCHECK_VERSION:v%=%))" || \
		GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@for m in $(MODULES); do echo "== staticcheck in $$m"; (cd $$m && $(STATICCHECK) $(PKGS)) || exit 1; done

# Speed and memory figures; nothing here is a pass/fail test.
bench:
	@for m in $(MODULES); do \
		echo "== go test -bench in $$m"; \
		(cd $$m && $(GO) test -run '^$$' -bench . -benchmem -benchtime 2s $(PKGS)) || exit 1; \
	done

# berth and the Rivet engine 2.3.19 side by side under the same workload and npm runner
# (bench/compare); writes bench/RESULTS.md and bench/results.json. About 8 minutes; it loads
# the machine. BENCH_COMPARE_FLAGS passes flags (-reps, -budget). STORE=postgres puts both
# engines on one PostgreSQL server (.ci/postgres.sh), adds step 9 (20,000 actors) and writes
# bench/RESULTS-postgres.md, about 25 minutes; NODES=3 with it runs berth on three nodes
# against one instead of the reference (bench/RESULTS-postgres-3nodes.md).
STORE ?= embedded
NODES ?= 1
ifeq ($(STORE),postgres)
BENCH_COMPARE_DEFAULTS ?= -budget 40m
endif
bench-compare: build
	$(GO) build -o bin/bench-compare ./bench/compare
ifeq ($(STORE),postgres)
	bash -c 'source .ci/postgres.sh && ./bin/bench-compare -berth $(BIN) -store postgres -nodes $(NODES) $(BENCH_COMPARE_DEFAULTS) $(BENCH_COMPARE_FLAGS)'
else
	./bin/bench-compare -berth $(BIN) -store $(STORE) -nodes $(NODES) $(BENCH_COMPARE_FLAGS)
endif

# Run every fuzzer in the repository (every module) for FUZZTIME each (default 30s);
# FUZZFLAGS adds go test flags (-parallel 1 keeps it to one core).
FUZZTIME ?= 30s
FUZZFLAGS ?=
fuzz:
	@for m in $(MODULES); do \
		cd $(CURDIR)/$$m || exit 1; \
		for pkg in $$($(GO) list $(PKGS)); do \
			for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
				echo "== $$pkg $$f"; \
				$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg || exit 1; \
			done; \
		done; \
	done

clean:
	rm -rf bin dist
