# IronVise — build and test entry points. `make test` is what CI runs.
GO        ?= go
PKG       := github.com/ironvise/ironvise
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X $(PKG)/internal/cli.version=$(VERSION) -X $(PKG)/internal/cli.commit=$(COMMIT)
BIN       := bin

.PHONY: all build install uninstall verify-cert image demo test lint vet fmt-check doclinks unit cross bench fuzz clean

all: build

## build: the ironvise binary (pure Go, no cgo) into ./bin, with the sandbox
## launcher embedded on Linux (scripts/build-ironvise.sh) and without the
## server (serve and mcp, which it hands to ironvise-server: every other
## command starts faster); beside it ironvise-server, the same program with
## every command, and ironvise-exec, `ironvise exec` as a small program of
## its own for agents that send one command at a time to `ironvise serve`
## (docs/cli.md#ironvise-server)
build:
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' TAGS=noserver ./scripts/build-ironvise.sh $(BIN)/ironvise
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' ./scripts/build-ironvise.sh $(BIN)/ironvise-server
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/ironvise-exec ./cmd/ironvise-exec

## install: build, then copy ironvise, ironvise-server and ironvise-exec into BINDIR: $GOBIN when set (the
## environment or `go env GOBIN`), else /usr/local/bin; PREFIX=DIR installs
## into DIR/bin instead, BINDIR=DIR into DIR, and DESTDIR is prepended to
## either (a package's or a scratch root)
ifeq ($(origin PREFIX),undefined)
PREFIX    := /usr/local
INSTALL_GOBIN = $(or $(GOBIN),$(shell $(GO) env GOBIN))
endif
BINDIR    ?= $(or $(INSTALL_GOBIN),$(PREFIX)/bin)
install: build
	install -d '$(DESTDIR)$(BINDIR)'
	install -m 0755 '$(BIN)/ironvise' '$(DESTDIR)$(BINDIR)/ironvise'
	install -m 0755 '$(BIN)/ironvise-server' '$(DESTDIR)$(BINDIR)/ironvise-server'
	install -m 0755 '$(BIN)/ironvise-exec' '$(DESTDIR)$(BINDIR)/ironvise-exec'
	@echo "installed $(DESTDIR)$(BINDIR)/ironvise, ironvise-server and ironvise-exec; tab completion: ironvise completion --help"

## uninstall: remove what install copied
uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/ironvise' '$(DESTDIR)$(BINDIR)/ironvise-server' '$(DESTDIR)$(BINDIR)/ironvise-exec'

## verify-cert: the standalone offline certificate verifier (no database, no network) into ./bin
verify-cert:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/verify-cert ./cmd/verify-cert

## image: IronVise's own container image (Containerfile) without registry
## access: the static binary on a small base assembled from Debian packages
## (scripts/build-image.sh, docs/operate/container.md). IMAGE names it; BASE
## builds on another base image, ENGINE=docker uses docker instead of podman
IMAGE     ?= localhost/ironvise:latest
image:
	GO='$(GO)' LDFLAGS='$(LDFLAGS)' BASE='$(BASE)' ENGINE='$(ENGINE)' ./scripts/build-image.sh '$(IMAGE)'

## demo: build and run the main job
demo: build
	./scripts/demo.sh

## test: formatting, vet (linux, darwin, windows; and the build without the server), staticcheck, documentation references, cross-builds, race-enabled tests
test: fmt-check vet lint doclinks cross cross-test unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	$(GO) vet -tags noserver ./cmd/ironvise/ ./internal/cli/

lint:
	$(GO) tool staticcheck ./...

## doclinks: every docs/ path and anchor the code, scripts and Markdown cite exists; no citations of the old external spec
doclinks:
	$(GO) run ./scripts/doclinks

## unit: go test -race -count=1 through gotestsum (a tool in go.mod): one line
## per package as it finishes, each failed test's output, the totals, then the
## SLOWEST slowest tests; the exit code is go test's. PKGS narrows the run
## (make unit PKGS=./internal/cli/...); TESTJSON keeps every test event.
PKGS      ?= ./...
TESTJSON  ?= $(BIN)/test.json
SLOWEST   ?= 15
unit:
	@mkdir -p '$(dir $(TESTJSON))'
	@status=0; \
	$(GO) tool gotestsum --format pkgname-and-test-fails --format-hide-empty-pkg --hide-summary skipped \
		--jsonfile '$(TESTJSON)' --raw-command -- $(GO) test -json -race -count=1 $(PKGS) || status=$$?; \
	echo; echo "== the $(SLOWEST) slowest tests (subtests count on their own and in their parent)"; \
	$(GO) tool gotestsum tool slowest --jsonfile '$(TESTJSON)' --threshold 0s --num $(SLOWEST) | sed 's|^$(PKG)/||'; \
	if [ $$status -ne 0 ]; then echo; echo "== FAIL: go test exited $$status; the failures are listed above under === Failed and === Errors"; fi; \
	exit $$status

## cross: prove the main binary cross-compiles without cgo, with and
## without the server (linux/arm64 with its embedded launcher; linux/riscv64,
## which has no seccomp profile, with a native tier that fails closed), and
## ironvise-exec
cross:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./cmd/ironvise
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null ./cmd/ironvise
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build -tags noserver -o /dev/null ./cmd/ironvise
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -tags noserver -o /dev/null ./cmd/ironvise
	CGO_ENABLED=0 $(GO) build -tags noserver -o /dev/null ./cmd/ironvise
	CGO_ENABLED=0 GOOS=linux GOARCH=riscv64 $(GO) build -o /dev/null ./cmd/ironvise
	for t in darwin/arm64 windows/amd64 linux/arm64; do \
		CGO_ENABLED=0 GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -o /dev/null ./cmd/ironvise-exec || exit 1; \
	done
	GO='$(GO)' GOOS=linux GOARCH=arm64 ./scripts/build-ironvise.sh /dev/null

## cross-test: run, under qemu-user, the tests of Linux without a seccomp
## profile (linux/riscv64): no profile is built or installed, and the native
## tier says it is unavailable and runs nothing. Skipped without qemu-riscv64
## except in CI (.ci/run installs qemu-user).
cross-test:
	@if ! command -v qemu-riscv64 >/dev/null; then \
		if [ -n "$$CI" ]; then echo "cross-test: qemu-riscv64 is missing; install with: apt-get install -y qemu-user" >&2; exit 1; fi; \
		echo "cross-test: skipped, qemu-riscv64 is not installed (apt-get install -y qemu-user)"; exit 0; \
	fi; \
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	for p in seccomp:./internal/sandbox/native/seccomp native:./internal/sandbox/native; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=riscv64 $(GO) test -c -o "$$dir/$${p%%:*}.test" "$${p#*:}" || exit 1; \
		echo "qemu-riscv64 $${p#*:}"; \
		qemu-riscv64 "$$dir/$${p%%:*}.test" -test.run 'NoProfileFailsClosed|NoSeccompProfileFailsClosed' -test.v >"$$dir/out" 2>&1; st=$$?; \
		grep -E '^(--- |PASS|FAIL|panic)' "$$dir/out"; \
		[ $$st -eq 0 ] || { cat "$$dir/out"; exit 1; }; \
	done

## bench: the performance targets of the spec
bench:
	GOMAXPROCS=1 $(GO) test -run '^$$' -bench . -benchmem ./internal/...

## fuzz: run every fuzz target for FUZZTIME (default 2m)
FUZZTIME ?= 2m
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf $(BIN)
