# pimem — every step a fresh machine needs is here (Python venv, Node tools, browsers are installed by
# the scripts under scripts/, into git-ignored caches). `make help` lists the targets.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO := .cache/demo
SAMPLE_ENV := CLAUDE_CONFIG_DIR=$(CURDIR)/samples/history/claude CODEX_HOME=$(CURDIR)/samples/history/codex \
	PI_CODING_AGENT_DIR=$(CURDIR)/samples/history/pi/agent MEMORY_DB_PATH=$(CURDIR)/$(DEMO)/memory.db

.PHONY: help setup demo test test-python test-vscode lint typecheck bench bench-small clean

help:
	@echo "make demo        sync the bundled sample history into $(DEMO)/memory.db and recall from it"
	@echo "make test        every test: Python (importers, recall oracle, sync, LSP, MCP, real Pi, Claude Code, Codex), lint, types, VS Code e2e"
	@echo "make test-python the Python part only"
	@echo "make bench       the performance benchmarks (see docs/benchmarks.md)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	$(SAMPLE_ENV) $(VENV)/bin/pimem sync
	$(SAMPLE_ENV) $(VENV)/bin/pimem recall flamingo cache --limit 3
	$(SAMPLE_ENV) $(VENV)/bin/pimem recall 锁 --limit 2
	$(SAMPLE_ENV) $(VENV)/bin/pimem status

lint: $(STAMP)
	$(VENV)/bin/ruff check server tests bench client-vscode/launcher
	$(VENV)/bin/vulture  # dead code; paths, threshold and whitelist: [tool.vulture] in pyproject.toml

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test-python: $(STAMP)
	scripts/setup-pi.sh
	scripts/setup-agents.sh
	scripts/setup-postgres.sh
	$(PY) -m pytest -q

test-vscode: $(STAMP)
	scripts/setup-vscode-e2e.sh
	cd client-vscode && npm ci --no-audit --no-fund && npm test

test: lint typecheck test-python test-vscode

bench-small: $(STAMP)
	$(PY) bench/run.py --turns 20000 --check-only

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .cache artifacts client-vscode/node_modules client-vscode/dist client-vscode/bundled
