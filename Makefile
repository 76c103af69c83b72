# shmzone build and test targets.
GO ?= go
PKGS ?= ./...
## CONTRIB: the contrib modules (contrib/*/go.mod), each its own Go module
## with its own dependencies, so that the core module never pulls them; ./...
## stops at their go.mod, and every target below runs them one by one.
CONTRIB := $(patsubst %/go.mod,%,$(wildcard contrib/*/go.mod))
# KEEP starts a recipe whose commands all run even after one fails: `run
# CMD...` runs a command in the root, `contrib CMD...` in every contrib
# module. The recipe ends with $(DONE), which fails if any command did.
KEEP = @st=0; \
	run() { echo "$$*"; "$$@" || st=1; }; \
	contrib() { for m in $(CONTRIB); do echo "$$m: $$*"; (cd $$m && "$$@") || st=1; done; }
DONE = exit $$st

.PHONY: test test-load deps lint vet fmt race unit bench bench-deps fuzz

## test: what CI runs: lint, the tests, and the tests again under the race
## detector. Every stage runs even when an earlier one fails, so that one
## failure hides no other; test fails at the end if any stage failed.
STAGES := lint unit race
test: deps
	@failed=; for s in $(STAGES); do \
		$(MAKE) --no-print-directory $$s || failed="$$failed $$s"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi; \
	echo "make test: $(STAGES) passed"

## test-load: make test while LOAD busy loops (4 by default) keep every core
## busy, as on a shared CI machine. The loops end with the target, whatever
## its outcome.
LOAD ?= 4
test-load:
	@pids=; trap 'kill $$pids 2>/dev/null' EXIT; trap 'exit 1' HUP INT PIPE TERM; \
	for i in $$(seq $(LOAD)); do sh -c 'while :; do :; done' & pids="$$pids $$!"; done; \
	echo "make test-load: $(LOAD) busy loops:$$pids"; \
	start=$$(date +%s); st=0; $(MAKE) --no-print-directory test || st=$$?; \
	echo "make test-load: exit $$st after $$(( $$(date +%s) - start )) s"; exit $$st

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

## TIMEOUT: go test's limit for one package. Its default of 10 minutes is
## too short for the crash and sizing tests under the race detector on a
## loaded 2-core machine.
TIMEOUT ?= 30m

## unit also runs dict's tests that stall goroutines at chosen points
## (dict/stall.go), which need the dictstall tag, and those that read what
## eviction records (dict/hooks.go), which need the dicthooks tag. race
## runs the latter too.
HOOKTESTS := '^(TestModel|TestCrashEvict|TestEvValue|TestWalkStep)$$'
unit: deps
	$(KEEP); \
	run $(GO) test -count=1 -timeout $(TIMEOUT) $(PKGS); \
	run $(GO) test -count=1 -timeout $(TIMEOUT) -tags dictstall -run StalePin ./dict; \
	run $(GO) test -count=1 -timeout $(TIMEOUT) -tags dicthooks -run $(HOOKTESTS) ./dict; \
	contrib $(GO) test -count=1 -timeout $(TIMEOUT) ./...; \
	$(DONE)

race: deps
	$(KEEP); \
	run $(GO) test -race -count=1 -timeout $(TIMEOUT) $(PKGS); \
	run $(GO) test -race -count=1 -timeout $(TIMEOUT) -tags dicthooks -run $(HOOKTESTS) ./dict; \
	contrib $(GO) test -race -count=1 -timeout $(TIMEOUT) ./...; \
	$(DONE)

## lint: gofmt and go vet must be clean.
lint:
	$(KEEP); run $(MAKE) --no-print-directory vet; run $(MAKE) --no-print-directory fmt; $(DONE)

## vet: go vet, and go vet of the core module as built for arm64, the
## weaker memory order that dict's lock-free reads are written for.
vet:
	$(KEEP); \
	run $(GO) vet $(PKGS); \
	run env GOARCH=arm64 $(GO) vet $(PKGS); \
	contrib $(GO) vet ./...; \
	$(DONE)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi

## bench: the whole benchmark suite (bench/report): the Go benchmarks (with
## one and two processes on random client keys), the `worker bench` matrix
## (zone, Redis when redis-server is installed, flock, mutex; the zone again
## with -keyset own, each process on its own keys), the scaling chart
## (opened in headless Chromium when installed), and nginx's
## lua_shared_dict, resty.limit.req and resty.limit.count
## (bench/peers/nginx.sh), and the end-to-end section (prefork servers of
## net/http, fasthttp and fiber under wrk); then it rewrites
## bench/RESULTS.md, bench/results.json and bench/scaling.svg, which says
## how long the run took. `go run ./bench/report -only e2e` measures the
## end-to-end section alone into the existing results.
bench: deps bench-deps
	$(GO) run ./bench/report

## bench-deps: bench/peers/nginx.sh runs nginx with its lua module and
## lua-resty-core, and the end-to-end section loads its servers with wrk;
## install nginx-light, libnginx-mod-http-lua, lua-resty-core and wrk with
## apt when they are missing.
bench-deps:
	@pkgs=; \
	command -v nginx >/dev/null || pkgs="nginx-light"; \
	command -v wrk >/dev/null || pkgs="$$pkgs wrk"; \
	[ -e /usr/share/nginx/modules/ngx_http_lua_module.so ] || pkgs="$$pkgs libnginx-mod-http-lua"; \
	[ -e /usr/share/lua/5.1/resty/core.lua ] || pkgs="$$pkgs lua-resty-core"; \
	[ -z "$$pkgs" ] || ($(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y $$pkgs)

## fuzz: a short fuzzing run of each target beyond the seed corpus that test runs.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzOpen -fuzztime=$(FUZZTIME) ./dict
