# The two entry points a new machine needs: `make demo` and `make test`.
# Each sets up its own virtual environment (.venv) from the package registries.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean vsix test-extension e2e nvim fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The main job: compact a shipped agent history and print tokens by pass, once as it is and
# once near a small context limit, so that compression runs too.
demo: $(STAMP)
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc
	@echo
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc --context-limit 2400

lint: $(STAMP)
	$(BIN)/ruff check server tests bench examples
	$(BIN)/ruff format --check server tests bench examples

typecheck: $(STAMP)
	$(BIN)/mypy

# The daemon's Neovim test drives it with Neovim's own LSP client (vim.lsp): install Neovim
# from Debian when it is missing. Idempotent; without apt-get or root the test says why it skips.
nvim:
	@if [ "$$HDC_SKIP_EDITOR_TESTS" = 1 ]; then echo "nvim: skipped (HDC_SKIP_EDITOR_TESTS=1)"; \
	elif command -v nvim >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "nvim: installing Debian's neovim (about 30 MB, system-wide with apt-get) for the Neovim client test"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q neovim >/dev/null 2>&1 \
	  || { apt-get update -q >/dev/null && apt-get install -y -q neovim >/dev/null; } \
	  || echo "nvim: could not install neovim; the Neovim test will be skipped"; \
	else echo "nvim: missing and apt-get (as root) is not available; the Neovim test will be skipped"; fi

unit: $(STAMP) nvim
	$(BIN)/pytest

test: lint typecheck unit test-extension e2e

# The daemon's fuzz tests at length: hypothesis over JSON-RPC bodies and framing against the
# real daemon (tests/daemon/test_fuzz.py; `make unit` runs 2,000 examples), and over the
# decoder alone. FUZZ_EXAMPLES=n for another count.
FUZZ_EXAMPLES ?= 50000
fuzz: $(STAMP)
	HDCONTEXT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q -s -p no:cacheprovider \
	  tests/daemon/test_fuzz.py tests/daemon/test_decode.py

# The VS Code extension (client-extension/): npm packages from the lockfile, then tsc --noEmit
# and the Node tests (pure modules, the real daemon over vscode-jsonrpc, the vscode glue with a
# mocked vscode module). `vsix` packages it with the daemon inside: the hdcontext wheel built from
# this repository (client-extension/bundled/), installed by the extension into an environment of
# its own on first use; `make vsix TARGET=linux-x64` (any `vsce package --target` name) also
# carries the dependency wheels of that platform for CPython 3.11 to 3.14 (pip download, from
# PyPI or pip's configured index), so that first use needs no network. `e2e` runs it in a real
# VS Code (code-server 4.139.1, headless chromium): the status bar, the chat panel, and first use
# with the package for this machine. Before that, setup.sh installs once what those editor tests
# drive, and says what, how big and where before each install: Debian packages (system-wide,
# apt-get), Node 24 and code-server (~/.cache/hdcontext-e2e, about 800 MB).
# HDC_SKIP_EDITOR_TESTS=1 installs nothing and reports the editor tests as skipped.
# Screenshots and, after a failure, logs: test-artifacts/e2e/, test-artifacts/chat/ and
# test-artifacts/first-use/.
EXT       := client-extension
EXT_STAMP := $(EXT)/node_modules/.installed

$(EXT_STAMP): $(EXT)/package.json $(EXT)/package-lock.json
	cd $(EXT) && npm ci --no-audit --no-fund
	touch $(EXT_STAMP)

TARGET      ?=
HOST_TARGET := $(shell node -p 'process.platform + "-" + process.arch' 2>/dev/null)
VSIX_FILE    = hdcontext$(if $(TARGET),-$(TARGET)).vsix

vsix: $(STAMP) $(EXT_STAMP)
	cd $(EXT) && node scripts/bundle-daemon.mjs --python ../$(BIN)/python --repo .. --target '$(TARGET)'
	cd $(EXT) && npm run --silent package -- --out $(VSIX_FILE) $(if $(TARGET),--target $(TARGET))
	@echo "built $(EXT)/$(VSIX_FILE) ($$(du -h $(EXT)/$(VSIX_FILE) | cut -f1))"

test-extension: $(STAMP) $(EXT_STAMP)
	cd $(EXT) && npm run --silent typecheck && npm test --silent

e2e: $(STAMP) vsix
	@if [ "$$HDC_SKIP_EDITOR_TESTS" != 1 ]; then $(MAKE) --no-print-directory vsix TARGET=$(HOST_TARGET); fi
	$(EXT)/test/e2e/setup.sh
	cd $(EXT) && npm run --silent package:fixture >/dev/null && npm run --silent test:e2e
	@if [ "$$HDC_SKIP_EDITOR_TESTS" = 1 ]; then echo "e2e: skipped (HDC_SKIP_EDITOR_TESTS=1)"; \
	else echo "e2e screenshots: test-artifacts/e2e/, test-artifacts/chat/, test-artifacts/first-use/"; fi

# Density on every real transcript in ../shared/data/transcripts, then latency, memory and a
# profile of the daemon on the largest one; prints tables and writes bench/results/latest.json
# (git ignores bench/results/: a run measures one machine).
bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
