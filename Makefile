# A thin wrapper over CMake. `make run` and `make test` are the two commands
# a new machine needs (see README.md).
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
GIFT_CALL  := '{"occasion":"birthday","budget":50,"recipient":"a friend who loves board games"}'
PORT       ?= 8080

.PHONY: all build asan tsan run test bench deps-run deps-test deps-bench npm clean

all: build

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLUAMCP_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

# only the server: the HTTP suites run it under ThreadSanitizer
tsan:
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUAMCP_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target luamcp

deps-run:
	@tools/install-deps.sh run

deps-test:
	@tools/install-deps.sh test

deps-bench:
	@tools/install-deps.sh bench

# the npm packages the tests use, exactly as pinned in tests/package-lock.json
# (tools/npm: the system's npm, or the pinned one when that does not run)
npm:
	@cd tests && ../tools/npm ci --no-audit --no-fund --loglevel=error

run: deps-run build
	@echo "== luamcp check ."
	@$(BUILD)/luamcp check .
	@echo "== luamcp call . suggest_gifts $(GIFT_CALL)"
	@$(BUILD)/luamcp call . suggest_gifts $(GIFT_CALL) 2>/dev/null
	@echo "== serving the example app at http://127.0.0.1:$(PORT)/mcp (Ctrl-C stops it)"
	@echo "   Claude Code:  claude mcp add --transport http gifts http://127.0.0.1:$(PORT)/mcp"
	@echo "   VS Code (.vscode/mcp.json):"
	@echo '     { "servers": { "gifts": { "type": "http", "url": "http://127.0.0.1:$(PORT)/mcp" } } }'
	@echo "   Claude Desktop (stdio):"
	@echo '     { "mcpServers": { "gifts": { "command": "$(CURDIR)/$(BUILD)/luamcp", "args": ["serve", "$(CURDIR)"] } } }'
	@exec $(BUILD)/luamcp serve --http 127.0.0.1:$(PORT) .

test: deps-test npm asan tsan
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLUAMCP_ASAN_DIR=$(CURDIR)/$(ASAN_BUILD) -DLUAMCP_TSAN_DIR=$(CURDIR)/$(TSAN_BUILD) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

bench: deps-bench npm build
	@bench/run.sh
	@bench/reload/run.sh
	@bench/http/run.sh
	@if [ -x bench/scale/run.sh ]; then bench/scale/run.sh; fi
	@bench/io/run.sh
	@node bench/report.mjs

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
