# Thin wrapper: set-up (Debian packages), configure, build, then run or test.
#   make run    install what is missing, build, trace the built-in example
#   make test   install what is missing, build, run every test through ctest

BUILD_DIR ?= build
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
# Build: the first seven. Tests: xmllint and rsvg-convert check the SVG heatmaps.
PACKAGES  := cmake make g++ libcli11-dev libfmt-dev nlohmann-json3-dev libeigen3-dev catch2 \
             libxml2-utils librsvg2-bin
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test build deps clean

run: build
	./$(BUILD_DIR)/attntrace

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

build: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs only the Debian packages that are missing (apt-get, with sudo when not root).
deps:
	@missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

clean:
	rm -rf $(BUILD_DIR)
