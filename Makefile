# The two entry points a new machine needs: `make demo` and `make test`.
# Each sets up its own virtual environment (.venv) from the package registries, and says what it
# installs, how big and where before it does; every stage starts with a line `== stage (time)`.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev
STAGE   = @echo "== $@ ($$(date +%T))"

# Python writes its bytecode caches here (__pycache__/, ignored by git) even where the
# environment says not to: without them every daemon a test starts compiles hdcontext anew, and
# every pytest worker rewrites and compiles each test module again (11 s of CPU a worker).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint typecheck unit bench clean vsix test-extension e2e e2e-package nvim fuzz \
	agent-clis litellm e2e-apt e2e-editor ext-build _test postgres

# hdcontext and its dependencies: what `make demo` needs. pip shows what it fetches.
$(STAMP): pyproject.toml
	@echo "setup: a virtual environment in $(VENV)/ with hdcontext (editable) and its dependencies, from PyPI (about 70 MB)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -e .
	touch $(STAMP)

# The test tools on top: pytest and its plugins, hypothesis, mypy, ruff, the openai client.
$(DEV): $(STAMP)
	@echo "setup: the test tools into $(VENV)/ (pytest, pytest-xdist, hypothesis, mypy, ruff, the openai, anthropic and google-genai clients, trustme, playwright, psycopg for the PostgreSQL store…; about 295 MB more, playwright 170 of them), from PyPI"
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[dev]'
	touch $(DEV)

# The main job: compact a shipped agent history and print tokens by pass, once as it is and
# once near a small context limit, so that compression runs too.
demo: $(STAMP)
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc
	@echo
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc --context-limit 2400

lint: $(DEV)
	$(STAGE): ruff check, ruff format --check
	$(BIN)/ruff check server tests bench examples
	$(BIN)/ruff format --check server tests bench examples

typecheck: $(DEV)
	$(STAGE): mypy --strict
	$(BIN)/mypy

# The daemon's Neovim test drives it with Neovim's own LSP client (vim.lsp): install Neovim
# from Debian when it is missing. Idempotent; without apt-get or root the test says why it skips.
# (`make test` installs it with the editor tests' Debian packages, in one apt-get.)
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

# The PostgreSQL store's tests (tests/storage, tests/proxy/test_replicas.py) start a throwaway
# cluster of their own with Debian's PostgreSQL binaries (initdb, pg_ctl; as the user postgres
# when run as root): install Debian's postgresql when they are missing. Idempotent; without
# apt-get or root the tests say why they skip. (`make test` installs it with the editor tests'
# Debian packages, in one apt-get.) psycopg comes with the test tools (the dev extra).
postgres:
	@if [ "$$HDC_SKIP_EDITOR_TESTS" = 1 ]; then echo "postgres: skipped (HDC_SKIP_EDITOR_TESTS=1)"; \
	elif command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  echo "postgres: installing Debian's postgresql (about 19 MB to fetch, 64 MB installed, system-wide with apt-get) for the PostgreSQL store's tests"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -q --no-install-recommends postgresql >/dev/null 2>&1 \
	  || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends postgresql >/dev/null; } \
	  || echo "postgres: could not install postgresql; the PostgreSQL tests will be skipped"; \
	else echo "postgres: missing and apt-get (as root) is not available; the PostgreSQL tests will be skipped"; fi

# The agents' CLIs for the proxy's end-to-end tests (tests/proxy/agent_clis.py), each from npm
# into ~/.cache/hdcontext-e2e, once, saying so first: Claude Code's (claude_cli.py, 384 MB),
# Codex CLI (codex_cli.py, 424 MB), opencode (opencode_cli.py, 354 MB) and Gemini CLI
# (gemini_cli.py, 100 MB). The tests only use them, and are skipped with the reason when one is
# missing. Standard library only: they need no .venv.
agent-clis:
	@$(PYTHON) -m tests.proxy.agent_clis

# LiteLLM's proxy for the gateway's end-to-end tests (tests/gateway/): hdcontext[litellm,postgres] (LiteLLM
# 1.108.7 pinned, with its proxy's dependencies; about 770 MB) from PyPI into a virtual
# environment of its own, ~/.cache/hdcontext-e2e/litellm-1.108.7, once, said first (again only
# when hdcontext's dependencies or the pin change). Kept out of .venv: only these tests need it.
# A failure is said and leaves the tests to be skipped with the reason.
# Standard library only: it needs no .venv.
litellm:
	@$(PYTHON) -m tests.gateway.litellm_env

# pytest on every core (`-n auto`: one worker a core, pytest-xdist); a line per test file as it
# finishes (tests/conftest.py), and the ten slowest tests at the end, where the time goes.
# PYTEST_WORKERS=0 runs it in one process. --dist loadgroup: the tests of an xdist_group (the
# gateway's, which share one LiteLLM process) run on one worker; the others are spread as before.
PYTEST_WORKERS ?= auto
unit: $(DEV) nvim postgres agent-clis litellm
	$(STAGE): pytest, $(PYTEST_WORKERS) workers
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --progress-by-file \
	  -o console_output_style=classic --durations=10

# make test: what the checks need installs from the start, side by side (the virtual
# environment, Debian packages, Claude Code's CLI and Gemini CLI, LiteLLM's environment, the
# extension's npm packages, Node 24 and code-server), each said before it starts; tsc and the
# e2e's package build as soon as what they need is there, beside the test tools' install (run again: not at all unless their inputs
# changed); the checks themselves run one after another (lint, typecheck, unit,
# test-extension, e2e): side by side on two cores, the tests' time limits (an answer in 10 s, a
# venv in 3 minutes) were overrun. Each stage alone: make lint, typecheck, unit,
# test-extension, e2e.
test:
	@echo "make test: ruff, mypy --strict, pytest, the extension's Node tests, VS Code end to end ($$(date +%T))"
	@$(MAKE) --no-print-directory -j6 _test
	@echo "make test: done ($$(date +%T))"

_test: lint typecheck unit test-extension e2e

ifneq ($(filter _test,$(MAKECMDGOALS)),)
typecheck: | lint
unit: | typecheck
nvim: | e2e-apt
postgres: | e2e-apt
test-extension: | unit
e2e: | test-extension
endif

# The daemon's fuzz tests at length (hypothesis over JSON-RPC bodies and framing against the
# real daemon, tests/daemon/test_fuzz.py, and over the decoder alone, test_decode.py:
# FUZZ_EXAMPLES each, against 400 and 600 in `make test`), with every other property test of
# the suite at FUZZ_SCALE times its count (tests/examples.py).
FUZZ_EXAMPLES ?= 50000
FUZZ_SCALE    ?= 10
fuzz: $(DEV)
	HDCONTEXT_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) HDCONTEXT_EXAMPLES_SCALE=$(FUZZ_SCALE) \
	  $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup --progress-by-file \
	  -o console_output_style=classic -p no:cacheprovider

# The VS Code extension (client-extension/): npm packages from the lockfile, then tsc --noEmit
# and the Node tests (pure modules, the real daemon over vscode-jsonrpc, the vscode glue with a
# mocked vscode module). `vsix` packages it with the daemon inside: the hdcontext wheel built from
# this repository (client-extension/bundled/), installed by the extension into an environment of
# its own on first use; `make vsix TARGET=linux-x64` (any `vsce package --target` name) also
# carries the dependency wheels of that platform for CPython 3.11 to 3.14 (pip download, from
# PyPI or pip's configured index), so that first use needs no network. `e2e` runs the package
# for this machine in a real VS Code (code-server 4.139.1, headless chromium): the status bar,
# the chat panel, and first use; `e2e-package` builds it with the wheels of this Python only,
# into client-extension/out/e2e/. Before that, setup.sh installs once what those editor tests
# drive, and says what, how big and where before each install: Debian packages (system-wide,
# apt-get; `e2e-apt`), Node 24 and code-server (~/.cache/hdcontext-e2e, about 800 MB;
# `e2e-editor`). HDC_SKIP_EDITOR_TESTS=1 installs nothing and reports the editor tests as
# skipped. Screenshots and, after a failure, logs: test-artifacts/e2e/, test-artifacts/chat/
# and test-artifacts/first-use/.
EXT       := client-extension
EXT_STAMP := $(EXT)/node_modules/.installed

$(EXT_STAMP): $(EXT)/package.json $(EXT)/package-lock.json
	@echo "setup: the extension's npm packages from the lockfile into $(EXT)/node_modules/ (tsc, esbuild, vsce, playwright-core…; about 180 MB)"
	cd $(EXT) && npm ci --no-audit --no-fund
	touch $(EXT_STAMP)

TARGET      ?=
HOST_TARGET := $(shell node -p 'process.platform + "-" + process.arch' 2>/dev/null)
VSIX_FILE    = hdcontext$(if $(TARGET),-$(TARGET)).vsix
E2E_VSIX    := out/e2e/hdcontext-e2e-$(HOST_TARGET).vsix

vsix: $(STAMP) $(EXT_STAMP)
	cd $(EXT) && node scripts/bundle-daemon.mjs --python ../$(BIN)/python --repo .. --target '$(TARGET)'
	cd $(EXT) && npm run --silent package -- --out $(VSIX_FILE) $(if $(TARGET),--target $(TARGET))
	@echo "built $(EXT)/$(VSIX_FILE) ($$(du -h $(EXT)/$(VSIX_FILE) | cut -f1))"

# What the extension's builds are made of: every file git knows under client-extension/ (tracked,
# or new and not ignored; out/, node_modules/ and bundled/ are ignored), and for the e2e's
# package the daemon's (server/, pyproject.toml) too. A build whose inputs did not change since it
# was made is not made again (`make test` run again: tsc and the package were 8 s and 35 s of CPU,
# the package's beside pytest). Without git, every build is made every time.
GIT_FILES = $(wildcard $(shell git ls-files -co --exclude-standard $(1) 2>/dev/null))
EXT_INPUTS := $(call GIT_FILES,$(EXT))
E2E_INPUTS := $(EXT_INPUTS) $(call GIT_FILES,server pyproject.toml)
NO_GIT      = $(if $(EXT_INPUTS),,FORCE)
EXT_BUILT  := $(EXT)/out/build/.built
E2E_BUILT  := $(EXT)/out/e2e/.built

.PHONY: FORCE
FORCE:

# The extension compiled once (tsc, which type-checks it) for the Node tests and the e2e.
ext-build: $(EXT_BUILT)

$(EXT_BUILT): $(EXT_STAMP) $(EXT_INPUTS) $(NO_GIT)
	@echo "== ext-build ($$(date +%T)): tsc"
	cd $(EXT) && npm run --silent compile
	@touch $@

test-extension: $(STAMP) ext-build
	$(STAGE): the Node tests
	cd $(EXT) && npm run --silent test:built

e2e-apt:
	@$(EXT)/test/e2e/setup.sh apt

e2e-editor:
	@$(EXT)/test/e2e/setup.sh editor

e2e-package: $(E2E_BUILT)

$(E2E_BUILT): $(STAMP) $(EXT_STAMP) $(E2E_INPUTS) $(NO_GIT)
	@echo "== e2e-package ($$(date +%T)): the package for $(HOST_TARGET), CPython $$($(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])') only, and the test extensions"
	@if [ "$$HDC_SKIP_EDITOR_TESTS" != 1 ]; then \
	  cd $(EXT) && node scripts/bundle-daemon.mjs --python ../$(BIN)/python --repo .. --target '$(HOST_TARGET)' \
	    --pythons "$$(../$(BIN)/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
	  && mkdir -p out/e2e && npm run --silent package -- --out $(E2E_VSIX) --target $(HOST_TARGET) \
	  && echo "built $(EXT)/$(E2E_VSIX) ($$(du -h $(E2E_VSIX) | cut -f1))"; fi
	cd $(EXT) && npm run --silent package:fixture >/dev/null
	@if [ "$$HDC_SKIP_EDITOR_TESTS" != 1 ]; then touch $@; fi

e2e: $(STAMP) ext-build e2e-package e2e-apt e2e-editor
	$(STAGE): the package in code-server
	cd $(EXT) && npm run --silent test:e2e:built
	@if [ "$$HDC_SKIP_EDITOR_TESTS" = 1 ]; then echo "e2e: skipped (HDC_SKIP_EDITOR_TESTS=1)"; \
	else echo "e2e screenshots: test-artifacts/e2e/, test-artifacts/chat/, test-artifacts/first-use/"; fi

# Density on every real transcript in ../shared/data/transcripts, then latency, memory and a
# profile of the daemon on the largest one; prints tables and writes bench/results/latest.json
# (git ignores bench/results/: a run measures one machine).
bench: $(DEV)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
