# Two entry points (see README): `make run` serves the product, `make test` checks it.
# Each creates its own virtual environment on first use, pinned by constraints.txt.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export BRAIN_PORT ?= 8000

.PHONY: run test lint typecheck pytest lock clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.run-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install -q -c constraints.txt -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev]"
	touch $@ $(VENV)/.run-installed

# Node tools of the test suite (the MCP conformance suite and the Node 22 it runs on), pinned by package-lock.json.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Debian's Chromium for the dashboard's browser tests (Playwright drives it; it never downloads a browser).
.PHONY: chromium
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# Debian's HAProxy for the cluster test (`brain bench cluster` puts it in front of the web replicas) and
# Podman, which podman-compose needs to read deploy/docker-compose.yml (tests/brain/test_deploy_parsers.py).
.PHONY: cluster-tools
cluster-tools:
	@{ command -v haproxy && command -v podman; } >/dev/null 2>&1 || { apt-get update -qq && \
		apt-get install -y -qq --no-install-recommends haproxy podman >/dev/null; }

run: $(VENV)/.run-installed
	$(BIN)/brain serve

# Tests use their own data dir so they never touch the one `make run` serves.
test: $(VENV)/.dev-installed node_modules/.installed chromium cluster-tools
	$(BIN)/ruff check .
	$(BIN)/mypy .
	BRAIN_DATA_DIR=$${BRAIN_TEST_DATA_DIR:-$(CURDIR)/.brain-data/test} $(BIN)/pytest

lock: $(VENV)/.dev-installed
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:
	rm -rf $(VENV) .brain-data node_modules
