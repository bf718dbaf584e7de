# The two entry points a new machine needs: `make demo` and `make test`.
# Each sets up its own virtual environment (.venv) from the package registries.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# The main job: compact a shipped agent history and print tokens by pass, once as it is and
# once near a small context limit, so that compression runs too.
demo: $(STAMP)
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc
	@echo
	$(BIN)/hdcontext compact examples/session.json --workspace-root /home/user/calc --context-limit 3500

lint: $(STAMP)
	$(BIN)/ruff check server tests
	$(BIN)/ruff format --check server tests

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
