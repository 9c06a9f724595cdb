# A thin front door over CMake. `make demo` and `make test` do all set-up on a fresh
# Debian machine: missing packages (when root), configure, build, run.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps deps-test build demo test test-release test-asan bench install clean

all: build

deps:
	@bash scripts/setup-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The main job: train an MLP on real Fashion-MNIST on the default backend
# (FF_BACKEND=cpu_blas make demo for the fast one).
demo: build
	$(BUILD)/bin/fashion_mnist

# Every test: unit tests, conformance on every backend, mutation tests, Python tests
# (with PyTorch, the semantic reference, installed for the differential tests), then the
# unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
test: test-release test-asan

deps-test:
	@FF_EXTRA_PKGS=python3-torch bash scripts/setup-deps.sh

test-release: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFF_SANITIZE=ON $(CMAKE_ARGS)

test-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(JOBS) -L "unit|conformance"

# Every backend side by side with cblas, C loops, NumPy and PyTorch (installs
# python3-torch when it can), then plots and the table in benchmarks/README.md.
bench: build
	@FF_EXTRA_PKGS=python3-torch bash scripts/setup-deps.sh
	benchmarks/run_all.sh $(BUILD)/bin/ff-bench

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
