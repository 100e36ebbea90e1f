# Thin wrapper: set-up (Debian packages), configure, build, then run, test, or check harder.
#   make run        install what is missing, build, trace the built-in example
#   make test       install what is missing, build, run every test through ctest
#   make install    the program, its man page, completions, docs and examples under PREFIX
#                   (default /usr/local; DESTDIR=… stages them elsewhere)
#   make deb        a Debian package, $(BUILD_DIR)/attntrace_VERSION_ARCH.deb (CPack)
#   make sanitize   the whole test suite built with AddressSanitizer + UndefinedBehaviorSanitizer (clang)
#   make tsan       the threaded tests built with ThreadSanitizer (clang, libomp, Archer)
#   make fuzz       the libFuzzer target for FUZZ_SECONDS (default 60) from tests/fuzz/corpus
#   make include-check  every source file compiled alone, syntax only (a missing #include)

BUILD_DIR    ?= build
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
PREFIX       ?= /usr/local
# Building needs BUILD_PACKAGES (all `make run` installs). The tests need the rest: xmllint
# and rsvg-convert check the SVG heatmaps; jsonschema validates the JSON against docs/schema,
# pandas reads the tidy CSV; numpy writes the binary-array fixtures again and reads what
# attntrace writes; man-db, zsh and fish read the installed man page and completions;
# qemu-user runs the portable binary on an old CPU model; dpkg-dev works out the Debian
# package's dependencies (`make deb`) and gives the distribution's hardening flags; lintian
# checks the package; jq runs the example of --help that pipes into it; tmux runs attntrace step
# in a real terminal and procps's pkill signals it there; cmark-gfm renders
# the Markdown output as a page would, to see that no label becomes markup.
BUILD_PACKAGES := cmake make g++ libcli11-dev libfmt-dev nlohmann-json3-dev libeigen3-dev libutf8proc-dev zlib1g-dev
TEST_PACKAGES  := catch2 tmux procps chromium-headless-shell jupyter-nbconvert python3-nbclient python3-ipykernel python3-matplotlib libxml2-utils librsvg2-bin jq python3-jsonschema python3-pandas python3-numpy man-db zsh fish qemu-user dpkg-dev lintian cmark-gfm
PACKAGES       := $(BUILD_PACKAGES) $(TEST_PACKAGES)
CLANG_PACKAGES := clang libclang-rt-14-dev libomp-dev
SUDO           := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
ARCHER         := /usr/lib/llvm-14/lib/libarcher.so

.PHONY: run test configure program build installable build-deps deps clang-deps build-asan sanitize include-check tsan tsan-run fuzz clean install deb

run: program
	./$(BUILD_DIR)/attntrace

test: deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)
	tests/check_test_count.sh $(BUILD_DIR)

# Configured without the tests when catch2 is not there yet (`make run` on a fresh machine);
# `make test` installs it first, and the configuration then finds it.
configure: build-deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release

# `make run` builds the program alone; the tests are built by `make test`.
program: configure
	cmake --build $(BUILD_DIR) --target attntrace -j $(JOBS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# What is installed: the program, and the man page and completions it writes about itself.
installable: configure
	cmake --build $(BUILD_DIR) --target attntrace attntrace_manual -j $(JOBS)

install: installable
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

deb: installable
	$(call install_missing,dpkg-dev)
	cd $(BUILD_DIR) && cpack -G DEB

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

build-deps:
	$(call install_missing,$(BUILD_PACKAGES))

deps:
	$(call install_missing,$(PACKAGES))

clang-deps:
	$(call install_missing,$(CLANG_PACKAGES))

# The sanitizer builds are checks, not products: -O1 with line tables (and assertions on)
# builds in half the time of -O2 -g and still gives readable reports. They compile the core
# in unity groups, as the Release build does. `make include-check` compiles each source file
# alone, syntax only (ATTNTRACE_INCLUDE_CHECK), so that a file missing an #include of its own,
# which a unity group hides, fails there: about 160 CPU-seconds, which CI's 35 minutes no longer
# hold, so it is run by hand before a change of includes lands.
# They hold the kernels' AVX-512 copy only when this CPU can run it.
CPU_AVX512  := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo ON || echo OFF)
CHECK_FLAGS := -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DATTNTRACE_UNITY=ON \
               -DATTNTRACE_AVX512_COPY=$(CPU_AVX512)

# One clang build serves `sanitize` and `fuzz`: ASan + UBSan on every target, libFuzzer's
# coverage added.
build-asan: deps clang-deps
	CC=clang CXX=clang++ cmake -S . -B build-asan $(CHECK_FLAGS) -DATTNTRACE_FUZZ=ON
	cmake --build build-asan -j $(JOBS)

include-check: deps clang-deps
	CC=clang CXX=clang++ cmake -S . -B build-includes $(CHECK_FLAGS) -DATTNTRACE_INCLUDE_CHECK=ON
	cmake --build build-includes -j $(JOBS) --target attntrace_includes

sanitize: build-asan
	ctest --test-dir build-asan --output-on-failure -j $(JOBS)
	tests/check_test_count.sh build-asan

# libgomp is not instrumented for TSan; LLVM's libomp with its Archer tool tells TSan what
# OpenMP synchronises. The test cases that start threads, tagged [threads], [streaming] or
# [streaming_backward] (kernels, streaming, the backward pass in tiles, parser, CLI), run here,
# from a test binary of only their files (tests/CMakeLists.txt). They run in two processes at
# once, since the machine has two cores: those tagged [threads], and the others left. Each
# leaves out what every sanitizer build leaves out (the build's tests/test_spec.txt: memory
# measured under limits, which TSan's shadow memory inflates, and the rest).
TSAN_TESTS   := ./build-tsan/tests/attntrace_tests
TSAN_ENV     := OMP_TOOL_LIBRARIES=$(ARCHER) TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1"
TSAN_SPEC    := $$(cat build-tsan/tests/test_spec.txt)
TSAN_FIRST   := [threads]$(TSAN_SPEC)
TSAN_SECOND  := [streaming]~[threads]$(TSAN_SPEC),[streaming_backward]~[threads]$(TSAN_SPEC)
tsan: deps clang-deps
	CC=clang CXX=clang++ cmake -S . -B build-tsan $(CHECK_FLAGS) -DATTNTRACE_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS)
	$(MAKE) tsan-run

tsan-run:
	$(TSAN_ENV) $(TSAN_TESTS) "$(TSAN_FIRST)" & first=$$!; \
	$(TSAN_ENV) $(TSAN_TESTS) "$(TSAN_SECOND)"; second=$$?; \
	wait $$first; first=$$?; \
	echo "tsan: the two test processes ended with $$first and $$second"; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ]

fuzz: build-asan
	mkdir -p build-asan/corpus build-asan/artifacts
	./build-asan/tests/fuzz/attntrace_fuzz build-asan/corpus tests/fuzz/corpus -dict=tests/fuzz/json.dict \
	  -max_len=4096 -timeout=10 -rss_limit_mb=2048 -max_total_time=$(FUZZ_SECONDS) \
	  -artifact_prefix=build-asan/artifacts/ -print_final_stats=1

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-includes
