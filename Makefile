# A thin wrapper over CMake. `make run` and `make test` are the two commands
# a new machine needs (see README.md).
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_CC    ?= clang-14
FUZZ_SECONDS ?= 300
FUZZ_TARGETS := jsonrpc json validate uri_template http pattern encoding peer
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
GIFT_JSON  := {"occasion":"birthday","budget":50,"recipient":"a friend who loves board games"}
PORT       ?= 8080
# our own builds treat warnings as errors; a packager's plain cmake does not
WERROR     ?= -DLUAMCP_WERROR=ON
# make install / uninstall: the usual PREFIX and DESTDIR
PREFIX     ?= /usr/local
BINDIR     := $(PREFIX)/bin
LIBDIR     := $(PREFIX)/lib/luamcp
SHAREDIR   := $(PREFIX)/share/luamcp
MANDIR     := $(PREFIX)/share/man/man1
DOCDIR     := $(PREFIX)/share/doc/luamcp
# make image: the container image (deploy/container/Containerfile), podman or docker
VERSION    := $(shell sed -n 's/^project.luamcp VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
CONTAINER  ?= podman
IMAGE      ?= luamcp:$(VERSION)
BASE       ?= debian:bookworm-slim
APP        ?= .
# the reference README links to (docs/DESIGN.md is the developers')
USER_DOCS  := lua-api widgets http protocol cli shipping SCALING PERFORMANCE auth observability testing skills deploy

.PHONY: image deb test-deploy all build asan tsan fuzz-build fuzz run test bench deps-run deps-test deps-bench npm clean install uninstall

all: build

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DLUAMCP_SANITIZE=ON $(WERROR) >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)

# only the server: the HTTP suites run it under ThreadSanitizer
tsan:
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUAMCP_TSAN=ON $(WERROR) >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target luamcp

# the libFuzzer targets (tests/fuzz): clang, ASan+UBSan, coverage
fuzz-build:
	@CC=$(FUZZ_CC) cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUAMCP_FUZZ=ON $(WERROR) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers

# each target for FUZZ_SECONDS, one after the other, from a temporary copy
# of its seed corpus; the final libFuzzer lines go to fuzz-summary.txt
fuzz: fuzz-build
	@rm -f $(FUZZ_BUILD)/fuzz-summary.txt; failed=; \
	for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz_$$t for $(FUZZ_SECONDS) s"; \
	  tests/fuzz/run.sh $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t tests/fuzz/corpus/$$t $(FUZZ_SECONDS) \
	    $(CURDIR)/$(FUZZ_BUILD)/fuzz-artifacts >$(FUZZ_BUILD)/fuzz-$$t.log 2>&1 || failed="$$failed $$t"; \
	  tail -n 1 $(FUZZ_BUILD)/fuzz-$$t.log | tee -a $(FUZZ_BUILD)/fuzz-summary.txt; \
	done; \
	echo "== summary ($(FUZZ_BUILD)/fuzz-summary.txt)"; cat $(FUZZ_BUILD)/fuzz-summary.txt; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed (inputs in $(FUZZ_BUILD)/fuzz-artifacts, logs $(FUZZ_BUILD)/fuzz-NAME.log)"; exit 1; fi

deps-run:
	@tools/install-deps.sh run

deps-test:
	@tools/install-deps.sh test

deps-bench:
	@tools/install-deps.sh bench

# the npm packages the tests use, exactly as pinned in tests/package-lock.json,
# and the example authorization server's, from its own lockfile (the tests run it)
# (tools/npm: the system's npm, or the pinned one when that does not run)
npm:
	@cd tests && ../tools/npm ci --no-audit --no-fund --loglevel=error
	@cd examples/oauth && ../../tools/npm ci --no-audit --no-fund --loglevel=error

run: deps-run build
	@echo "== luamcp check ."
	@$(BUILD)/luamcp check .
	@printf "== luamcp call . suggest_gifts '%s'\n" '$(GIFT_JSON)'
	@$(BUILD)/luamcp call . suggest_gifts '$(GIFT_JSON)' 2>/dev/null
	@echo "== serving the example app at http://127.0.0.1:$(PORT)/mcp (Ctrl-C stops it)"
	@echo "   Claude Code:  claude mcp add --transport http gifts http://127.0.0.1:$(PORT)/mcp"
	@echo "   VS Code (.vscode/mcp.json):"
	@echo '     { "servers": { "gifts": { "type": "http", "url": "http://127.0.0.1:$(PORT)/mcp" } } }'
	@echo "   Claude Desktop (stdio):"
	@echo '     { "mcpServers": { "gifts": { "command": "$(CURDIR)/$(BUILD)/luamcp", "args": ["serve", "$(CURDIR)"] } } }'
	@exec $(BUILD)/luamcp serve --http 127.0.0.1:$(PORT) .

# fuzz.* (20 s each) when clang is there to build the fuzzers
test: deps-test npm asan tsan
	@if command -v $(FUZZ_CC) >/dev/null; then $(MAKE) --no-print-directory fuzz-build || exit 1; \
	  fuzz_dir=$(CURDIR)/$(FUZZ_BUILD); else echo "no $(FUZZ_CC): fuzz.* not run"; fuzz_dir=; fi; \
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR) \
	  -DLUAMCP_ASAN_DIR=$(CURDIR)/$(ASAN_BUILD) -DLUAMCP_TSAN_DIR=$(CURDIR)/$(TSAN_BUILD) \
	  -DLUAMCP_FUZZ_DIR=$$fuzz_dir >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE deploy-heavy

# the slow deploy tests (ctest label deploy-heavy: the container image, the
# Debian package, the bundle in a bare Debian root), one after the other;
# root, and they install podman, mmdebstrap, debhelper, lintian, patchelf
test-deploy: deps-test npm build
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR) >/dev/null
	@cd $(BUILD) && ctest --output-on-failure -L deploy-heavy

# luamcp_VERSION_ARCH.deb in $(BUILD)/deb (debian/: debhelper), checked by
# lintian when it is installed: dpkg-buildpackage writes its files beside the
# checkout unless told, so they are sent to $(BUILD)/deb
DEB_DIR     = $(CURDIR)/$(BUILD)/deb
DEB_ARCH    = $(shell dpkg --print-architecture)
deb:
	@dpkg-checkbuilddeps
	@mkdir -p $(DEB_DIR)
	LUAMCP_DEB_DIR=$(DEB_DIR) dpkg-buildpackage -us -uc -b \
	  --changes-file=$(DEB_DIR)/luamcp_$(VERSION)_$(DEB_ARCH).changes --changes-option=-u$(DEB_DIR) \
	  --buildinfo-file=$(DEB_DIR)/luamcp_$(VERSION)_$(DEB_ARCH).buildinfo --buildinfo-option=-u$(DEB_DIR)
	@debian/rules clean >/dev/null   # obj-*/ and debian/luamcp/ gone: the checkout as it was
	@if command -v lintian >/dev/null; then lintian --fail-on error,warning $(DEB_DIR)/luamcp_$(VERSION)_$(DEB_ARCH).deb; \
	  else echo "no lintian: the package is not checked"; fi
	@echo "$(BUILD)/deb/luamcp_$(VERSION)_$(DEB_ARCH).deb"

# the app APP (a folder under the checkout; default the example app) served
# by luamcp in an image on BASE; the docker format keeps its HEALTHCHECK
image:
	$(CONTAINER) build --format docker --build-arg BASE=$(BASE) --build-arg APP=$(APP) \
	  -f deploy/container/Containerfile -t $(IMAGE) .

bench: deps-bench npm build
	@bench/run.sh
	@bench/reload/run.sh
	@bench/http/run.sh
	@if [ -x bench/scale/run.sh ]; then bench/scale/run.sh; fi
	@bench/io/run.sh
	@bench/cluster/run.sh
	@bench/soak/run.sh
	@bench/tmdev/run.sh
	@node bench/report.mjs

# the binary, the TLS shim (PREFIX/lib/luamcp: luamcp looks there when it is
# not next to the binary), the annotations that `luamcp new` points editors
# at, the man page, README and the reference it links to. Builds first unless
# $(BUILD)/luamcp is there.
install:
	@test -x $(BUILD)/luamcp || $(MAKE) --no-print-directory build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(BUILD)/luamcp $(DESTDIR)$(BINDIR)/luamcp
	@if [ -f $(BUILD)/libluamcp-tls.so ]; then \
	  echo "install -m 755 $(BUILD)/libluamcp-tls.so $(DESTDIR)$(LIBDIR)/libluamcp-tls.so"; \
	  install -d $(DESTDIR)$(LIBDIR) && install -m 755 $(BUILD)/libluamcp-tls.so $(DESTDIR)$(LIBDIR)/; fi
	install -m 644 lua/mcp.d.lua lua/mcp.test.d.lua $(DESTDIR)$(SHAREDIR)/
	install -m 644 docs/luamcp.1 $(DESTDIR)$(MANDIR)/luamcp.1
	install -m 644 README.md SECURITY.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/docs
	install -m 644 $(USER_DOCS:%=docs/%.md) $(DESTDIR)$(DOCDIR)/docs/

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/luamcp $(DESTDIR)$(LIBDIR)/libluamcp-tls.so \
	  $(DESTDIR)$(SHAREDIR)/mcp.d.lua $(DESTDIR)$(SHAREDIR)/mcp.test.d.lua $(DESTDIR)$(MANDIR)/luamcp.1 \
	  $(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/SECURITY.md \
	  $(USER_DOCS:%=$(DESTDIR)$(DOCDIR)/docs/%.md)
	-rmdir $(DESTDIR)$(LIBDIR) $(DESTDIR)$(SHAREDIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) 2>/dev/null

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
