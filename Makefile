# Thin front for CMake. `make run` is the main job, `make test` runs every test;
# both install what is missing first (scripts/setup.sh, idempotent).
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS ?= $(shell nproc)
PY = .venv/bin/python
FUZZ_SECONDS ?= 60
BUNDLE_FUZZ_SECONDS ?= 30
TESTDATA_FUZZ_SECONDS ?= 20
PREFIX ?= /usr/local

.PHONY: all setup build board-runtimes asan-build fuzz-build install run bench bench-shapes bench-broad test test-release test-asan fuzz conformance clean

all: build

setup:
	@scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# the runtime and kiln-run cross-built for the Linux boards: $(BUILD)/board-<target>/kiln-run
# (part of `make build`; this names just them)
board-runtimes: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS) --target board-aarch64 board-armv7 board-riscv64

asan-build: setup
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

fuzz-build: setup
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKILN_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_importer fuzz_bundle fuzz_testdata fuzz_npy

# kiln and kiln-run into PREFIX/bin, the runtime (libkiln_runtime.so / .a, kiln.h,
# kiln-runtime.pc, find_package(kiln)) into PREFIX/lib and PREFIX/include/kiln
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

run: build
	@scripts/run.sh $(BUILD)/kiln

# kiln vs onnxruntime on the benchmark models (bench/README.md); BENCH_ARGS passes options
bench: build
	@$(PY) bench/run.py --kiln $(BUILD)/kiln $(BENCH_ARGS)

# kiln vs onnxruntime per shape class (bench/shapes.py); SHAPES_ARGS="--classes conv1d,matmul" picks some
bench-shapes: build
	@$(PY) bench/shapes.py --kiln $(BUILD)/kiln $(SHAPES_ARGS)

# kiln vs onnxruntime on the sixteen broad models (bench/models.py), alternating and each alone;
# BROAD_ARGS="--models resnet18,vit --mode alone" picks some
bench-broad: build
	@$(PY) bench/models.py --kiln $(BUILD)/kiln $(BROAD_ARGS)

test: test-release test-asan fuzz

test-release: build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: asan-build
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j$(JOBS)

fuzz: build fuzz-build
	@tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz_importer $(FUZZ_SECONDS)
	@tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz_bundle $(BUNDLE_FUZZ_SECONDS) $(BUILD)/kiln
	@tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz_testdata $(TESTDATA_FUZZ_SECONDS)
	@tests/fuzz/run.sh $(FUZZ_BUILD)/fuzz_npy $(TESTDATA_FUZZ_SECONDS)

# The whole ONNX backend node suite: a line per test, then the totals.
# `make conformance README=1` also rewrites the per-op table in README.md.
conformance: build
	@$(PY) tests/conformance/run.py --kiln $(BUILD)/kiln $(if $(README),--readme)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
