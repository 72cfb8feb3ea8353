# Operator entry points. Each target is idempotent and does its own set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000
# One server worker per core: each is a process with its own GIL (see README, "Scaling").
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)')

.PHONY: setup run test bench lint migrate

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput

# PORT reaches the settings too: unless PUBLIC_URL is set, every printed URL uses it.
run: migrate
	PORT=$(PORT) $(PY) manage.py bootstrap_demo
	PORT=$(PORT) $(VENV)/bin/uvicorn unforgetter.asgi:application --host $(HOST) --port $(PORT) --workers $(WORKERS) --lifespan on --no-proxy-headers --no-access-log

test: setup
	UNFORGETTER_TESTING=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .
	$(VENV)/bin/lint-imports

bench: setup
	$(PY) bench/run.py $(BENCH_ARGS)
