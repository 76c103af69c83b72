# shmzone build and test targets.
GO ?= go
PKGS ?= ./...
## CONTRIB: the contrib modules (contrib/*/go.mod), each its own Go module
## with its own dependencies, so that the core module never pulls them; ./...
## stops at their go.mod, and every target below runs them one by one.
CONTRIB := $(patsubst %/go.mod,%,$(wildcard contrib/*/go.mod))
# in_contrib runs $(1) in every contrib module, stopping at the first failure.
in_contrib = @for m in $(CONTRIB); do echo "$$m: $(1)"; (cd $$m && $(1)) || exit 1; done

.PHONY: test deps lint vet fmt race unit bench fuzz

## test: what CI runs: lint, the tests, and the tests again under the race detector.
test: deps lint unit race

## deps: the tests start real redis-server processes (limiter/redistier),
## and go test -race needs cgo, so a C compiler; install redis-server and
## redis-cli, and gcc and libc6-dev when `$(GO) env CC` is not on PATH, with
## apt when they are missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@pkgs=; \
	command -v redis-server >/dev/null && command -v redis-cli >/dev/null || pkgs="redis-server redis-tools"; \
	cc=$$($(GO) env CC); command -v "$${cc%% *}" >/dev/null || pkgs="$$pkgs gcc libc6-dev"; \
	[ -z "$$pkgs" ] || ($(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkgs)

## unit also runs dict's tests that stall goroutines at chosen points
## (dict/stall.go), which need the dictstall tag.
unit: deps
	$(GO) test -count=1 $(PKGS)
	$(GO) test -count=1 -tags dictstall -run StalePin ./dict
	$(call in_contrib,$(GO) test -count=1 ./...)

race: deps
	$(GO) test -race -count=1 $(PKGS)
	$(call in_contrib,$(GO) test -race -count=1 ./...)

## lint: gofmt and go vet must be clean.
lint: vet fmt

vet:
	$(GO) vet $(PKGS)
	$(call in_contrib,$(GO) vet ./...)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi

## bench: the whole benchmark suite (bench/report): the Go benchmarks (with
## one and two processes on random client keys), the `worker bench` matrix
## (zone, Redis when redis-server is installed, flock, mutex; the zone again
## with -keyset own, each process on its own keys), the scaling chart
## (opened in headless Chromium when installed) and nginx's lua_shared_dict
## (bench/peers/nginx.sh, when nginx and its lua module are installed); then
## it rewrites bench/RESULTS.md, bench/results.json and bench/scaling.svg,
## which says how long the run took.
bench:
	$(GO) run ./bench/report

## fuzz: a short fuzzing run of each target beyond the seed corpus that test runs.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzOpen -fuzztime=$(FUZZTIME) ./dict
