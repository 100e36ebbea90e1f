# Thin wrapper: set-up (Debian packages), configure, build, then run, test, or check harder.
#   make run        install what is missing, build, trace the built-in example
#   make test       install what is missing, build, run every test through ctest
#   make sanitize   the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (clang)
#   make tsan       the threaded tests built with ThreadSanitizer (clang, libomp, Archer)
#   make fuzz       the libFuzzer target for FUZZ_SECONDS (default 60) from tests/fuzz/corpus

BUILD_DIR    ?= build
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
# Build: the first seven. Tests: xmllint and rsvg-convert check the SVG heatmaps.
PACKAGES       := cmake make g++ libcli11-dev libfmt-dev nlohmann-json3-dev libeigen3-dev catch2 \
                  libxml2-utils librsvg2-bin
CLANG_PACKAGES := clang libclang-rt-14-dev libomp-dev
SUDO           := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ARCHER         := /usr/lib/llvm-14/lib/libarcher.so

.PHONY: run test configure program build deps clang-deps build-asan sanitize tsan fuzz clean

run: program
	./$(BUILD_DIR)/attntrace

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	tests/check_test_count.sh $(BUILD_DIR)

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

# `make run` builds the program alone; the tests are built by `make test`.
program: configure
	cmake --build $(BUILD_DIR) --target attntrace -j $(JOBS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs only the Debian packages that are missing (apt-get, with sudo when not root).
define install_missing
	@missing=""; \
	for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call install_missing,$(PACKAGES))

clang-deps:
	$(call install_missing,$(CLANG_PACKAGES))

# The sanitizer builds are checks, not products: -O1 with line tables (and assertions on)
# builds in half the time of -O2 -g and still gives readable reports.
CHECK_FLAGS := -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"

# One clang build serves `sanitize` and `fuzz`: ASan + UBSan on every target, libFuzzer's
# coverage added.
build-asan: deps clang-deps
	CC=clang CXX=clang++ cmake -S . -B build-asan $(CHECK_FLAGS) -DATTNTRACE_FUZZ=ON
	cmake --build build-asan -j $(JOBS)

sanitize: build-asan
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	tests/check_test_count.sh build-asan

# libgomp is not instrumented for TSan; LLVM's libomp with its Archer tool tells TSan what
# OpenMP synchronises. The tests that run threads (kernels, streaming, parser, CLI) run here.
tsan: deps clang-deps
	CC=clang CXX=clang++ cmake -S . -B build-tsan $(CHECK_FLAGS) -DATTNTRACE_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
	  ./build-tsan/tests/attntrace_tests "[threads],[streaming],[modes],[bahdanau],[json]"

fuzz: build-asan
	mkdir -p build-asan/corpus build-asan/artifacts
	./build-asan/tests/fuzz/attntrace_fuzz build-asan/corpus tests/fuzz/corpus -dict=tests/fuzz/json.dict \
	  -max_len=4096 -timeout=10 -rss_limit_mb=2048 -max_total_time=$(FUZZ_SECONDS) \
	  -artifact_prefix=build-asan/artifacts/ -print_final_stats=1

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan
