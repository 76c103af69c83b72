# shmzone build and test targets.
GO ?= go
PKGS ?= ./...

.PHONY: test lint vet fmt race unit bench fuzz

## test: what CI runs: lint, the tests, and the tests again under the race detector.
test: lint unit race

unit:
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -race -count=1 $(PKGS)

## lint: gofmt and go vet must be clean.
lint: vet fmt

vet:
	$(GO) vet $(PKGS)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi

## bench: the Go benchmarks (figures go to bench/RESULTS.md).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 $(PKGS)

## fuzz: a short fuzzing run of each target beyond the seed corpus that test runs.
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzOpen -fuzztime=$(FUZZTIME) ./dict
